// ControlPlane's side of the node agents' heartbeats (docs/design/agent.md, "Protocol between the
// agent and the daemon"): replica states, logs, health events and MIG reports in; replicas to
// start, stop and forget, MIG layouts and the lease out. Registration is control_plane_agents.cc.
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

namespace {

// The replicas of `job` placed on `node`, by replica index.
std::vector<int> ReplicasOn(const Job& job, NodeId node) {
  std::vector<int> out;
  for (size_t r = 0; r < job.placement.size(); ++r) {
    if (job.placement[r].node == node) out.push_back(static_cast<int>(r));
  }
  return out;
}

// The attempt number of a job's current placement: the job's counter, bumped by each admission
// (model/job.h). Admissions are journaled, so it survives a daemon restart, and each requeue
// followed by a new admission gives a higher one, whatever the clock does.
int64_t AttemptOf(const Job& job) { return job.attempt; }

// A job id of the agent protocol: 1..19 decimal digits (the decoder checked them).
JobId JobOf(const std::string& digits) { return JobId(std::stoull(digits)); }

// The MIG instances a heartbeat reports, by GPU index; GPUs reported without MIG are left out.
// Validates everything before anything changes.
Result<std::map<int, ReportedMig>> ReadHeartbeatGpus(const GpuModel& model, size_t gpus,
                                                     const std::vector<GpuReport>& list) {
  std::map<int, ReportedMig> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const GpuReport& g = list[i];
    if (g.index >= static_cast<int64_t>(gpus)) {
      return InvalidArgument("gpus[" + std::to_string(i) + "]: 'index' out of range (the node has " +
                             std::to_string(gpus) + " GPUs)");
    }
    if (!g.mig) continue;
    Result<ReportedMig> mig = MigOfReport(model, g, i);
    if (!mig.ok()) return mig.error();
    out[static_cast<int>(g.index)] = std::move(*mig);
  }
  return out;
}

// Records the layouts and MIG UUIDs the agent reports, and logs each new refusal of a target
// layout once. Returns whether a layout or a UUID changed (what the journal's agent record holds).
bool RecordMig(const std::string& node, std::map<int, ReportedMig> gpus, const std::vector<MigRefusalReport>& errors,
               std::map<std::pair<int, int>, std::string>& mig_uuid, std::map<int, MigLayout>& layouts,
               std::map<int, std::string>& refusals) {
  bool changed = false;
  for (auto& [gpu, mig] : gpus) {
    std::map<std::pair<int, int>, std::string> reported;
    for (const auto& [start, uuid] : mig.uuid) reported[{gpu, start}] = uuid;
    std::map<std::pair<int, int>, std::string> before;
    for (auto it = mig_uuid.lower_bound({gpu, 0}); it != mig_uuid.end() && it->first.first == gpu;) {
      before.insert(*it);
      it = mig_uuid.erase(it);
    }
    mig_uuid.insert(reported.begin(), reported.end());
    auto old = layouts.find(gpu);
    changed = changed || before != reported || old == layouts.end() || !(old->second == mig.layout);
    layouts[gpu] = mig.layout;
  }
  std::map<int, std::string> now;
  for (const MigRefusalReport& e : errors) {
    const int gpu = static_cast<int>(e.gpu);
    const std::string layout = e.layout.substr(0, 256), error = e.error.substr(0, 1024);
    const std::string text = "GPU " + std::to_string(gpu) + " not given MIG layout '" + layout + "': " + error;
    auto old = refusals.find(gpu);
    if (old == refusals.end() || old->second != text) {
      Log("warn", "node agent did not apply a MIG layout",
          {{"node", node}, {"gpu", std::to_string(gpu)}, {"layout", layout}, {"error", error}});
    }
    now[gpu] = text;
  }
  refusals = std::move(now);
  return changed;
}

// The devices of a start from its grants, and its MPS shares; false when a device's UUID is not
// known yet. A MIG grant gets its slice's MIG UUID, never the whole GPU's: a slice the agent has
// reported without a UUID (its compute instance is not there yet) holds the start, as does a
// GPU whose UUID is unknown.
bool StartDevices(const AgentRecorded& a, const std::vector<GpuGrant>& grants, ReplicaStart& entry) {
  for (const GpuGrant& g : grants) {
    std::string device = g.gpu < a.gpu_uuid.size() ? a.gpu_uuid[g.gpu] : "";
    if (g.mig_start >= 0) {
      auto m = a.mig_uuid.find({g.gpu, g.mig_start});
      device = m != a.mig_uuid.end() ? m->second : "";
    }
    if (device.empty()) return false;
    entry.devices.push_back(std::move(device));
    if (g.milli) {
      entry.mps_active_thread_percentage = std::max(1, g.milli / 10);
      if (g.memory_mib) entry.mps_pinned_memory_mib = g.memory_mib;
    }
  }
  return true;
}

}  // namespace

