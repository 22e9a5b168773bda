// ControlPlane's side of the node-agent protocol (docs/design/agent.md, "Protocol between the
// agent and the daemon"): registration and what the journal keeps of each agent. Heartbeats are
// control_plane_heartbeat.cc, the silence of a node control_plane_silence.cc.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/health.h"
#include "daemon/agent_fields.h"
#include "daemon/control_plane.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

using namespace agent_fields;

namespace {

// A registration's reported_labels: at most 16 key=value labels under kAgentLabelPrefix, sorted.
Result<std::vector<std::string>> ReportedLabels(const Json& j) {
  std::vector<std::string> reported;
  if (auto rl = j.find("reported_labels"); rl != j.end()) {
    if (!rl->is_array() || rl->size() > 16) return InvalidArgument("'reported_labels' must list at most 16 key=value");
    for (const Json& l : *rl) {
      const std::string text = l.is_string() ? l.get<std::string>() : "";
      const size_t eq = text.find('=');
      if (text.rfind(kAgentLabelPrefix, 0) != 0 || eq == std::string::npos || text.size() > 320 || !ValidUtf8(text)) {
        return InvalidArgument("'reported_labels' must be key=value labels under " + std::string(kAgentLabelPrefix));
      }
      reported.push_back(text);
    }
    std::sort(reported.begin(), reported.end());
  }
  return reported;
}

}  // namespace

void ControlPlane::SetHeartbeat(Duration interval, Duration timeout) {
  heartbeat_interval_ = interval;
  heartbeat_timeout_ = timeout;
}

Status ControlPlane::ReadRegisteredGpus(const GpuModel& model, const Json& gpus, AgentRecorded& agent,
                                      std::vector<Gpu>& built) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    const Json& g = gpus[i];
    if (!g.is_object()) return InvalidArgument("gpus[" + std::to_string(i) + "] must be an object");
    const std::string uuid = StrField(g, "uuid");
    if (uuid.empty() || uuid.size() > 128 || !ValidUtf8(uuid)) return InvalidArgument("gpus[" + std::to_string(i) + "]: 'uuid' missing");
    agent.gpu_uuid.push_back(uuid);
    Gpu gpu;
    if (g.contains("mig") && !g["mig"].is_boolean()) {
      return InvalidArgument("gpus[" + std::to_string(i) + "].mig must be true or false");
    }
    if (g.contains("mig") && g["mig"].get<bool>()) {
      gpu.mode = GpuMode::kMig;
      Result<ReportedMig> mig = ReadInstances(model, g, i);
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
Status ControlPlane::AddRegisteredNode(const CallContext& c, const Json& j, const std::string& name, FlavorId flavor,
                                     std::vector<Gpu> built) {
  Node n;
  n.name = name;
  n.flavor = flavor;
  n.gpus = std::move(built);
  if (auto labels = j.find("labels"); labels != j.end()) {
    if (!labels->is_array()) return InvalidArgument("'labels' must be a list of key=value");
    for (const Json& l : *labels) {
      if (!l.is_string() || l.get<std::string>().find('=') == std::string::npos) {
        return InvalidArgument("'labels' must be a list of key=value");
      }
      n.labels.push_back(l.get<std::string>());
    }
  }
  for (const char* key : {"cpu_milli", "memory_mib"}) {
    if (!j.contains(key)) continue;
    Result<int64_t> v = IntField(j, key, 0, int64_t{1} << 40);
    if (!v.ok()) return v.error();
    (std::string(key) == "cpu_milli" ? n.cpu_milli : n.memory_mib) = *v;
  }
  GP_RETURN_IF_ERROR(Commit(NodeAdded{n}));
  Audit(c, "node.register", name);
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

Reply ControlPlane::RegisterAgent(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin() && c.principal->role != Role::kNodeAgent) return Forbidden("register node agents");
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Err(InvalidArgument("request body must be a JSON object"));
  for (const auto& [k, v] : j.items()) {
    static const std::set<std::string> kKnown = {"node", "flavor", "gpus", "labels", "reported_labels",
                                                 "cpu_milli", "memory_mib", "acceptance"};
    if (!kKnown.count(k)) return Err(InvalidArgument("unknown field '" + k + "'"));
  }
  const std::string name = StrField(j, "node");
  if (name.empty() || name.size() > 63 || !ValidUtf8(name)) return Err(InvalidArgument("'node' must be a node name"));
  if (!c.principal->ActsForNode(name)) return Forbidden("register node " + name + " (a node-agent token acts for the node of its name)");
  // A node-agent token speaks for a node that exists (declared in the configuration, or
  // registered before by a cluster admin); only a cluster admin may add one, choosing its
  // flavor, size and labels.
  if (!c.principal->admin() && !state().FindNode(name).ok()) {
    return Forbidden("register a new node (" + name + " is not a node of this cluster): a node-agent token may only "
                     "register a node that already exists; a cluster admin must register it first, or declare it in "
                     "the configuration");
  }
  Result<FlavorId> flavor = state().catalogue().Find(StrField(j, "flavor"));
  if (!flavor.ok()) return Err(InvalidArgument("unknown flavor '" + StrField(j, "flavor") + "'"));
  const GpuModel& model = state().catalogue().model(*flavor);
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array() || gpus->empty() || gpus->size() > 16) {
    return Err(InvalidArgument("'gpus' must list 1 to 16 GPUs"));
  }
  AgentRecorded agent;
  std::vector<Gpu> built;
  if (Status st = ReadRegisteredGpus(model, *gpus, agent, built); !st.ok()) return Err(st.error());
  bool passed = true;
  std::string output;
  if (auto a = j.find("acceptance"); a != j.end()) {
    if (!a->is_object() || !a->contains("passed") || !(*a)["passed"].is_boolean()) {
      return Err(InvalidArgument("'acceptance' must be {\"passed\": bool, \"output\": text}"));
    }
    passed = (*a)["passed"].get<bool>();
    output = StrField(*a, "output").substr(0, 4096);
  }
  // What the agent reports of its node (driver, CUDA, GPU product), under kAgentLabelPrefix.
  Result<std::vector<std::string>> reported = ReportedLabels(j);
  if (!reported.ok()) return Err(reported.error());
  Result<NodeId> id = state().FindNode(name);
  if (!id.ok()) {
    if (Status st = AddRegisteredNode(c, j, name, *flavor, std::move(built)); !st.ok()) return Err(st.error());
    id = state().FindNode(name);
  } else if (Status st = CheckKnownNode(state().node(*id), *flavor, built); !st.ok()) {
    return Err(st.error());
  }
  if (j.contains("reported_labels")) {
    std::vector<std::string> now;
    for (const std::string& l : state().node(*id).labels) {
      if (l.rfind(kAgentLabelPrefix, 0) == 0) now.push_back(l);
    }
    if (now != *reported) {
      if (Status s = ApplyAndStage(NodeLabelsReported{*id, *reported, c.now}); !s.ok()) return Err(s.error());
    }
  }
  Result<NodeCondition> to = AfterAcceptance(c, *id, passed, output);
  if (!to.ok()) return Err(to.error());
  agent.node = *id;
  if (Status s = Commit(agent); !s.ok()) return Err(s.error());
  heard_[*id] = AgentHeard{c.now, {}};
  return JsonReply(200, {{"node", name},
                         {"condition", std::string(NodeConditionName(*to))},
                         {"heartbeat_interval_ms", heartbeat_interval_.millis()},
                         {"heartbeat_timeout_ms", heartbeat_timeout_.millis()},
                         {"lease_ms", heartbeat_timeout_.millis()}});
}

}  // namespace gpupool
