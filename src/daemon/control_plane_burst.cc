// ControlPlane's burst to on-demand (DESIGN.md §6; docs/design/burst.md): the fleet of on-demand
// nodes, journaled as "burst_request" and "burst_node" records (a node leaves through the
// NodeConditionChanged event to kRetired), and the per-tick loop that carries out PlanBurst's
// decisions through the provider (burst/carry_out.h, shared with the simulator).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "burst/carry_out.h"
#include "daemon/control_plane.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

// What the daemon does at each step of carrying out a burst decision (burst/carry_out.h):
// journals the fleet's changes, logs each, backs off a failing provider.
class ControlPlane::Burst final : public BurstSteps {
 public:
  explicit Burst(ControlPlane& core) : c_(core) {}

  Status Retire(NodeId id, Time now) override {
    // The planner releases idle nodes, and busy ones only when the budget is spent: their jobs
    // go back to the queue (recorded like a node loss, so the cut-short run is not billed).
    const Node& n = c_.state().node(id);
    const std::string name = n.name;
    const bool busy = !n.idle();
    const int requeued = c_.RequeueJobsOn(id, now, RequeueCause::kBudget,
                                          "the on-demand budget is spent: node " + name + " was released");
    if (Status s = c_.ApplyAndStage(NodeConditionChanged{id, NodeCondition::kRetired, now}); !s.ok()) {
      Log("error", "cannot retire on-demand node", {{"node", name}, {"error", s.error().message}});
      return s;
    }
    auto b = std::find_if(c_.js_->fleet().begin(), c_.js_->fleet().end(), [&](const BurstNode& f) { return f.node == id; });
    Log("info", "on-demand node released",
        {{"node", name},
         {"tenant", b == c_.js_->fleet().end() ? "" : c_.state().tenant(b->tenant).name},
         {"why", busy ? "budget spent" : "idle"},
         {"requeued_jobs", std::to_string(requeued)},
         {"cost", b == c_.js_->fleet().end() ? "" : MicrosToDecimal(NodeCostMicros(*b, now))}});
    return Ok();
  }

  bool MayProvision(TenantId tenant, Time now) override {
    auto retry = c_.burst_retry_at_.find(tenant);
    return retry == c_.burst_retry_at_.end() || !(now < retry->second);
  }

  Status Requested(const ProvisionRequest& req, const std::string& rid, Time now) override {
    const int64_t price = c_.burst_offers_.at(req.flavor).micros_per_gpu_hour;
    if (Status s = c_.Commit(BurstRequested{rid, req.tenant, req.flavor, req.gpus_per_node, price, req.for_job, now});
        !s.ok()) {  // the provider's answer, not an invariant of ours
      Log("error", "provider returned an unusable request id", {{"request", rid}, {"error", s.error().message}});
      return s;
    }
    Log("info", "on-demand node requested",
        {{"request", rid}, {"tenant", req.tenant_name}, {"flavor", c_.state().catalogue().model(req.flavor).name},
         {"gpus", std::to_string(req.gpus_per_node)}, {"for_job", std::to_string(req.for_job.value())},
         {"price_per_gpu_hour", MicrosToDecimal(price)}});
    return Ok();
  }

  void ProvisionFailed(TenantId tenant, JobId for_job, const Error& error, Time now) override {
    // Back off: a failing provider is not asked again on every tick. Not journaled: a restart
    // drops every request that did not become a node (Replay), so it agrees.
    c_.burst_retry_at_[tenant] = now + Duration::Seconds(30);
    Log("warn", "on-demand provisioning failed; retrying in 30 s",
        {{"tenant", c_.state().tenant(tenant).name}, {"error", error.message}});
    c_.burst_errors_.emplace_back(for_job, error.message);
  }

  void ReleaseFailed(const std::string& name, const Error& error, Time) override {
    Log("error", "provider failed to release a node: retried every tick", {{"node", name}, {"error", error.message}});
    c_.release_retry_.push_back(name);
  }