Reply ControlPlane::AgentHeartbeat(const CallContext& c, const std::string& name, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->ActsForNode(name)) return Forbidden("send heartbeats for node " + name);
  Result<NodeId> id = state().FindNode(name);
  if (!id.ok() || js_->agent(*id) == nullptr) {
    return Err(NotFound("node " + name + " is not registered: register again"));
  }
  Result<HeartbeatRequest> hb = DecodeHeartbeatRequest(body);
  if (!hb.ok()) return Err(hb.error());
  const NodeId node = *id;
  const Node& n = state().node(node);
  Result<std::map<int, ReportedMig>> gpus = ReadHeartbeatGpus(state().catalogue().model(n.flavor), n.gpus.size(), hb->gpus);
  if (!gpus.ok()) return Err(gpus.error());
  AgentHeard& heard = heard_[node];
  heard.last_heartbeat = c.now;
  heard.beat = true;
  HeartbeatReply out;
  std::set<std::pair<uint64_t, int>> occupied;
  // Log tails are judged before the replica reports: a replica's final tails come in the
  // heartbeat that reports its exit, and that exit may finish the job, which then holds no
  // placement any more. They are stored only if the heartbeat is accepted.
  std::map<std::pair<JobId, int>, ReplicaLogs> tails = AgentLogs(node, hb->logs);
  // Replica states next: they may end jobs.
  if (Status s = AgentReplicas(c, node, hb->replicas, out.stop, out.forget, occupied); !s.ok()) {
    return Err(s.error());
  }
  for (auto& [key, tail] : tails) logs_[key.first][key.second] = std::move(tail);
  AgentRecorded recorded = *js_->agent(node);
  if (RecordMig(name, std::move(*gpus), hb->mig_errors, recorded.mig_uuid, recorded.mig_layout, heard.mig_error)) {
    (void)Commit(recorded);
  }
  const AgentRecorded& a = *js_->agent(node);
  AgentHealth(c, node, hb->health);
  std::set<int> pending;
  out.mig = MigTargets(node, a, pending);
  std::set<JobId> held;
  for (JobId jid : state().node(node).Jobs()) {
    if (EarlierAttemptMayRun(*state().FindJob(jid), c.now)) held.insert(jid);
  }
  out.start = StartList(node, a, occupied, pending, held);
  // A start handed out counts as running there from now: the agent may start it at once, and
  // its next heartbeat says whether it did (RecordRunning replaces this). Otherwise a drain
  // before that heartbeat could start the next attempt elsewhere beside it.
  for (const ReplicaStart& st : out.start) NoteRunning(node, {JobOf(st.job), static_cast<int>(st.replica)}, st.attempt);
  out.lease_ms = heartbeat_timeout_.millis();
  if (epoch_ > 0) out.epoch = epoch_;
  out.condition = std::string(NodeConditionName(state().node(node).condition));
  return Reply{200, Encode(out)};
}

