// ControlPlane with node agents as the executor (docs/design/agent.md, "Start deadline"): a node
// no agent has registered for is not_ready, so nothing is placed there; a placement its node
// does not start within the start deadline is withdrawn, the job requeued with the node and
// the cause, and the node marked so the scheduler stops choosing it.
#include <algorithm>

#include "daemon/control_plane.h"
#include "daemon/log.h"

namespace gpupool {

void ControlPlane::SetAgentExecutor(Duration start_deadline) {
  GP_CHECK(start_deadline > Duration()) << "the start deadline must be positive";
  start_deadline_ = start_deadline;
}

void ControlPlane::MarkNodesWithoutAgents(Time now) {
  for (const Node& n : state().nodes()) {
    if (n.condition != NodeCondition::kReady || js_->agent(n.id) != nullptr || ExecutorFor(n.id) != nullptr) continue;
    GP_CHECK(ApplyAndStage(NodeConditionChanged{n.id, NodeCondition::kNotReady, now,
                                                "no node agent has registered for it"})
                 .ok());
  }
}

std::string ControlPlane::WhyNotStarted(const Job& job, NodeId node) const {
  const std::string& name = state().node(node).name;
  if (const ExecutorSlot* slot = ExecutorFor(node)) {
    const auto w = slot->waiting.find(job.id);
    return "executor " + slot->executor->name() + " did not start it on " + name + " within " +
           ToString(*start_deadline_) + (w != slot->waiting.end() ? ": " + w->second : "");
  }
  if (js_->agent(node) == nullptr) return "node " + name + " has no agent";
  const auto heard = heard_.find(node);
  for (const ReplicaPlacement& rp : job.placement) {
    if (rp.node != node) continue;
    for (const GpuGrant& g : rp.grants) {
      if (heard == heard_.end()) continue;
      if (auto e = heard->second.mig_error.find(g.gpu); e != heard->second.mig_error.end()) {
        return "MIG layout refused by the agent of node " + name + ": " + e->second;
      }
    }
  }
  return "node " + name + "'s agent did not start it within " + ToString(*start_deadline_);
}

void ControlPlane::CheckStartDeadlines(Time now) {
  // A restarted daemon gives every placement a whole deadline from its first tick: agents
  // report what runs in their next heartbeat.
  if (!deadlines_from_) deadlines_from_ = now;
  std::erase_if(start_held_, [&](const auto& e) {
    const Job* j = state().FindJob(e.first);
    return j == nullptr || !HoldsResources(j->state);
  });
  std::vector<std::pair<JobId, NodeId>> late;
  for (JobId id : state().active()) {
    const Job& j = *state().FindJob(id);
    // A start held back while an earlier attempt may still run (EarlierAttemptMayRun) is not
    // the node's fault: its deadline counts from the last time it was held.
    if (std::optional<std::string> why = StartHeldReason(j, now)) {
      if (auto [it, fresh] = start_held_.try_emplace(id, StartHeld{now, now}); fresh) {
        Log("info", "start held while an earlier attempt may still run", {{"job", std::to_string(id.value())}, {"why", *why}});
      } else {
        it->second.last = now;
        // Held for longer than its grace and a whole start deadline: the old node is not
        // stopping it (a process SIGKILL cannot end, an agent that misreports). Said once.
        const Duration grace = state().priority_class(j.spec.priority_class).grace_period;
        if (!it->second.warned && now - it->second.first > grace + *start_deadline_) {
          it->second.warned = true;
          Log("warn", "start still held: an earlier attempt does not stop", {{"job", std::to_string(id.value())}, {"why", *why}});
        }
      }
      continue;
    }
    const auto held = start_held_.find(id);
    const Time from = std::max({j.admitted, *deadlines_from_, held != start_held_.end() ? held->second.last : Time()});
    if (now - from < *start_deadline_) continue;
    const auto started = started_.find(id);
    const auto exited = js_->exits().find(id);
    for (size_t r = 0; r < j.placement.size(); ++r) {
      const int ri = static_cast<int>(r);
      const bool ran = (started != started_.end() && started->second.count(ri)) ||
                       (exited != js_->exits().end() && exited->second.count(ri));
      if (!ran) {
        late.push_back({id, j.placement[r].node});
        break;
      }
    }
  }
  for (const auto& [id, node] : late) {
    const Job& j = *state().FindJob(id);
    const std::string why = WhyNotStarted(j, node);
    const Node& n = state().node(node);
    Log("warn", "placement not started in time: job requeued, node taken out of scheduling",
        {{"job", std::to_string(id.value())}, {"node", n.name}, {"reason", why}});
    // No agent: not_ready until one registers. An agent that refuses or stalls: cordoned, for an
    // operator to look at (uncordon after the fix).
    const NodeCondition mark = js_->agent(node) != nullptr ? NodeCondition::kCordoned : NodeCondition::kNotReady;
    // An executor's node is not marked: its backend queues behind its own work (a victim in its
    // grace period, a job gpupool did not submit) and says why, and it is the backend's to drain.
    if (n.condition == NodeCondition::kReady && ExecutorFor(node) == nullptr) {
      GP_CHECK(ApplyAndStage(NodeConditionChanged{node, mark, now, why}).ok());
    }
    GP_CHECK(ApplyAndStage(JobLost{id, now, RequeueCause::kStartTimeout, why}).ok());
  }
}

}  // namespace gpupool
