// DaemonCore's side of the node-agent protocol (docs/design/agent.md, "Protocol between the
// agent and the daemon"): registration, heartbeats that carry replica states, logs and health
// events and answer with replicas to start, stop and forget, and the heartbeat timeout that
// requeues the work of a node that went silent.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "agent/health.h"
#include "daemon/core.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

namespace {

constexpr size_t kMaxTail = 64 * 1024;

// The replicas of `job` placed on `node`, by replica index.
std::vector<int> ReplicasOn(const Job& job, NodeId node) {
  std::vector<int> out;
  for (size_t r = 0; r < job.placement.size(); ++r) {
    if (job.placement[r].node == node) out.push_back(static_cast<int>(r));
  }
  return out;
}

Result<int64_t> IntField(const Json& j, const char* key, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return InvalidArgument(std::string("'") + key + "' must be an integer");
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi) ? hi + 1 : it->get<int64_t>();
  if (v < lo || v > hi) return InvalidArgument(std::string("'") + key + "' out of range");
  return v;
}

// A non-negative integer field, or `def` when absent or of another type (health values are
// advisory: a malformed one is ignored, never thrown on).
uint64_t UintOr(const Json& j, const char* key, uint64_t def) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return def;
  return it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

std::string StrField(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

Result<JobId> JobField(const Json& j) {
  const std::string s = StrField(j, "job");
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("'job' must be a job id such as \"12\"");
  }
  return JobId(std::stoull(s));
}

}  // namespace

void DaemonCore::SetHeartbeat(Duration interval, Duration timeout) {
  heartbeat_interval_ = interval;
  heartbeat_timeout_ = timeout;
}