Status ControlPlane::AgentReplicas(const CallContext& c, NodeId node, const std::vector<ReplicaReport>& reports,
                                   std::vector<ReplicaStop>& stop, std::vector<ReplicaForget>& forget,
                                   std::set<std::pair<uint64_t, int>>& occupied) {
  // Every entry was checked by the decoder before any changes anything: a bad second entry
  // leaves no change of the first one staged behind a 400.
  std::map<std::pair<JobId, int>, int64_t> running_now;  // what this heartbeat says runs here
  for (const ReplicaReport& r : reports) {
    if (r.state == ReplicaRunState::kRunning) running_now[{JobOf(r.job), static_cast<int>(r.replica)}] = r.attempt;
  }
  RecordRunning(node, std::move(running_now));
  for (const ReplicaReport& r : reports) {
    const JobId jid = JobOf(r.job);
    const int ri = static_cast<int>(r.replica);
    const bool running = r.state == ReplicaRunState::kRunning;
    const Job* job = state().FindJob(jid);
    const bool placed = job && HoldsResources(job->state) && ri < static_cast<int>(job->placement.size()) &&
                        job->placement[ri].node == node;
    const bool here = placed && r.attempt == AttemptOf(*job);
    const ReplicaForget key{std::to_string(jid.value()), ri, r.attempt};
    if (!here) {
      // Not this node's work (any more), or an earlier attempt of it: stop it, or forget its
      // exit. A stale replica that still runs keeps the new attempt from starting; a forgotten
      // one does not (the agent applies forgets before starts).
      if (running) {
        const Duration grace = job ? state().priority_class(job->spec.priority_class).grace_period : Duration::Seconds(30);
        stop.push_back(ReplicaStop{key.job, key.replica, key.attempt, Duration::Seconds(grace.seconds())});
        occupied.insert({jid.value(), ri});
      } else {
        forget.push_back(key);
      }
      continue;
    }
    occupied.insert({jid.value(), ri});
    if (running) {
      started_[jid].insert(ri);
      if (job->state == JobState::kAdmitted) GP_CHECK(ApplyAndStage(JobStarted{jid, c.now}).ok());
      continue;
    }
    const bool known = r.exit_code && *r.exit_code >= -1 && *r.exit_code <= 255;  // else a failure of unknown code
    const int64_t code = known ? *r.exit_code : -1;
    const int64_t signal = r.signal.value_or(0);
    forget.push_back(key);
    if (r.fenced) {
      // Its shim stopped it when the agent's lease ran out (or the shim was lost): the node's
      // doing, not the job's. Requeued, as a silent node's jobs are.
      GP_CHECK(ApplyAndStage(JobLost{jid, c.now, RequeueCause::kNodeLost,
                                     "replica " + std::to_string(ri) + " on " + state().node(node).name +
                                         " was stopped when its agent's lease expired"}).ok());
      continue;
    }
    if (!known || code != 0 || signal != 0) {  // one failed replica fails the job; the others are told to stop
      const std::string code_text = known ? std::to_string(code) : std::string("?");
      const std::string why = "replica " + std::to_string(ri) + " on " + state().node(node).name +
                              (signal ? " was killed by signal " + std::to_string(signal) : " exited with code " + code_text);
      GP_CHECK(ApplyAndStage(JobFinished{jid, JobState::kFailed, c.now, why}).ok());
      Log("info", "job failed", {{"job", key.job}, {"replica", std::to_string(ri)},
                                 {"exit_code", code_text}, {"signal", std::to_string(signal)}});
    } else {
      const bool fresh = !js_->Exited(jid, ri);
      const auto done = js_->exits().find(jid);
      const size_t exited = (done == js_->exits().end() ? 0 : done->second.size()) + (fresh ? 1 : 0);
      if (exited == job->placement.size()) {
        GP_CHECK(ApplyAndStage(JobFinished{jid, JobState::kSucceeded, c.now}).ok());
      } else if (fresh) {
        // Durable before the agent is told to forget it (the reply waits for the Flush), so a
        // restarted daemon does not start this replica again.
        (void)Commit(ReplicaExited{jid, r.attempt, ri});
      }
    }
  }
  return Ok();
}

std::map<std::pair<JobId, int>, ControlPlane::ReplicaLogs> ControlPlane::AgentLogs(
    NodeId node, const std::vector<LogTailReport>& logs) const {
  std::map<std::pair<JobId, int>, ReplicaLogs> accepted;
  for (const LogTailReport& l : logs) {
    const JobId jid = JobOf(l.job);
    const Job* job = state().FindJob(jid);
    const int r = static_cast<int>(l.replica);
    // Only the tails of a replica placed on this node now, for the attempt placed now: another
    // node's agent, a job placed elsewhere, an earlier attempt, a finished job or an entry
    // without an attempt changes nothing.
    if (job == nullptr || !HoldsResources(job->state) || r >= static_cast<int>(job->spec.replicas) ||
        r >= static_cast<int>(job->placement.size()) || job->placement[r].node != node || l.attempt != AttemptOf(*job)) {
      continue;
    }
    auto [it, fresh] = accepted.try_emplace({jid, r});
    ReplicaLogs& out = it->second;
    if (fresh) {  // a tail not sent in this heartbeat keeps its stored value
      if (auto stored = logs_.find(jid); stored != logs_.end()) {
        if (auto s = stored->second.find(r); s != stored->second.end()) out = s->second;
      }
    }
    for (auto [text, into] : {std::pair{&l.out, &out.out}, std::pair{&l.err, &out.err}}) {
      if (!*text) continue;
      *into = (*text)->size() > kAgentLogTailBytes ? (*text)->substr((*text)->size() - kAgentLogTailBytes) : **text;
    }
  }
  return accepted;
}

