// Carrying out burst decisions (PlanBurst, policy/burst/burst.h) through a Provider: the one
// place for the daemon (ControlPlane::BurstTick, journaled) and the simulator (BurstSim, in
// virtual time), issue 16 item 5. The owner keeps the state and the fleet; BurstSteps is what it
// does at each step: the daemon journals, logs and backs off, the simulator applies and counts.
//
// Order within a tick: JoinBurstNodes (what the provider made joins, what it failed at is
// reported), the cycle, then CarryOutBurst (releases first: the planner counts a released node
// as capacity already freed; then provisions, each request until its first failure), then
// JoinBurstNodes again (a synchronous provider's nodes join in the same tick).
//
// Thread-safety: none; the owner's thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "burst/provider.h"
#include "policy/burst/burst.h"

namespace gpupool {

class BurstSteps {
 public:
  virtual ~BurstSteps() = default;
  // The node leaves the cluster: its jobs go back to the queue (JobLost, cause kBudget), it is
  // retired (NodeConditionChanged to kRetired) and its fleet entry is released. An error leaves
  // the node as it was, and it is not given back to the provider.
  virtual Status Retire(NodeId node, Time now) = 0;
  // Whether a request of this tenant may go to the provider now (the daemon backs off after a
  // failure). Default: always.
  virtual bool MayProvision(TenantId tenant, Time now);
  // The provider took a node of `request` as `request_id`: the fleet gains its entry. An error
  // (an id the fleet already has) stops the request.
  virtual Status Requested(const ProvisionRequest& request, const std::string& request_id, Time now) = 0;
  // A provisioning failed, refused by Provision or reported later; the fleet entry (if there
  // was one) is already released.
  virtual void ProvisionFailed(TenantId tenant, JobId for_job, const Error& error, Time now) = 0;
  // The provider failed to give `node_name` back (the owner retries).
  virtual void ReleaseFailed(const std::string& node_name, const Error& error, Time now) = 0;
  // A node the provider made joins the state as `node` (MakeBurstNode, as built), ready (billed)
  // from `ready`; the owner sets the fleet entry's node and ready, and adds no entry (the
  // caller holds a reference into the fleet). An error: the node is given back and the entry
  // released.
  virtual Status Joined(const BurstNode& entry, const Node& node, Time ready, Time now) = 0;
  // Said of a node nobody waits for (given back) or that could not join. Default: nothing.
  virtual void Note(const std::string& what, const std::string& node_name, const std::string& detail);
};

// Releases, then provisions, as `d` says. `d.provision` requests carry what the provider needs
// from the owner's state (ProvisionRequest::tenant_name).
void CarryOutBurst(const BurstDecision& d, const State& state, Provider& provider, BurstSteps& steps, Time now);

// The nodes the provider has ready join (through `steps.Joined`), in its order; one nobody waits
// for (no entry, already ready or released, an unknown offer) is given back. Then what the
// provider reports failed: a provisioning releases its entry, a release goes to the owner.
// Returns the number of nodes that joined.
int JoinBurstNodes(Provider& provider, std::vector<BurstNode>& fleet, const std::map<FlavorId, OnDemandOffer>& offers,
                   const Catalogue& catalogue, BurstSteps& steps, Time now);

}  // namespace gpupool
