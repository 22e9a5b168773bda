// ControlPlane with executors (docs/design/executors.md): node pools that a backend other than
// gpupool's node agents runs, Slurm first. Each tick reads what the executor last saw (its nodes,
// joined and kept in sync; the attempts it runs, mapped onto the jobs' lives) and, after the
// scheduling cycle, tells it in full what should run on its nodes and which of them operators
// took out of service. The executor does its I/O on a thread of its own; nothing here blocks.
#include <algorithm>

#include "daemon/control_plane.h"
#include "daemon/log.h"

namespace gpupool {

namespace {

// Reasons gpupool gives a node for what its executor's backend says of it start with this, so
// that the node comes back when the backend does, and an operator's cordon is never undone.
constexpr std::string_view kBackendReasonPrefix = "executor ";

bool BackendReason(const Node& n) { return n.condition_reason.rfind(kBackendReasonPrefix, 0) == 0; }

}  // namespace

void ControlPlane::AddExecutor(std::unique_ptr<executor::Executor> e, std::map<std::string, FlavorId> gpu_flavors) {
  ExecutorSlot slot;
  slot.flavors = std::move(gpu_flavors);
  slot.executor = std::move(e);
  executors_.push_back(std::move(slot));
}

std::string ControlPlane::ExecutorOf(const Node& n) const {
  const std::string key = std::string(kExecutorLabel) + "=";
  for (const std::string& l : n.labels) {
    if (l.rfind(key, 0) == 0) return l.substr(key.size());
  }
  return "agent";
}

const ControlPlane::ExecutorSlot* ControlPlane::ExecutorFor(NodeId id) const {
  const std::string name = ExecutorOf(state().node(id));
  for (const ExecutorSlot& s : executors_) {
    if (s.executor->name() == name) return &s;
  }
  return nullptr;
}

Result<FlavorId> ControlPlane::ExecutorFlavor(const ExecutorSlot& slot, const std::string& type) const {
  if (auto f = slot.flavors.find(type); f != slot.flavors.end()) return f->second;
  // Without a mapping: the flavor of that name, or the only one whose name starts with "type-".
  const Catalogue& cat = state().catalogue();
  if (Result<FlavorId> f = cat.Find(type); f.ok()) return f;
  std::optional<FlavorId> found;
  for (size_t i = 0; i < cat.models().size(); ++i) {
    if (type.empty() || cat.models()[i].name.rfind(type + "-", 0) != 0) continue;
    if (found) return NotFound("GPU type '" + type + "' matches several flavors: map it in gpu_flavors");
    found = FlavorId(static_cast<uint16_t>(i));
  }
  if (!found) return NotFound("GPU type '" + type + "' matches no flavor: map it in gpu_flavors");
  return *found;
}

void ControlPlane::ExecutorNodes(ExecutorSlot& slot, const executor::Observation& obs, Time now) {
  const std::string& name = slot.executor->name();
  std::set<std::string> listed;
  for (const executor::NodeInfo& info : obs.nodes) {
    listed.insert(info.name);
    slot.gpu_type[info.name] = info.gpu_type;
    Result<NodeId> id = state().FindNode(info.name);
    if (!id.ok()) {
      if (info.gpus <= 0) continue;  // no GPUs: nothing for gpupool to govern
      Result<FlavorId> flavor = ExecutorFlavor(slot, info.gpu_type);
      if (!flavor.ok()) {
        if (slot.refused.insert(info.name).second) {
          Log("warn", "executor node not imported", {{"executor", name}, {"node", info.name}, {"reason", flavor.error().message}});
        }
        continue;
      }
      Node n;
      n.name = info.name;
      n.flavor = *flavor;
      n.gpus.assign(static_cast<size_t>(info.gpus), Gpu{});
      n.cpu_milli = info.cpu_milli;
      n.memory_mib = info.memory_mib;
      n.labels = info.labels;
      n.labels.push_back(std::string(kExecutorLabel) + "=" + name);
      std::sort(n.labels.begin(), n.labels.end());
      n.labels.erase(std::unique(n.labels.begin(), n.labels.end()), n.labels.end());
      if (Status s = Commit(NodeAdded{n}); !s.ok()) {
        Log("error", "executor node not imported", {{"executor", name}, {"node", info.name}, {"reason", s.error().message}});
        continue;
      }
      Log("info", "executor node imported", {{"executor", name}, {"node", info.name}, {"gpus", std::to_string(info.gpus)},
                                             {"flavor", state().catalogue().model(*flavor).name}});
      id = state().FindNode(info.name);
    }
    const Node& n = state().node(*id);
    if (ExecutorOf(n) != name) {
      if (slot.refused.insert(info.name).second) {
        Log("warn", "executor node not imported",
            {{"executor", name}, {"node", info.name}, {"reason", "a node of that name is run by " + ExecutorOf(n)}});
      }
      continue;
    }
    if (n.condition == NodeCondition::kRetired) continue;
    const std::string prefix = std::string(kBackendReasonPrefix) + name + ": ";
    if (static_cast<int>(n.gpus.size()) != info.gpus) {
      // A node's GPUs are fixed in gpupool's state: out of service until an operator replaces it.
      if (n.condition == NodeCondition::kReady) {
        RequeueNode(*id, NodeCondition::kNotReady, now, RequeueCause::kNodeDrained,
                    prefix + "it reports " + std::to_string(info.gpus) + " GPUs; gpupool knows " +
                        std::to_string(n.gpus.size()));
      }
      continue;
    }
    ForeignGpus(*id, info, prefix, now);
    if (info.unavailable) {
      if (n.condition == NodeCondition::kReady || (BackendReason(n) && n.condition_reason != prefix + info.reason)) {
        Log("warn", "executor took a node out of service", {{"executor", name}, {"node", n.name}, {"reason", info.reason}});
        RequeueNode(*id, NodeCondition::kDraining, now, RequeueCause::kNodeDrained, prefix + info.reason);
      }
    } else if (BackendReason(n) && n.condition != NodeCondition::kReady) {
      Log("info", "executor node back in service", {{"executor", name}, {"node", n.name}});
      GP_CHECK(ApplyAndStage(NodeConditionChanged{*id, NodeCondition::kReady, now, ""}).ok());
    }
  }
  // Nodes that left the backend's pool.
  for (const Node& n : state().nodes()) {
    if (ExecutorOf(n) != name || listed.count(n.name) || n.condition != NodeCondition::kReady) continue;
    RequeueNode(n.id, NodeCondition::kNotReady, now, RequeueCause::kNodeDrained,
                std::string(kBackendReasonPrefix) + name + ": no longer in its pool");
  }
}

// GPUs that jobs outside gpupool hold on an executor's node (Slurm 22.05 cannot reserve
// gres/gpu, so nothing stops them): that many of the node's idle GPUs are taken out of service,
// with the backend's jobs as the reason, and given back when they end. Journaled as GPU health,
// so the scheduler, the calendar and the views all see them as not there.
void ControlPlane::ForeignGpus(NodeId id, const executor::NodeInfo& info, const std::string& prefix, Time now) {
  const std::string held = prefix + "held by ";
  const std::vector<Gpu>& gpus = state().node(id).gpus;
  std::vector<uint16_t> ours;  // GPUs taken out for foreign jobs, low index first
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (!gpus[g].healthy && gpus[g].health_reason.rfind(held, 0) == 0) ours.push_back(static_cast<uint16_t>(g));
  }
  const size_t want = static_cast<size_t>(std::max(0, info.foreign_gpus));
  for (size_t k = want; k < ours.size(); ++k) {  // given back
    GP_CHECK(ApplyAndStage(GpuHealthChanged{id, ours[k], true, now, ""}).ok());
  }
  size_t taken = std::min(want, ours.size());
  for (size_t g = gpus.size(); g-- > 0 && taken < want;) {  // idle GPUs from the top
    const Gpu& gpu = state().node(id).gpus[g];
    if (!gpu.healthy || !gpu.idle()) continue;
    GP_CHECK(ApplyAndStage(GpuHealthChanged{id, static_cast<uint16_t>(g), false, now,
                                            held + info.foreign + " (not submitted by gpupool)"}).ok());
    ++taken;
  }
  if (want != ours.size()) {
    Log(want > ours.size() ? "warn" : "info", "GPUs held outside gpupool",
        {{"node", info.name}, {"gpus", std::to_string(want)}, {"taken_out", std::to_string(taken)},
         {"jobs", info.foreign.empty() ? "none" : info.foreign}});
  }
}

