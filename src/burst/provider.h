// Providers of on-demand nodes (DESIGN.md §6): what the daemon and the simulator call to carry
// out a BurstDecision (policy/burst/burst.h). The contract, and the JSON a command provider's
// script prints, are in docs/design/burst.md.
//
// Life of a node: Provision(request, i) for i in [0, request.nodes) returns a request id at
// once; a later Poll returns the node, named, when it is ready; the caller adds it to the state
// (MakeBurstNode) and, when the planner says so, calls Release with its name. Time comes in as
// a parameter: providers read no clock for decisions (the command provider measures how long a
// script ran, to enforce its timeout; AsyncProvider how long a call waited in its queue).
//
// Errors: a synchronous provider (SimulatedProvider, CommandProvider) returns them from
// Provision and Release, and its Failures() is always empty. An asynchronous one
// (AsyncProvider) accepts every call at once and reports what failed later, through Failures():
// the caller must handle both.
//
// Thread-safety: none. One owner calls a provider; see each implementation for blocking. The
// request carries what a provider would otherwise read from the caller's state (the tenant's
// name), so that a provider never calls back into it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "core/time.h"
#include "policy/burst/burst.h"

namespace gpupool {

// A node that became ready, as the provider reports it.
struct ProvisionedNode {
  std::string request_id;  // as returned by Provision
  std::string name;        // the node's name in the cluster, unique
  FlavorId flavor;
  int gpus = 0;
  int64_t cpu_milli = 0, memory_mib = 0;  // 0 = not tracked
  Time ready;                             // billing starts here (BurstNode::ready)
  friend bool operator==(const ProvisionedNode&, const ProvisionedNode&) = default;
};

// What an asynchronous provider failed at after its call had returned.
struct FailedProvision {
  std::string request_id;  // as returned by Provision; no node will come for it
  Error error;             // kInvalidArgument, kResourceExhausted or kUnavailable, as Provision's
};
struct FailedRelease {
  std::string node_name;  // as given to Release; the node may still exist (the caller retries)
  Error error;            // kNotFound or kUnavailable, as Release's
};
struct ProviderFailures {
  std::vector<FailedProvision> provisions;  // in the order they failed
  std::vector<FailedRelease> releases;
  bool empty() const { return provisions.empty() && releases.empty(); }
};

class Provider {
 public:
  virtual ~Provider() = default;

  // Asks for node `index` (0 <= index < request.nodes) of the request; returns its request id.
  // Errors: kInvalidArgument (bad request, unknown flavor), kResourceExhausted (no capacity),
  // kUnavailable (the provider failed). Nothing is owed for a failed call.
  virtual Result<std::string> Provision(const ProvisionRequest& request, int index, Time now) = 0;
  // The nodes that became ready since the last Poll, each exactly once, in ready order (then
  // request id).
  virtual std::vector<ProvisionedNode> Poll(Time now) = 0;
  // Gives the node back; billing ends at `now`. kNotFound for a name the provider does not
  // know (where it can tell), kUnavailable when it failed (the caller retries).
  virtual Status Release(const std::string& node_name, Time now) = 0;
  // What failed since the last call, each failure exactly once. A request id returned by
  // Provision comes back exactly once, from Poll (ready) or from here (failed). Synchronous
  // providers return their errors from the calls themselves and have nothing here.
  virtual ProviderFailures Failures() { return {}; }
  // The offers changed (PUT /v1/burst/settings). A provider that reads them (the simulated one:
  // delays and capacity) takes the new ones for what it is asked from now on; one that does not
  // (the command provider: the operator's scripts) ignores them. REQUIRES: valid offers.
  virtual void SetOffers(const std::map<FlavorId, OnDemandOffer>& offers) { (void)offers; }
};

// Checks what every provider accepts: nodes >= 1, 0 <= index < nodes, gpus_per_node in 1..16,
// a valid tenant and a flavor in the catalogue. kInvalidArgument otherwise.
inline Status ValidateProvisionRequest(const ProvisionRequest& request, int index,
                                       const Catalogue& catalogue) {
  if (request.nodes < 1) return InvalidArgument("provision request: nodes must be >= 1");
  if (index < 0 || index >= request.nodes) {
    return InvalidArgument("provision request: node index " + std::to_string(index) +
                           " outside [0, " + std::to_string(request.nodes) + ")");
  }
  if (request.gpus_per_node < 1 || request.gpus_per_node > 16) {
    return InvalidArgument("provision request: gpus_per_node must be 1 to 16");
  }
  if (!request.tenant.valid()) return InvalidArgument("provision request: no tenant");
  if (!request.flavor.valid() || request.flavor.value() >= catalogue.size()) {
    return InvalidArgument("provision request: unknown flavor");
  }
  return Ok();
}

}  // namespace gpupool