void ControlPlane::AgentHealth(const CallContext& c, NodeId node, const std::vector<HealthReport>& events) {
  // The worst verdict of this heartbeat decides for the node; each GPU with a verdict of drain
  // or worse is marked unhealthy with its own reason (describe node says why).
  HealthVerdict worst;
  std::map<uint16_t, HealthVerdict> by_gpu;
  for (const HealthReport& h : events) {
    HealthEvent e;
    e.gpu = static_cast<uint32_t>(h.gpu);
    const std::string& kind = h.kind;
    if (kind == "xid") {
      e.kind = HealthEventKind::kXid;
      e.value = h.code.value_or(0);
    } else if (kind == "ecc") {
      e.kind = HealthEventKind::kEccUncorrectable;
      e.value = h.count.value_or(1);
    } else if (kind == "row_remap_failure") {
      e.kind = HealthEventKind::kRowRemapFailure;
      e.value = 1;
    } else if (kind == "row_remap_pending") {
      e.kind = HealthEventKind::kRowRemapPending;
      e.value = 1;
    } else if (kind == "gpu_lost") {  // NVML's GPU_IS_LOST, or a GPU the agent no longer sees
      e.kind = HealthEventKind::kGpuLost;
    } else if (kind == "device_lost") {  // a MIG device gone under a replica
      e.kind = HealthEventKind::kDeviceLost;
    } else if (kind == "temperature") {
      e.kind = HealthEventKind::kTemperature;
      e.value = h.celsius.value_or(0);
    } else {
      continue;
    }
    const HealthVerdict v = Classify(e);
    worst = Worse(worst, v);
    if (e.gpu < state().node(node).gpus.size()) by_gpu[static_cast<uint16_t>(e.gpu)] = Worse(by_gpu[static_cast<uint16_t>(e.gpu)], v);
  }
  const std::string& name = state().node(node).name;
  for (const auto& [gpu, v] : by_gpu) {
    const Gpu& g = state().node(node).gpus[gpu];
    if (v.action < HealthAction::kDrain || (!g.healthy && g.health_reason == v.reason)) continue;
    GP_CHECK(ApplyAndStage(GpuHealthChanged{node, gpu, false, c.now,
                                            v.reason + " (" + std::string(HealthActionName(v.action)) + ")"}).ok());
  }
  if (worst.action != HealthAction::kNone) {
    Log(worst.action == HealthAction::kWatch ? "info" : "warn", "GPU health event",
        {{"node", name}, {"action", std::string(HealthActionName(worst.action))}, {"reason", worst.reason}});
  }
  if (worst.action >= HealthAction::kDrain) {
    RequeueNode(node, NodeCondition::kDraining, c.now, RequeueCause::kNodeUnhealthy, "node " + name + ": " + worst.reason);
    Audit(c, "node.drain", name + ": " + worst.reason);
  } else if (worst.action == HealthAction::kCordon && state().node(node).condition == NodeCondition::kReady) {
    GP_CHECK(ApplyAndStage(NodeConditionChanged{node, NodeCondition::kCordoned, c.now, worst.reason}).ok());
  }
}

std::vector<MigTarget> ControlPlane::MigTargets(NodeId node, const AgentRecorded& a, std::set<int>& pending) const {
  const Node& n = state().node(node);
  const GpuModel& model = state().catalogue().model(n.flavor);
  std::vector<MigTarget> out;
  for (size_t i = 0; i < n.gpus.size(); ++i) {
    if (n.gpus[i].mode != GpuMode::kMig) continue;
    auto reported = a.mig_layout.find(static_cast<int>(i));
    if (reported != a.mig_layout.end() && reported->second == n.gpus[i].layout) continue;
    pending.insert(static_cast<int>(i));
    out.push_back(MigTarget{static_cast<int64_t>(i), ToString(model, n.gpus[i].layout)});
  }
  return out;
}

void ControlPlane::RecordRunning(NodeId node, std::map<std::pair<JobId, int>, int64_t> running) {
  std::map<std::pair<JobId, int>, int64_t>& before = reported_running_[node];
  for (const auto& [key, attempt] : before) {
    if (running.count(key)) continue;
    auto it = running_where_.find(key.first);
    if (it == running_where_.end()) continue;
    it->second.erase({node, key.second});
    if (it->second.empty()) running_where_.erase(it);
  }
  for (const auto& [key, attempt] : running) running_where_[key.first][{node, key.second}] = attempt;
  before = std::move(running);
  if (before.empty()) reported_running_.erase(node);
}

