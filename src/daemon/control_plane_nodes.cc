// ControlPlane's node routes: views scoped to the caller, cordon, drain, delete.
#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/page.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendars.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using namespace reply;

}  // namespace

bool ControlPlane::SeesNode(const CallContext& c, const Node& n) const {
  if (c.principal->admin()) return true;
  for (JobId id : n.Jobs()) {
    if (c.principal->Sees(state().FindJob(id)->spec.tenant)) return true;
  }
  return false;
}

Json ControlPlane::NodeView(const CallContext& c, const Node& n, bool detail, bool devices) const {
  const GpuModel& m = state().catalogue().model(n.flavor);
  int whole_free = 0, mig = 0, shared = 0, healthy = 0;
  for (const Gpu& g : n.gpus) {
    healthy += g.healthy;
    if (g.mode == GpuMode::kMig) ++mig;
    if (g.mode == GpuMode::kShared) ++shared;
    if ((g.mode == GpuMode::kWhole || g.dynamic) && g.healthy && g.idle()) ++whole_free;
  }
  Json out = {{"name", n.name},
              {"flavor", m.name},
              {"condition", std::string(NodeConditionName(n.condition))},
              {"gpus", n.gpus.size()},
              {"healthy_gpus", healthy},
              {"mig_gpus", mig},
              {"shared_gpus", shared},
              {"free_whole_gpus", whole_free},
              {"block", n.block},
              {"nvlink_domain", n.nvlink_domain},
              {"labels", n.labels},
              {"executor", ExecutorOf(n)},
              {"dedicated_to", n.dedicated_to.valid() ? Json(state().tenant(n.dedicated_to).name) : Json(nullptr)}};
  if (!n.condition_reason.empty()) out["condition_reason"] = n.condition_reason;
  if (detail) {
    Json jobs = Json::array();
    for (JobId id : n.Jobs()) {
      if (c.principal->Sees(state().FindJob(id)->spec.tenant)) jobs.push_back(std::to_string(id.value()));
    }
    out["jobs"] = jobs;
  }
  if (detail || devices) out["devices"] = DevicesView(c, n);
  return out;
}

Json ControlPlane::OccupantView(const CallContext& c, JobId id) const {
  const Job& j = *state().FindJob(id);
  // Another tenant's work shows as taken, never by whom.
  if (!c.principal->Sees(j.spec.tenant)) return {{"job", nullptr}, {"tenant", nullptr}};
  return {{"job", std::to_string(id.value())}, {"tenant", state().tenant(j.spec.tenant).name}};
}

Json ControlPlane::DevicesView(const CallContext& c, const Node& n) const {
  const GpuModel& m = state().catalogue().model(n.flavor);
  Json devices = Json::array();
  for (size_t i = 0; i < n.gpus.size(); ++i) {
    const Gpu& g = n.gpus[i];
    Json d = {{"index", i}, {"mode", std::string(GpuModeName(g.mode))}, {"healthy", g.healthy}};
    if (g.dynamic) d["dynamic"] = true;  // switches between whole and shared use when idle
    if (!g.healthy && !g.health_reason.empty()) d["health_reason"] = g.health_reason;
    // The node agent's refusal of the MIG layout the scheduler chose (operators only).
    if (auto a = heard_.find(n.id); a != heard_.end() && c.principal->admin()) {
      if (auto e = a->second.mig_error.find(static_cast<int>(i)); e != a->second.mig_error.end()) d["mig_error"] = e->second;
    }
    if (g.mode == GpuMode::kWhole) {
      d["occupant"] = g.occupant.valid() ? OccupantView(c, g.occupant) : Json(nullptr);
    } else if (g.mode == GpuMode::kMig) {
      Json slices = Json::array();
      for (int k = 0; k < g.layout.size(); ++k) {
        const MigInstance& inst = g.layout.at(k);
        const MigProfile& p = m.profiles[inst.profile];
        const JobId occ = g.instance_occupant[static_cast<size_t>(k)];
        slices.push_back({{"profile", p.name}, {"start", inst.start}, {"memory_slices", p.memory_slices},
                          {"occupant", occ.valid() ? OccupantView(c, occ) : Json(nullptr)}});
      }
      d["slices"] = slices;
    } else {
      Json clients = Json::array();
      for (const SharedOccupant& s : g.shared) {
        Json o = OccupantView(c, s.job);
        o["milli"] = s.milli;
        clients.push_back(o);
      }
      d["clients"] = clients;
    }
    devices.push_back(d);
  }
  return devices;
}

Reply ControlPlane::ListNodes(const CallContext& c, bool devices) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const Node& n : state().nodes()) {
    if (!n.removed && SeesNode(c, n)) items.push_back(NodeView(c, n, false, devices));
  }
  return JsonReply(200, {{"items", items}});
}

Reply ControlPlane::GetNode(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state().FindNode(name);
  if (!id.ok() || !SeesNode(c, state().node(*id))) return Err(NotFound("no node '" + name + "'"));
  return JsonReply(200, NodeView(c, state().node(*id), true));
}

Reply ControlPlane::NodeAction(const CallContext& c, const std::string& name, const std::string& action) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state().FindNode(name);
  if (!id.ok() || !SeesNode(c, state().node(*id))) return Err(NotFound("no node '" + name + "'"));
  if (!c.principal->admin()) return Forbidden(action + " nodes");
  if (state().node(*id).condition == NodeCondition::kRetired) {
    return Err(FailedPrecondition("node " + name + " is retired"));
  }
  const NodeCondition to = action == "uncordon" ? NodeCondition::kReady
                           : action == "drain"  ? NodeCondition::kDraining
                                                : NodeCondition::kCordoned;
  if (Status s = ApplyAndStage(NodeConditionChanged{*id, to, c.now}); !s.ok()) return Err(s.error());
  const int requeued =
      action == "drain" ? RequeueJobsOn(*id, c.now, RequeueCause::kNodeDrained, "node " + name + " was drained by " + c.principal->name) : 0;
  Audit(c, "node." + action, name);
  return JsonReply(200, {{"name", name}, {"condition", std::string(NodeConditionName(to))},
                         {"requeued_jobs", requeued}});
}

Reply ControlPlane::DeleteNode(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state().FindNode(name);
  if (!id.ok() || !SeesNode(c, state().node(*id))) return Err(NotFound("no node '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("delete nodes");
  const Node& n = state().node(*id);
  if (n.condition != NodeCondition::kDraining) {
    return Err(FailedPrecondition("node " + name + " is " + std::string(NodeConditionName(n.condition)) +
                                  ": drain it first (gpupool drain " + name + "), then delete it once it is empty"));
  }
  if (const std::vector<JobId> jobs = n.Jobs(); !jobs.empty()) {
    return Err(FailedPrecondition("node " + name + " still holds " + std::to_string(jobs.size()) +
                                  " job(s); delete it once they have left"));
  }
  if (Status s = ApplyAndStage(NodeRemoved{*id, c.now}); !s.ok()) return Err(s.error());
  Audit(c, "node.delete", name);
  return JsonReply(200, {{"name", name}, {"deleted", true}});
}

}  // namespace gpupool
