#include "burst/carry_out.h"

#include <algorithm>

namespace gpupool {

bool BurstSteps::MayProvision(TenantId, Time) { return true; }
void BurstSteps::Note(const std::string&, const std::string&, const std::string&) {}

void CarryOutBurst(const BurstDecision& d, const State& state, Provider& provider, BurstSteps& steps, Time now) {
  for (NodeId id : d.release) {
    const std::string name = state.node(id).name;  // before it leaves
    if (!steps.Retire(id, now).ok()) continue;
    if (Status s = provider.Release(name, now); !s.ok()) steps.ReleaseFailed(name, s.error(), now);
  }
  for (const ProvisionRequest& req : d.provision) {
    if (!steps.MayProvision(req.tenant, now)) continue;
    for (int i = 0; i < req.nodes; ++i) {
      Result<std::string> rid = provider.Provision(req, i, now);
      if (!rid.ok()) {
        steps.ProvisionFailed(req.tenant, req.for_job, rid.error(), now);
        break;
      }
      if (!steps.Requested(req, *rid, now).ok()) break;
    }
  }
}

int JoinBurstNodes(Provider& provider, std::vector<BurstNode>& fleet, const std::map<FlavorId, OnDemandOffer>& offers,
                   const Catalogue& catalogue, BurstSteps& steps, Time now) {
  const auto entry = [&fleet](const std::string& request_id) {
    return std::find_if(fleet.begin(), fleet.end(), [&](const BurstNode& b) { return b.request_id == request_id; });
  };
  int joined = 0;
  for (const ProvisionedNode& p : provider.Poll(now)) {
    auto it = entry(p.request_id);
    auto offer = offers.find(p.flavor);
    if (it == fleet.end() || it->ready || it->released || offer == offers.end()) {
      steps.Note("on-demand node nobody waits for: giving it back", p.name, "request " + p.request_id);
      (void)provider.Release(p.name, now);
      continue;
    }
    OnDemandOffer as_built = offer->second;
    as_built.gpus_per_node = p.gpus;
    as_built.cpu_milli = p.cpu_milli;
    as_built.memory_mib = p.memory_mib;
    const Node node = MakeBurstNode(catalogue, as_built, it->tenant, p.name);
    if (Status s = steps.Joined(*it, node, std::max(p.ready, it->requested), now); !s.ok()) {
      steps.Note("on-demand node cannot join: giving it back", p.name, s.error().message);
      (void)provider.Release(p.name, now);
      it->released = now;
      continue;
    }
    ++joined;
  }
  // An asynchronous provider reports here what a synchronous one returns from its calls.
  ProviderFailures failed = provider.Failures();
  for (const FailedProvision& f : failed.provisions) {
    auto it = entry(f.request_id);
    if (it == fleet.end() || it->ready || it->released) {
      steps.Note("provider reported a failure for a request nobody waits for", "", f.request_id + ": " + f.error.message);
      continue;
    }
    // The request died: never billed (no ready), no longer capacity in flight.
    it->released = now;
    steps.ProvisionFailed(it->tenant, it->for_job, f.error, now);
  }
  for (const FailedRelease& f : failed.releases) steps.ReleaseFailed(f.node_name, f.error, now);
  return joined;
}

}  // namespace gpupool
