// DaemonCore's burst to on-demand (DESIGN.md §6; docs/design/burst.md): the fleet of on-demand
// nodes, journaled as "burst_request" and "burst_node" records (a node leaves through the
// NodeConditionChanged event to kRetired), and the per-tick loop that carries out PlanBurst's
// decisions through the provider.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "daemon/core.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"
#include "store/codec.h"

namespace gpupool {

using namespace reply;

void DaemonCore::BurstJoin(Time now) {
  const Catalogue& cat = state_->catalogue();
  // Nodes the provider has ready join the cluster.
  for (const ProvisionedNode& p : provider_->Poll(now)) {
    auto it = std::find_if(fleet_.begin(), fleet_.end(), [&](const BurstNode& b) { return b.request_id == p.request_id; });
    auto offer = burst_offers_.find(p.flavor);
    if (it == fleet_.end() || it->ready || it->released || offer == burst_offers_.end()) {
      Log("warn", "on-demand node nobody waits for: giving it back", {{"node", p.name}, {"request", p.request_id}});
      (void)provider_->Release(p.name, now);
      continue;
    }
    OnDemandOffer as_built = offer->second;
    as_built.gpus_per_node = p.gpus;
    as_built.cpu_milli = p.cpu_milli;
    as_built.memory_mib = p.memory_mib;
    const Node node = MakeBurstNode(cat, as_built, it->tenant, p.name);
    if (Status s = Commit(BurstNodeJoined{p.request_id, node, std::max(p.ready, it->requested), now}); !s.ok()) {
      Log("error", "on-demand node cannot join: giving it back", {{"node", p.name}, {"error", s.error().message}});
      (void)provider_->Release(p.name, now);
      it->released = now;
      continue;
    }
    Log("info", "on-demand node joined", {{"node", p.name}, {"tenant", state_->tenant(it->tenant).name}});
  }
  // An asynchronous provider (the command provider's scripts on their thread) reports here what
  // a synchronous one returns from its calls.
  ProviderFailures failed = provider_->Failures();
  for (const FailedProvision& f : failed.provisions) {
    auto it = std::find_if(fleet_.begin(), fleet_.end(), [&](const BurstNode& b) { return b.request_id == f.request_id; });
    if (it == fleet_.end() || it->ready || it->released) {
      Log("warn", "provider reported a failure for a request nobody waits for",
          {{"request", f.request_id}, {"error", f.error.message}});
      continue;
    }
    // The request died: never billed (no ready), no longer capacity in flight. Not journaled:
    // a restart drops every request that did not become a node (Replay), so it agrees.
    it->released = now;
    BurstProvisionFailed(it->tenant, it->for_job, f.error, now);
  }
  for (const FailedRelease& f : failed.releases) {
    Log("error", "provider failed to release a node: retried every tick", {{"node", f.node_name}, {"error", f.error.message}});
    release_retry_.push_back(f.node_name);
  }
}

void DaemonCore::BurstProvisionFailed(TenantId tenant, JobId for_job, const Error& error, Time now) {
  // Back off: a failing provider is not asked again on every tick.
  burst_retry_at_[tenant] = now + Duration::Seconds(30);
  Log("warn", "on-demand provisioning failed; retrying in 30 s",
      {{"tenant", state_->tenant(tenant).name}, {"error", error.message}});
  burst_errors_.emplace_back(for_job, error.message);
}

void DaemonCore::BurstProvision(const ProvisionRequest& req, Time now) {
  const Catalogue& cat = state_->catalogue();
  // The tenant's name is resolved here, on the loop: a provider's thread must not read the state.
  ProvisionRequest named = req;
  named.tenant_name = state_->tenant(req.tenant).name;
  for (int i = 0; i < req.nodes; ++i) {
    Result<std::string> rid = provider_->Provision(named, i, now);
    if (!rid.ok()) {
      BurstProvisionFailed(req.tenant, req.for_job, rid.error(), now);
      return;
    }
    const BurstRequested asked{*rid, req.tenant, req.flavor, req.gpus_per_node,
                               burst_offers_.at(req.flavor).micros_per_gpu_hour, req.for_job, now};
    if (Status s = Commit(asked); !s.ok()) {  // the provider's answer, not an invariant of ours
      Log("error", "provider returned an unusable request id", {{"request", *rid}, {"error", s.error().message}});
      return;
    }
    Log("info", "on-demand node requested",
        {{"request", *rid}, {"tenant", named.tenant_name}, {"flavor", cat.model(req.flavor).name},
         {"gpus", std::to_string(req.gpus_per_node)}, {"for_job", std::to_string(req.for_job.value())},
         {"price_per_gpu_hour", MicrosToDecimal(burst_offers_.at(req.flavor).micros_per_gpu_hour)}});
  }
}

void DaemonCore::BurstTick(Time now) {
  BurstJoin(now);
  TrackBurstUse(*state_, fleet_, now);
  // Releases the provider failed before are tried again.
  std::erase_if(release_retry_, [&](const std::string& name) { return provider_->Release(name, now).ok(); });
  const BurstDecision d = PlanBurst(*state_, burst_policies_, burst_offers_, fleet_, now);
  // Releases first: the planner counts released nodes as provider capacity already freed.
  for (NodeId id : d.release) {
    // The planner releases idle nodes, and busy ones only when the budget is spent: their jobs
    // go back to the queue (recorded like a node loss, so the cut-short run is not billed).
    const std::string name = state_->node(id).name;
    const bool busy = std::any_of(state_->node(id).gpus.begin(), state_->node(id).gpus.end(),
                                  [](const Gpu& g) { return !g.idle(); });
    const int requeued = RequeueJobsOn(id, now, RequeueCause::kBudget,
                                       "the on-demand budget is spent: node " + name + " was released");
    if (Status s = ApplyAndStage(NodeConditionChanged{id, NodeCondition::kRetired, now}); !s.ok()) {
      Log("error", "cannot retire on-demand node", {{"node", name}, {"error", s.error().message}});
      continue;
    }
    if (Status s = provider_->Release(name, now); !s.ok()) {
      Log("error", "provider failed to release a node: retried every tick", {{"node", name}, {"error", s.error().message}});
      release_retry_.push_back(name);
    }
    auto b = std::find_if(fleet_.begin(), fleet_.end(), [&](const BurstNode& n) { return n.node == id; });
    Log("info", "on-demand node released",
        {{"node", name},
         {"tenant", b == fleet_.end() ? "" : state_->tenant(b->tenant).name},
         {"why", busy ? "budget spent" : "idle"},
         {"requeued_jobs", std::to_string(requeued)},
         {"cost", b == fleet_.end() ? "" : MicrosToDecimal(NodeCostMicros(*b, now))}});
  }
  for (const ProvisionRequest& req : d.provision) {
    if (auto retry = burst_retry_at_.find(req.tenant); retry != burst_retry_at_.end() && now < retry->second) continue;
    BurstProvision(req, now);
  }
  // A synchronous provider (the simulated one with no delay, or a command provider used
  // directly) may have a node ready now: it joins in this batch, journaled with its request.
  BurstJoin(now);
  // Failed provisionings, from the calls above or reported since the last tick.
  for (const auto& [jid, error] : std::exchange(burst_errors_, {})) {
    const Job* j = state_->FindJob(jid);
    if (j && j->state == JobState::kPending) {
      (void)state_->SetPendingReason(jid, {j->reason.code, j->reason.message + "; on-demand capacity: " + error});
    }
  }
  for (const auto& [jid, why] : d.reasons) {
    const Job* j = state_->FindJob(jid);
    if (j && j->state == JobState::kPending) {
      (void)state_->SetPendingReason(jid, {j->reason.code, j->reason.message + "; on-demand: " + why});
    }
  }
}

Reply DaemonCore::BurstView(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json nodes = Json::array();
  for (const BurstNode& b : fleet_) {
    if (!c.principal->Sees(b.tenant)) continue;
    Json n = {{"request_id", b.request_id},
              {"tenant", state_->tenant(b.tenant).name},
              {"flavor", state_->catalogue().model(b.flavor).name},
              {"gpus", b.gpus},
              {"price_per_gpu_hour", MicrosToDecimal(b.micros_per_gpu_hour)},
              {"requested", Rfc3339(b.requested)},
              {"state", b.released ? "released" : b.live() ? "ready" : "provisioning"},
              {"cost", MicrosToDecimal(NodeCostMicros(b, c.now))}};
    if (b.node.valid()) n["node"] = state_->node(b.node).name;
    if (b.ready) n["ready"] = Rfc3339(*b.ready);
    if (b.released) n["released"] = Rfc3339(*b.released);
    nodes.push_back(std::move(n));
  }
  Json tenants = Json::array();
  for (const auto& [t, p] : burst_policies_) {
    if (!c.principal->Sees(t)) continue;
    const Time window = BudgetWindowStart(c.now, p.period);
    Json flavors = Json::array();
    for (FlavorId f : p.flavors) flavors.push_back(state_->catalogue().model(f).name);
    tenants.push_back({{"tenant", state_->tenant(t).name},
                       {"flavors", flavors},
                       {"max_gpus", p.max_gpus},
                       {"budget", MicrosToDecimal(p.budget_micros)},
                       {"window_start", Rfc3339(window)},
                       {"spent", MicrosToDecimal(SpentMicros(fleet_, t, window, c.now))},
                       {"max_wait_s", p.max_wait.seconds()},
                       {"idle_timeout_s", p.idle_timeout.seconds()}});
  }
  return JsonReply(200, {{"enabled", provider_ != nullptr}, {"policies", tenants}, {"nodes", nodes}});
}

}  // namespace gpupool
