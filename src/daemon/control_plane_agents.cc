// ControlPlane's side of the node-agent protocol (docs/design/agent.md, "Protocol between the
// agent and the daemon"): registration and what the journal keeps of each agent. Heartbeats are
// control_plane_heartbeat.cc, the silence of a node control_plane_silence.cc.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/health.h"
#include "api/agent_protocol.h"
#include "daemon/control_plane.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

void ControlPlane::SetHeartbeat(Duration interval, Duration timeout) {
  heartbeat_interval_ = interval;
  heartbeat_timeout_ = timeout;
}

Status ControlPlane::ReadRegisteredGpus(const GpuModel& model, const std::vector<GpuReport>& gpus, AgentRecorded& agent,
                                        std::vector<Gpu>& built) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuReport& g = gpus[i];
    agent.gpu_uuid.push_back(g.uuid);
    Gpu gpu;
    if (g.mig) {
      gpu.mode = GpuMode::kMig;
      Result<ReportedMig> mig = MigOfReport(model, g, i);
      if (!mig.ok()) return mig.error();
      for (const auto& [start, mig_uuid] : mig->uuid) agent.mig_uuid[{static_cast<int>(i), start}] = mig_uuid;
      agent.mig_layout[static_cast<int>(i)] = mig->layout;
      gpu.layout = mig->layout;
    }
    built.push_back(std::move(gpu));
  }
  return Ok();
}

// A node that registers for the first time joins with what its agent found (an admin's call).
Status ControlPlane::AddRegisteredNode(const CallContext& c, const RegisterRequest& r, FlavorId flavor,
                                       std::vector<Gpu> built) {
  Node n;
  n.name = r.node;
  n.flavor = flavor;
  n.gpus = std::move(built);
  for (const std::string& l : r.labels.value_or(std::vector<std::string>())) {
    if (l.find('=') == std::string::npos) return InvalidArgument("'labels' must be a list of key=value");
    n.labels.push_back(l);
  }
  for (auto [key, v, out] : {std::tuple{"cpu_milli", r.cpu_milli, &n.cpu_milli},
                             std::tuple{"memory_mib", r.memory_mib, &n.memory_mib}}) {
    if (!v) continue;
    if (*v < 0 || *v > (int64_t{1} << 40)) return InvalidArgument(std::string("'") + key + "' out of range");
    *out = *v;
  }
  GP_RETURN_IF_ERROR(Commit(NodeAdded{n}));
  Audit(c, "node.register", r.node);
  return Ok();
}

// A registered node's condition after its acceptance test: unhealthy if it failed, ready if it
// passed after being away; its GPUs back in service when it passed.
Result<NodeCondition> ControlPlane::AfterAcceptance(const CallContext& c, NodeId id, bool passed, const std::string& output) {
  const Node& n = state().node(id);
  NodeCondition to = n.condition;
  if (!passed) {
    to = NodeCondition::kUnhealthy;
    Log("warn", "node failed its acceptance test", {{"node", n.name}, {"output", output}});
  } else if (n.condition == NodeCondition::kUnreachable || n.condition == NodeCondition::kUnhealthy ||
             n.condition == NodeCondition::kNotReady) {
    to = NodeCondition::kReady;  // back, and (where configured) passed its acceptance test again
  }
  if (to != n.condition) {
    const std::string why = passed ? "" : "failed its acceptance test: " + output;
    if (Status s = ApplyAndStage(NodeConditionChanged{id, to, c.now, why}); !s.ok()) return s.error();
  }
  // A node that registers and passes its acceptance test (after a reset or a reboot) has its
  // GPUs back in service.
  for (size_t i = 0; passed && i < state().node(id).gpus.size(); ++i) {
    if (state().node(id).gpus[i].healthy) continue;
    if (Status s = ApplyAndStage(GpuHealthChanged{id, static_cast<uint16_t>(i), true, c.now}); !s.ok()) return s.error();
  }
  return to;
}

// A known node registering again must match what the daemon knows of it: flavor, GPU count and
// each GPU's MIG mode; a retired node is not taken back.
Status ControlPlane::CheckKnownNode(const Node& n, FlavorId flavor, const std::vector<Gpu>& built) const {
  const std::string& name = n.name;
  const GpuModel& model = state().catalogue().model(flavor);
  if (n.flavor != flavor || n.gpus.size() != built.size()) {
    return FailedPrecondition("node " + name + " is known with " + std::to_string(n.gpus.size()) + " x " +
                              state().catalogue().model(n.flavor).name + "; the agent reports " +
                              std::to_string(built.size()) + " x " + model.name);
  }
  for (size_t i = 0; i < built.size(); ++i) {
    const bool mig_here = n.gpus[i].mode == GpuMode::kMig, mig_there = built[i].mode == GpuMode::kMig;
    if (mig_here != mig_there) {
      return FailedPrecondition("node " + name + ": GPU " + std::to_string(i) + " is known " +
                                (mig_here ? "in MIG mode" : "without MIG mode") + "; the agent reports it " +
                                (mig_there ? "in MIG mode" : "without MIG mode") +
                                " (the daemon does not change a GPU's MIG mode)");
    }
  }
  if (n.condition == NodeCondition::kRetired) return FailedPrecondition("node " + name + " is retired");
  return Ok();
}

