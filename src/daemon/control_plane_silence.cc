// ControlPlane and nodes that fall silent: a node whose agent has not been heard for the heartbeat
// timeout is unreachable, and its jobs are requeued once their replicas are surely fenced
// (docs/design/agent.md, "Owning and fencing replicas").
#include <algorithm>

#include "daemon/control_plane.h"
#include "daemon/log.h"

namespace gpupool {

int ControlPlane::RequeueJobsOn(NodeId id, Time now, RequeueCause cause, const std::string& detail) {
  const std::vector<JobId> on_node = state().node(id).Jobs();  // a copy: JobLost changes the index
  for (JobId jid : on_node) GP_CHECK(ApplyAndStage(JobLost{jid, now, cause, detail}).ok());
  return static_cast<int>(on_node.size());
}

void ControlPlane::RequeueNode(NodeId id, NodeCondition to, Time now, RequeueCause cause, const std::string& detail) {
  if (state().node(id).condition != to) GP_CHECK(ApplyAndStage(NodeConditionChanged{id, to, now, detail}).ok());
  RequeueJobsOn(id, now, cause, detail);
}

Duration ControlPlane::FenceDeadline(NodeId id) const {
  // The agent's lease runs from when it sent its last accepted heartbeat, before the daemon
  // received it; its shims then allow each replica its class's grace before SIGKILL. The margin
  // covers the shims' polling, the kill itself and the two clocks' drift.
  Duration grace = Duration::Seconds(0);
  for (JobId jid : state().node(id).Jobs()) {
    grace = std::max(grace, state().priority_class(state().FindJob(jid)->spec.priority_class).grace_period);
  }
  return heartbeat_timeout_ + grace + FenceMargin();
}

Duration ControlPlane::FenceMargin() const {
  return std::max(Duration::Seconds(1), Duration::Millis(heartbeat_timeout_.millis() / 10));
}

bool ControlPlane::SilentPastFence(NodeId n, Duration grace, Time now) const {
  // FenceDeadline's bound for one grace. A removed node counts from its last heartbeat before the
  // removal (its agent is refused since).
  Time last;
  if (const auto h = heard_.find(n); h != heard_.end()) {
    last = h->second.last_heartbeat;
  } else if (const auto r = removed_heard_.find(n); r != removed_heard_.end()) {
    last = r->second;
  } else {
    return false;  // nothing heard yet: not known to be silent
  }
  return now - last > heartbeat_timeout_ + grace + FenceMargin();
}

void ControlPlane::CheckHeartbeats(Time now) {
  // What a node silent past every class's grace last reported running is surely stopped: it
  // holds no next attempt any more (EarlierAttemptMayRun), and a removed node is forgotten.
  Duration longest;
  for (const PriorityClass& pc : state().priority_classes()) longest = std::max(longest, pc.grace_period);
  for (auto r = removed_heard_.begin(); r != removed_heard_.end();) {
    if (!SilentPastFence(r->first, longest, now)) {
      ++r;
      continue;
    }
    RecordRunning(r->first, {});
    r = removed_heard_.erase(r);
  }
  for (const auto& [id, registered] : js_->agents()) {
    // Known from the journal, not heard since this start: the agent gets a whole timeout from
    // the daemon's first tick.
    const AgentHeard& a = heard_.try_emplace(id, AgentHeard{now, {}}).first->second;
    const Node& n = state().node(id);
    const Duration silent = now - a.last_heartbeat;
    if (silent <= heartbeat_timeout_ || n.condition == NodeCondition::kRetired) continue;
    if (reported_running_.count(id) && SilentPastFence(id, longest, now)) RecordRunning(id, {});
    if (n.condition != NodeCondition::kUnreachable) {
      // Its lease is over: nothing new goes there. What runs there is given away only once
      // the shims have surely stopped it (FenceDeadline).
      Log("warn", "node agent silent: node unreachable",
          {{"node", n.name}, {"silent_ms", std::to_string(silent.millis())}});
      GP_CHECK(ApplyAndStage(NodeConditionChanged{id, NodeCondition::kUnreachable, now,
                                                  "node " + n.name + "'s agent was silent for " + ToString(silent)}).ok());
    }
    if (n.Jobs().empty() || silent <= FenceDeadline(id)) continue;
    Log("warn", "node agent silent past its lease and grace: its jobs requeued",
        {{"node", n.name}, {"silent_ms", std::to_string(silent.millis())}});
    RequeueJobsOn(id, now, RequeueCause::kNodeLost,
                  "node " + n.name + "'s agent was silent for " + ToString(silent) +
                      " (its lease and the replicas' grace have passed)");
  }
}

}  // namespace gpupool
