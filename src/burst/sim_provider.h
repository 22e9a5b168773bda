// SimulatedProvider: on-demand nodes in virtual time, for tests, demos and the simulator
// (DESIGN.md §6). Each flavor's offer gives the node size, the provisioning delay and the
// capacity (max_nodes); a node is ready exactly provisioning_delay after Provision's `now`.
// Deterministic: no clock, no randomness; request ids "sim-000001", node names
// "od-<flavor>-0001", both from one sequence in Provision order.
//
// Invariants:
//   1. in_use(f) = requested-but-not-polled + polled-but-not-released nodes of flavor f, and
//      never exceeds offers[f].max_nodes.
//   2. Every request id is returned by Poll exactly once, at the first Poll with now >= ready.
//
// Thread-safety: none; one owner. Nothing blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "burst/provider.h"
#include "model/catalogue.h"

namespace gpupool {

class SimulatedProvider final : public Provider {
 public:
  // REQUIRES: every offer passes ValidateOffer and is keyed by its own flavor.
  SimulatedProvider(const Catalogue& catalogue, std::map<FlavorId, OnDemandOffer> offers);

  // Errors: kInvalidArgument (bad request, no offer for the flavor, gpus_per_node not the
  // offer's), kResourceExhausted (max_nodes of the flavor requested or live).
  Result<std::string> Provision(const ProvisionRequest& request, int index, Time now) override;
  std::vector<ProvisionedNode> Poll(Time now) override;
  // kNotFound for a name that is not a live node of this provider (also one not polled yet).
  Status Release(const std::string& node_name, Time now) override;
  // Requests and live nodes stay; what is asked from now on uses the new offers.
  void SetOffers(const std::map<FlavorId, OnDemandOffer>& offers) override;

  int in_use(FlavorId flavor) const;
  // Names and ids continue after `n` (a restarted daemon whose journal holds n of its nodes).
  void SkipSequence(uint64_t n) { seq_ = std::max(seq_, n); }
  const std::map<FlavorId, OnDemandOffer>& offers() const { return offers_; }

 private:
  struct Requested {
    uint64_t seq = 0;
    Time ready;
    ProvisionedNode node;
  };

  Catalogue catalogue_;
  std::map<FlavorId, OnDemandOffer> offers_;
  uint64_t seq_ = 0;
  std::vector<Requested> requested_;      // not polled yet, in Provision order
  std::map<std::string, FlavorId> live_;  // polled, not released: name -> flavor
  std::map<FlavorId, int> in_use_;
};

}  // namespace gpupool