Principal ControlPlane::CertificatePrincipal(const std::vector<std::string>& names) const {
  auto known = std::find_if(names.begin(), names.end(), [&](const std::string& n) { return state().FindNode(n).ok(); });
  Principal p;
  p.name = known != names.end() ? *known : names.front();
  p.role = Role::kNodeAgent;
  p.token_id = "cert:" + p.name;
  return p;
}

Reply ControlPlane::RegisterAgent(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin() && c.principal->role != Role::kNodeAgent) return Forbidden("register node agents");
  Result<RegisterRequest> req = DecodeRegisterRequest(body);
  if (!req.ok()) return Err(req.error());
  const std::string& name = req->node;
  if (!ValidUtf8(name)) return Err(InvalidArgument("'node' must be a node name"));
  if (!c.principal->ActsForNode(name)) return Forbidden("register node " + name + " (a node agent's token or certificate acts for the node it names)");
  // A node-agent token speaks for a node that exists (declared in the configuration, or
  // registered before by a cluster admin); only a cluster admin may add one, choosing its
  // flavor, size and labels.
  if (!c.principal->admin() && !state().FindNode(name).ok()) {
    return Forbidden("register a new node (" + name + " is not a node of this cluster): a node-agent token may only "
                     "register a node that already exists; a cluster admin must register it first, or declare it in "
                     "the configuration");
  }
  Result<FlavorId> flavor = state().catalogue().Find(req->flavor);
  if (!flavor.ok()) return Err(InvalidArgument("unknown flavor '" + req->flavor + "'"));
  const GpuModel& model = state().catalogue().model(*flavor);
  AgentRecorded agent;
  std::vector<Gpu> built;
  if (Status st = ReadRegisteredGpus(model, req->gpus, agent, built); !st.ok()) return Err(st.error());
  const bool passed = !req->acceptance || req->acceptance->passed;
  const std::string output = req->acceptance ? req->acceptance->output.substr(0, kAgentAcceptanceBytes) : "";
  Result<NodeId> id = state().FindNode(name);
  const bool new_node = !id.ok();
  if (new_node) {
    if (Status st = AddRegisteredNode(c, *req, *flavor, std::move(built)); !st.ok()) return Err(st.error());
    id = state().FindNode(name);
  } else if (Status st = CheckKnownNode(state().node(*id), *flavor, built); !st.ok()) {
    return Err(st.error());
  }
  // What the agent reports of its node (driver, CUDA, GPU product), under kAgentLabelPrefix.
  if (req->reported_labels) {
    std::vector<std::string> now;
    for (const std::string& l : state().node(*id).labels) {
      if (l.rfind(kAgentLabelPrefix, 0) == 0) now.push_back(l);
    }
    if (now != *req->reported_labels) {
      if (Status s = ApplyAndStage(NodeLabelsReported{*id, *req->reported_labels, c.now}); !s.ok()) return Err(s.error());
    }
  }
  Result<NodeCondition> to = AfterAcceptance(c, *id, passed, output);
  if (!to.ok()) return Err(to.error());
  agent.node = *id;
  if (Status s = Commit(agent); !s.ok()) return Err(s.error());
  // A node new to the cluster runs no earlier attempt of anything; a known one has reported what
  // it runs once it has sent a heartbeat since this daemon started (EarlierAttemptMayRun).
  const auto before = heard_.find(*id);
  const bool beat = new_node || (before != heard_.end() && before->second.beat);
  heard_[*id] = AgentHeard{c.now, {}, beat};
  RegisterReply reply;
  reply.node = name;
  reply.condition = std::string(NodeConditionName(*to));
  reply.heartbeat_interval_ms = heartbeat_interval_.millis();
  reply.heartbeat_timeout_ms = heartbeat_timeout_.millis();
  reply.lease_ms = heartbeat_timeout_.millis();
  if (epoch_ > 0) reply.epoch = epoch_;
  return Reply{200, Encode(reply)};
}

}  // namespace gpupool