Reply DaemonCore::RegisterAgent(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("register node agents");
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Err(InvalidArgument("request body must be a JSON object"));
  for (const auto& [k, v] : j.items()) {
    static const std::set<std::string> kKnown = {"node", "flavor", "gpus", "labels", "cpu_milli", "memory_mib", "acceptance"};
    if (!kKnown.count(k)) return Err(InvalidArgument("unknown field '" + k + "'"));
  }
  const std::string name = StrField(j, "node");
  if (name.empty() || name.size() > 63 || !ValidUtf8(name)) return Err(InvalidArgument("'node' must be a node name"));
  Result<FlavorId> flavor = state_->catalogue().Find(StrField(j, "flavor"));
  if (!flavor.ok()) return Err(InvalidArgument("unknown flavor '" + StrField(j, "flavor") + "'"));
  const GpuModel& model = state_->catalogue().model(*flavor);
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array() || gpus->empty() || gpus->size() > 16) {
    return Err(InvalidArgument("'gpus' must list 1 to 16 GPUs"));
  }
  AgentState agent;
  std::vector<Gpu> built;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const Json& g = (*gpus)[i];
    if (!g.is_object()) return Err(InvalidArgument("gpus[" + std::to_string(i) + "] must be an object"));
    const std::string uuid = StrField(g, "uuid");
    if (uuid.empty() || uuid.size() > 128 || !ValidUtf8(uuid)) return Err(InvalidArgument("gpus[" + std::to_string(i) + "]: 'uuid' missing"));
    agent.gpu_uuid.push_back(uuid);
    Gpu gpu;
    if (g.contains("mig") && !g["mig"].is_boolean()) {
      return Err(InvalidArgument("gpus[" + std::to_string(i) + "].mig must be true or false"));
    }
    if (g.contains("mig") && g["mig"].get<bool>()) {
      gpu.mode = GpuMode::kMig;
      std::string layout;
      if (auto inst = g.find("instances"); inst != g.end() && inst->is_array()) {
        for (const Json& in : *inst) {
          if (!in.is_object()) return Err(InvalidArgument("gpus[" + std::to_string(i) + "].instances: objects expected"));
          Result<int64_t> start = IntField(in, "start", 0, 7);
          if (!start.ok()) return Err(InvalidArgument("gpus[" + std::to_string(i) + "].instances: " + start.error().message));
          layout += (layout.empty() ? "" : ",") + StrField(in, "profile") + "@" + std::to_string(*start);
          if (const std::string mig = StrField(in, "uuid"); !mig.empty()) agent.mig_uuid[{i, static_cast<int>(*start)}] = mig;
        }
      }
      Result<MigLayout> l = ParseLayout(model, layout);
      if (!l.ok()) return Err(InvalidArgument("gpus[" + std::to_string(i) + "]: " + l.error().message));
      gpu.layout = *l;
    }
    built.push_back(std::move(gpu));
  }
  bool passed = true;
  std::string output;
  if (auto a = j.find("acceptance"); a != j.end()) {
    if (!a->is_object() || !a->contains("passed") || !(*a)["passed"].is_boolean()) {
      return Err(InvalidArgument("'acceptance' must be {\"passed\": bool, \"output\": text}"));
    }
    passed = (*a)["passed"].get<bool>();
    output = StrField(*a, "output").substr(0, 4096);
  }
  Result<NodeId> id = state_->FindNode(name);
  if (!id.ok()) {
    // A new node joins with what the agent found.
    Node n;
    n.name = name;
    n.flavor = *flavor;
    n.gpus = std::move(built);
    if (auto labels = j.find("labels"); labels != j.end()) {
      if (!labels->is_array()) return Err(InvalidArgument("'labels' must be a list of key=value"));
      for (const Json& l : *labels) {
        if (!l.is_string() || l.get<std::string>().find('=') == std::string::npos) {
          return Err(InvalidArgument("'labels' must be a list of key=value"));
        }
        n.labels.push_back(l.get<std::string>());
      }
    }
    for (const char* key : {"cpu_milli", "memory_mib"}) {
      if (!j.contains(key)) continue;
      Result<int64_t> v = IntField(j, key, 0, int64_t{1} << 40);
      if (!v.ok()) return Err(v.error());
      (std::string(key) == "cpu_milli" ? n.cpu_milli : n.memory_mib) = *v;
    }
    const Record r{0, "node", NodeToJson(*state_, n).dump()};
    if (Status s = ApplyRecord(r); !s.ok()) return Err(s.error());
    (void)Stage(r.kind, r.body);
    id = state_->FindNode(name);
    Audit(c, "node.register", name);
  } else {
    const Node& n = state_->node(*id);
    if (n.flavor != *flavor || n.gpus.size() != built.size()) {
      return Err(FailedPrecondition("node " + name + " is known with " + std::to_string(n.gpus.size()) + " x " +
                                    state_->catalogue().model(n.flavor).name + "; the agent reports " +
                                    std::to_string(built.size()) + " x " + model.name));
    }
    if (n.condition == NodeCondition::kRetired) return Err(FailedPrecondition("node " + name + " is retired"));
  }
  const Node& n = state_->node(*id);
  NodeCondition to = n.condition;
  if (!passed) {
    to = NodeCondition::kUnhealthy;
    Log("warn", "node failed its acceptance test", {{"node", name}, {"output", output}});
  } else if (n.condition == NodeCondition::kUnreachable || n.condition == NodeCondition::kUnhealthy) {
    to = NodeCondition::kReady;  // back, and (where configured) passed its acceptance test again
  }
  if (to != n.condition) {
    if (Status s = ApplyAndStage(NodeConditionChanged{*id, to, c.now}); !s.ok()) return Err(s.error());
  }
  agent.last_heartbeat = c.now;
  agents_[*id] = std::move(agent);
  return JsonReply(200, {{"node", name},
                         {"condition", std::string(NodeConditionName(to))},
                         {"heartbeat_interval_ms", heartbeat_interval_.millis()},
                         {"heartbeat_timeout_ms", heartbeat_timeout_.millis()}});
}

int DaemonCore::RequeueJobsOn(NodeId id, Time now) {
  const std::vector<JobId> on_node = state_->node(id).Jobs();  // a copy: JobLost changes the index
  for (JobId jid : on_node) GP_CHECK(ApplyAndStage(JobLost{jid, now}).ok());
  return static_cast<int>(on_node.size());
}

void DaemonCore::RequeueNode(NodeId id, NodeCondition to, Time now) {
  if (state_->node(id).condition != to) GP_CHECK(ApplyAndStage(NodeConditionChanged{id, to, now}).ok());
  RequeueJobsOn(id, now);
}