void ControlPlane::NoteRunning(NodeId node, std::pair<JobId, int> key, int64_t attempt) {
  reported_running_[node][key] = attempt;
  running_where_[key.first][{node, key.second}] = attempt;
}

std::optional<std::string> ControlPlane::EarlierAttemptMayRun(const Job& job, Time now) {
  const Duration grace = state().priority_class(job.spec.priority_class).grace_period;
  // What a node silent past the bound reported is surely gone (CheckHeartbeats forgets it).
  if (auto it = running_where_.find(job.id); it != running_where_.end()) {
    for (const auto& [where, attempt] : it->second) {
      if (attempt >= job.attempt || SilentPastFence(where.first, grace, now)) continue;
      return "attempt " + std::to_string(attempt) + " of replica " + std::to_string(where.second) + " still runs on " +
             state().node(where.first).name + " (told to stop, within its " + ToString(grace) + " grace)";
    }
  }
  if (job.attempt <= 1) return std::nullopt;
  // After a restart nothing is known of what runs where until each agent known from the journal
  // reports (or is silent past the bound for this job's grace). The set only shrinks.
  if (!unreported_) {
    unreported_.emplace();
    for (const auto& [id, recorded] : js_->agents()) {
      const auto h = heard_.find(id);
      if (h == heard_.end() || !h->second.beat) unreported_->insert(id);
    }
  }
  for (auto n = unreported_->begin(); n != unreported_->end();) {
    const auto h = heard_.find(*n);
    const bool done = (h != heard_.end() && h->second.beat) || js_->agent(*n) == nullptr ||
                      state().node(*n).condition == NodeCondition::kRetired;
    if (done) {
      n = unreported_->erase(n);
      continue;
    }
    if (!SilentPastFence(*n, grace, now)) {
      return "node " + state().node(*n).name + "'s agent has not reported what it runs since the daemon started";
    }
    ++n;
  }
  return std::nullopt;
}

std::optional<std::string> ControlPlane::StartHeldReason(const Job& job, Time now) {
  if (job.state != JobState::kAdmitted || !start_deadline_ || job.placement.empty() ||
      ExecutorFor(job.placement.front().node) != nullptr) {
    return std::nullopt;
  }
  return EarlierAttemptMayRun(job, now);
}

std::vector<ReplicaStart> ControlPlane::StartList(NodeId node, const AgentRecorded& a,
                                                  const std::set<std::pair<uint64_t, int>>& occupied,
                                                  const std::set<int>& pending, const std::set<JobId>& held) const {
  std::vector<ReplicaStart> start;
  for (JobId jid : state().node(node).Jobs()) {
    if (held.count(jid)) continue;
    const Job& job = *state().FindJob(jid);
    for (int r : ReplicasOn(job, node)) {
      if (occupied.count({jid.value(), r})) continue;
      if (auto e = js_->exits().find(jid); e != js_->exits().end() && e->second.count(r)) continue;  // ran, exited 0
      const std::vector<GpuGrant>& grants = job.placement[r].grants;
      // A slice of a layout the agent has not applied yet does not exist on the device: wait.
      if (std::any_of(grants.begin(), grants.end(),
                      [&](const GpuGrant& g) { return g.mig_start >= 0 && pending.count(g.gpu); })) {
        continue;
      }
      ReplicaStart entry;
      entry.job = std::to_string(jid.value());
      entry.replica = r;
      entry.attempt = AttemptOf(job);
      entry.command = job.spec.command;
      entry.tenant = state().tenant(job.spec.tenant).name;
      entry.grace = Duration::Seconds(state().priority_class(job.spec.priority_class).grace_period.seconds());
      if (job.spec.shape.cpu_milli > 0) entry.cpu_milli = job.spec.shape.cpu_milli;
      if (job.spec.shape.memory_mib > 0) entry.memory_mib = job.spec.shape.memory_mib;
      if (!StartDevices(a, grants, entry)) continue;
      entry.env = {{"GPUPOOL_JOB", std::to_string(jid.value())},
                   {"GPUPOOL_JOB_NAME", job.spec.name},
                   {"GPUPOOL_TENANT", entry.tenant},
                   {"GPUPOOL_REPLICAS", std::to_string(job.spec.replicas)},
                   {"GPUPOOL_ATTEMPT", std::to_string(AttemptOf(job))}};
      start.push_back(std::move(entry));
    }
  }
  return start;
}

Reply ControlPlane::JobLogs(const CallContext& c, const std::string& id) {
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