void ControlPlane::ExecutorAttempts(ExecutorSlot& slot, const executor::Observation& obs, Time now) {
  slot.waiting.clear();
  for (const executor::AttemptStatus& st : obs.attempts) {
    const JobId id(st.job);
    const Job* job = state().FindJob(id);
    if (job == nullptr || !HoldsResources(job->state) || job->attempt != st.attempt) continue;  // moved on
    const std::string detail = slot.executor->name() + ": " + st.detail;
    switch (st.state) {
      case executor::RunState::kWaiting:
        slot.waiting[id] = st.detail;
        break;
      case executor::RunState::kRunning:
        for (size_t r = 0; r < job->placement.size(); ++r) {
          if (ExecutorFor(job->placement[r].node) == &slot) started_[id].insert(static_cast<int>(r));
        }
        if (job->state == JobState::kAdmitted) GP_CHECK(ApplyAndStage(JobStarted{id, now}).ok());
        break;
      case executor::RunState::kSucceeded:
        GP_CHECK(ApplyAndStage(JobFinished{id, JobState::kSucceeded, now, detail}).ok());
        break;
      case executor::RunState::kFailed:
        Log("info", "job failed", {{"job", std::to_string(st.job)}, {"reason", detail}});
        GP_CHECK(ApplyAndStage(JobFinished{id, JobState::kFailed, now, detail}).ok());
        break;
      case executor::RunState::kLost:
        Log("warn", "job lost by its executor: requeued", {{"job", std::to_string(st.job)}, {"reason", detail}});
        GP_CHECK(ApplyAndStage(JobLost{id, now, RequeueCause::kNodeLost, detail}).ok());
        break;
    }
  }
}