Reply DaemonCore::AgentHeartbeat(const CallContext& c, const std::string& name, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("send agent heartbeats");
  Result<NodeId> id = state_->FindNode(name);
  auto agent = id.ok() ? agents_.find(*id) : agents_.end();
  if (agent == agents_.end()) return Err(NotFound("node " + name + " is not registered: register again"));
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Err(InvalidArgument("request body must be a JSON object"));
  for (const char* key : {"replicas", "logs", "health"}) {
    if (j.contains(key) && !j[key].is_array()) return Err(InvalidArgument(std::string("'") + key + "' must be a list"));
  }
  const NodeId node = *id;
  agent->second.last_heartbeat = c.now;
  Json start = Json::array(), stop = Json::array(), forget = Json::array();
  std::set<std::pair<uint64_t, int>> reported;
  // Replica states first: they may end jobs.
  for (const Json& r : j.value("replicas", Json::array())) {
    if (!r.is_object()) return Err(InvalidArgument("replicas: each entry must be an object"));
    Result<JobId> jid = JobField(r);
    if (!jid.ok()) return Err(jid.error());
    Result<int64_t> replica = IntField(r, "replica", 0, 65535);
    if (!replica.ok()) return Err(replica.error());
    const std::string st = StrField(r, "state");
    if (st != "running" && st != "exited") return Err(InvalidArgument("replicas: 'state' must be running or exited"));
    const int ri = static_cast<int>(*replica);
    reported.insert({jid->value(), ri});
    const Job* job = state_->FindJob(*jid);
    const bool here = job && HoldsResources(job->state) && ri < static_cast<int>(job->placement.size()) &&
                      job->placement[ri].node == node;
    const Json key = {{"job", std::to_string(jid->value())}, {"replica", ri}};
    if (!here) {
      // Not this node's work (any more): stop it, or forget its exit.
      if (st == "running") {
        const Duration grace = job ? state_->priority_class(job->spec.priority_class).grace_period : Duration::Seconds(30);
        stop.push_back({{"job", key["job"]}, {"replica", ri}, {"grace_s", grace.seconds()}});
      } else {
        forget.push_back(key);
      }
      continue;
    }
    if (st == "running") {
      if (job->state == JobState::kAdmitted) GP_CHECK(ApplyAndStage(JobStarted{*jid, c.now}).ok());
      continue;
    }
    Result<int64_t> code = IntField(r, "exit_code", -1, 255);
    const int64_t signal = r.contains("signal") && r["signal"].is_number_integer() ? r["signal"].get<int64_t>() : 0;
    const bool ok = code.ok() && *code == 0 && signal == 0;
    forget.push_back(key);
    if (!ok) {  // one failed replica fails the job; the others are told to stop
      GP_CHECK(ApplyAndStage(JobFinished{*jid, JobState::kFailed, c.now}).ok());
      Log("info", "job failed", {{"job", key["job"].get<std::string>()}, {"replica", std::to_string(ri)},
                                 {"exit_code", code.ok() ? std::to_string(*code) : "?"}, {"signal", std::to_string(signal)}});
    } else {
      std::set<int>& done = exits_[*jid];
      done.insert(ri);
      if (done.size() == job->placement.size()) GP_CHECK(ApplyAndStage(JobFinished{*jid, JobState::kSucceeded, c.now}).ok());
    }
  }
  for (const Json& l : j.value("logs", Json::array())) {
    if (!l.is_object()) continue;
    Result<JobId> jid = JobField(l);
    Result<int64_t> replica = IntField(l, "replica", 0, 65535);
    if (!jid.ok() || !replica.ok() || state_->FindJob(*jid) == nullptr) continue;
    ReplicaLogs& logs = logs_[*jid][static_cast<int>(*replica)];
    for (const char* stream : {"stdout", "stderr"}) {
      if (!l.contains(stream) || !l[stream].is_string()) continue;
      std::string text = l[stream].get<std::string>();
      if (text.size() > kMaxTail) text = text.substr(text.size() - kMaxTail);
      (std::string(stream) == "stdout" ? logs.out : logs.err) = std::move(text);
    }
  }
  // Health: the worst verdict of this heartbeat decides.
  HealthVerdict worst;
  for (const Json& h : j.value("health", Json::array())) {
    if (!h.is_object()) continue;
    HealthEvent e;
    Result<int64_t> gpu = IntField(h, "gpu", 0, 15);
    if (!gpu.ok()) continue;
    e.gpu = static_cast<uint32_t>(*gpu);
    const std::string kind = StrField(h, "kind");
    if (kind == "xid") {
      e.kind = HealthEventKind::kXid;
      e.value = UintOr(h, "code", 0);
    } else if (kind == "ecc") {
      e.kind = HealthEventKind::kEccUncorrectable;
      e.value = UintOr(h, "count", 1);
    } else if (kind == "row_remap_failure") {
      e.kind = HealthEventKind::kRowRemapFailure;
      e.value = 1;
    } else if (kind == "temperature") {
      e.kind = HealthEventKind::kTemperature;
      e.value = UintOr(h, "celsius", 0);
    } else {
      continue;
    }
    worst = Worse(worst, Classify(e));
  }
  if (worst.action != HealthAction::kNone) {
    Log(worst.action == HealthAction::kWatch ? "info" : "warn", "GPU health event",
        {{"node", name}, {"action", std::string(HealthActionName(worst.action))}, {"reason", worst.reason}});
  }
  if (worst.action >= HealthAction::kDrain) {
    RequeueNode(node, NodeCondition::kDraining, c.now);
    Audit(c, "node.drain", name + ": " + worst.reason);
  } else if (worst.action == HealthAction::kCordon && state_->node(node).condition == NodeCondition::kReady) {
    GP_CHECK(ApplyAndStage(NodeConditionChanged{node, NodeCondition::kCordoned, c.now}).ok());
  }
  // What this node should run and has not reported.
  const AgentState& a = agent->second;
  for (JobId jid : state_->node(node).Jobs()) {
    const Job& job = *state_->FindJob(jid);
    for (int r : ReplicasOn(job, node)) {
      if (reported.count({jid.value(), r})) continue;
      if (auto e = exits_.find(jid); e != exits_.end() && e->second.count(r)) continue;  // ran, exited 0
      Json devices = Json::array();
      Json entry = {{"job", std::to_string(jid.value())}, {"replica", r}, {"command", job.spec.command}};
      for (const GpuGrant& g : job.placement[r].grants) {
        const std::string gpu = g.gpu < a.gpu_uuid.size() ? a.gpu_uuid[g.gpu] : "";
        if (g.mig_start >= 0) {
          auto m = a.mig_uuid.find({g.gpu, g.mig_start});
          devices.push_back(m != a.mig_uuid.end() ? m->second : gpu);
        } else {
          devices.push_back(gpu);
        }
        if (g.milli) {
          entry["mps_active_thread_percentage"] = std::max(1, g.milli / 10);
          if (g.memory_mib) entry["mps_pinned_memory_mib"] = g.memory_mib;
        }
      }
      entry["devices"] = devices;
      entry["env"] = {{"GPUPOOL_JOB", std::to_string(jid.value())},
                      {"GPUPOOL_JOB_NAME", job.spec.name},
                      {"GPUPOOL_TENANT", state_->tenant(job.spec.tenant).name},
                      {"GPUPOOL_REPLICAS", std::to_string(job.spec.replicas)}};
      start.push_back(std::move(entry));
    }
  }
  return JsonReply(200, {{"start", start},
                         {"stop", stop},
                         {"forget", forget},
                         {"condition", std::string(NodeConditionName(state_->node(node).condition))}});
}

void DaemonCore::CheckHeartbeats(Time now) {
  for (const auto& [id, a] : agents_) {
    const Node& n = state_->node(id);
    if (now - a.last_heartbeat <= heartbeat_timeout_ || n.condition == NodeCondition::kUnreachable ||
        n.condition == NodeCondition::kRetired) {
      continue;
    }
    Log("warn", "node agent silent: node unreachable, its jobs requeued",
        {{"node", n.name}, {"silent_ms", std::to_string((now - a.last_heartbeat).millis())}});
    RequeueNode(id, NodeCondition::kUnreachable, now);
  }
}

Reply DaemonCore::JobLogs(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Job* j = VisibleJob(c, id);
  if (j == nullptr) return Err(NotFound("no job '" + id + "'"));
  Json items = Json::array();
  if (auto it = logs_.find(j->id); it != logs_.end()) {
    for (const auto& [replica, l] : it->second) {
      items.push_back({{"replica", replica}, {"stdout", l.out}, {"stderr", l.err}});
    }
  }
  return JsonReply(200, {{"job", id}, {"items", items}});
}

}  // namespace gpupool