  Status Joined(const BurstNode& entry, const Node& node, Time ready, Time now) override {
    GP_RETURN_IF_ERROR(c_.Commit(BurstNodeJoined{entry.request_id, node, ready, now}));
    Log("info", "on-demand node joined", {{"node", node.name}, {"tenant", c_.state().tenant(entry.tenant).name}});
    return Ok();
  }

  void Note(const std::string& what, const std::string& node, const std::string& detail) override {
    Log("warn", what, {{"node", node}, {"detail", detail}});
  }

 private:
  ControlPlane& c_;
};

void ControlPlane::BurstJoin(Time now) {
  Burst steps(*this);
  JoinBurstNodes(*provider_, js_->fleet_upkeep(), burst_offers_, state().catalogue(), steps, now);
}

void ControlPlane::BurstTick(Time now) {
  BurstJoin(now);
  TrackBurstUse(state(), js_->fleet_upkeep(), now);
  // Releases the provider failed before are tried again.
  std::erase_if(release_retry_, [&](const std::string& name) { return provider_->Release(name, now).ok(); });
  BurstDecision d = PlanBurst(state(), burst_policies_, burst_offers_, js_->fleet(), now);
  // The tenant's name is resolved here, on the loop: a provider's thread must not read the state.
  for (ProvisionRequest& req : d.provision) req.tenant_name = state().tenant(req.tenant).name;
  Burst steps(*this);
  CarryOutBurst(d, state(), *provider_, steps, now);
  // A synchronous provider (the simulated one with no delay, or a command provider used
  // directly) may have a node ready now: it joins in this batch, journaled with its request.
  BurstJoin(now);
  // Failed provisionings, from the calls above or reported since the last tick.
  for (const auto& [jid, error] : std::exchange(burst_errors_, {})) {
    const Job* j = state().FindJob(jid);
    if (j && j->state == JobState::kPending) {
      (void)js_->reasons_upkeep().SetPendingReason(jid, {j->reason.code, j->reason.message + "; on-demand capacity: " + error});
    }
  }
  for (const auto& [jid, why] : d.reasons) {
    const Job* j = state().FindJob(jid);
    if (j && j->state == JobState::kPending) {
      (void)js_->reasons_upkeep().SetPendingReason(jid, {j->reason.code, j->reason.message + "; on-demand: " + why});
    }
  }
}

Reply ControlPlane::BurstView(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json nodes = Json::array();
  for (const BurstNode& b : js_->fleet()) {
    if (!c.principal->Sees(b.tenant)) continue;
    Json n = {{"request_id", b.request_id},
              {"tenant", state().tenant(b.tenant).name},
              {"flavor", state().catalogue().model(b.flavor).name},
              {"gpus", b.gpus},
              {"price_per_gpu_hour", MicrosToDecimal(b.micros_per_gpu_hour)},
              {"requested", Rfc3339(b.requested)},
              {"state", b.released ? "released" : b.live() ? "ready" : "provisioning"},
              {"cost", MicrosToDecimal(NodeCostMicros(b, c.now))}};
    if (b.node.valid()) n["node"] = state().node(b.node).name;
    if (b.ready) n["ready"] = Rfc3339(*b.ready);
    if (b.released) n["released"] = Rfc3339(*b.released);
    nodes.push_back(std::move(n));
  }
  Json tenants = Json::array();
  for (const auto& [t, p] : burst_policies_) {
    if (!c.principal->Sees(t)) continue;
    const Time window = BudgetWindowStart(c.now, p.period);
    Json flavors = Json::array();
    for (FlavorId f : p.flavors) flavors.push_back(state().catalogue().model(f).name);
    tenants.push_back({{"tenant", state().tenant(t).name},
                       {"flavors", flavors},
                       {"max_gpus", p.max_gpus},
                       {"budget", MicrosToDecimal(p.budget_micros)},
                       {"window_start", Rfc3339(window)},
                       {"spent", MicrosToDecimal(SpentMicros(js_->fleet(), t, window, c.now))},
                       {"max_wait_s", p.max_wait.seconds()},
                       {"idle_timeout_s", p.idle_timeout.seconds()}});
  }
  return JsonReply(200, {{"enabled", provider_ != nullptr}, {"policies", tenants}, {"nodes", nodes}});
}

}  // namespace gpupool