void ControlPlane::ExecutorsObserve(Time now) {
  for (ExecutorSlot& slot : executors_) {
    executor::Observation obs = slot.executor->Observe();
    if (obs.error != slot.error) {
      if (!obs.error.empty()) {
        Log("warn", "executor round failed", {{"executor", slot.executor->name()}, {"error", obs.error}});
      } else if (!slot.error.empty()) {
        Log("info", "executor reaches its backend again", {{"executor", slot.executor->name()}});
      }
      slot.error = obs.error;
    }
    if (obs.foreign_jobs != slot.foreign_jobs) {
      if (obs.foreign_jobs > 0) {
        Log("warn", "jobs not submitted by gpupool run in an executor's pool",
            {{"executor", slot.executor->name()}, {"jobs", std::to_string(obs.foreign_jobs)},
             {"gpus", std::to_string(obs.foreign_gpus)}});
      }
      slot.foreign_jobs = obs.foreign_jobs;
    }
    if (obs.round == slot.round) continue;  // nothing new since the last tick
    slot.round = obs.round;
    if (obs.round == 0 || (obs.nodes.empty() && !obs.error.empty())) continue;  // a failed round knows nothing
    ExecutorNodes(slot, obs, now);
    ExecutorAttempts(slot, obs, now);
  }
}

void ControlPlane::ExecutorsWant(Time now) {
  for (ExecutorSlot& slot : executors_) {
    if (slot.handed_pruned + Duration::Hours(1) < now) {  // hourly, the map is cut to the accounting window
      slot.handed_pruned = now;
      const executor::Accounting a = slot.executor->Accounted();
      const Time cutoff = a.read_ms != 0 ? Time::FromSeconds(a.from_s) : now - Duration::Hours(24 * 35);
      std::erase_if(slot.handed, [&](const auto& h) { return h.second < cutoff; });
    }
    std::vector<executor::Placement> run;
    for (JobId id : state().active()) {
      const Job& job = *state().FindJob(id);
      executor::Placement p;
      for (const ReplicaPlacement& rp : job.placement) {
        if (ExecutorFor(rp.node) != &slot) continue;
        const std::string& node = state().node(rp.node).name;
        auto share = std::find_if(p.nodes.begin(), p.nodes.end(), [&](const executor::NodeShare& s) { return s.node == node; });
        if (share == p.nodes.end()) share = p.nodes.insert(p.nodes.end(), executor::NodeShare{node, 0, 0});
        share->replicas += 1;
        share->gpus += static_cast<int>(rp.grants.size());
        p.gpu_type = slot.gpu_type[node];
      }
      if (p.nodes.empty()) continue;
      slot.handed[id] = now;
      p.job = id.value();
      p.attempt = job.attempt;
      p.name = job.spec.name;
      p.tenant = state().tenant(job.spec.tenant).name;
      p.command = job.spec.command;
      if (p.command.empty()) p.command = {"true"};
      p.cpu_milli = job.spec.shape.cpu_milli;
      p.memory_mib = job.spec.shape.memory_mib;
      p.grace = state().priority_class(job.spec.priority_class).grace_period;
      p.started = job.state == JobState::kRunning;
      p.env = {{"GPUPOOL_JOB", std::to_string(id.value())},
               {"GPUPOOL_JOB_NAME", job.spec.name},
               {"GPUPOOL_TENANT", p.tenant},
               {"GPUPOOL_REPLICAS", std::to_string(job.spec.replicas)},
               {"GPUPOOL_ATTEMPT", std::to_string(job.attempt)}};
      run.push_back(std::move(p));
    }
    std::map<std::string, std::string> out;
    for (const Node& n : state().nodes()) {
      if (ExecutorFor(n.id) != &slot || BackendReason(n)) continue;
      if (n.condition == NodeCondition::kCordoned || n.condition == NodeCondition::kDraining ||
          n.condition == NodeCondition::kMaintenance) {
        out[n.name] = std::string(NodeConditionName(n.condition)) +
                      (n.condition_reason.empty() ? "" : " (" + n.condition_reason + ")");
      }
    }
    slot.executor->Want(std::move(run), std::move(out));
  }
}

}  // namespace gpupool
