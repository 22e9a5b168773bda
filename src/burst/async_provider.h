// AsyncProvider: runs a blocking Provider (the command provider, whose scripts may run for
// minutes) on one worker thread of its own, so that its owner, the daemon's event loop, never
// waits for it (DESIGN.md §6; docs/design/burst.md, Providers).
//
// Provision queues the inner Provision and returns this provider's request id at once,
// "async-<now in ms>-<sequence>": the ms keep ids unique across restarts (they are journaled),
// as the command provider's are. The id goes to the inner provider as request.request_id, so the
// command provider's scripts see it as GPUPOOL_REQUEST_ID. Release queues the inner Release and
// returns Ok at once. Poll and Failures never block: they hand over what the worker finished
// since the last call: the nodes made, with this provider's request ids, in ready order (then
// request id); the provisions and releases that failed, with the inner provider's errors. Every
// error of the inner provider arrives through Failures, none from the calls.
//
// Invariants:
//   1. The inner provider is used by the worker thread only (after construction), one call at a
//      time, in the order its owner made them (one FIFO queue, SetOffers included).
//   2. Each id Provision returned comes back exactly once: from Poll (made) or Failures
//      (failed), unless the provider is destroyed first (below).
//   3. Nothing the inner provider runs reads its owner's state: what it needs from there comes
//      in the request, filled in on the owner's thread before Provision is called
//      (ProvisionRequest::tenant_name; the command provider has no callback into the daemon).
//
// REQUIRES of the inner provider: synchronous, i.e. a node it made is returned by its Poll right
// after its Provision returned (the command provider's is). A node that does not come is
// reported as a failed provision, so the owner does not wait for it forever.
//
// Time: a call is passed its owner's `now` plus how long it waited in the queue (steady clock),
// so the command provider's `ready` (start + the script's run time) is when the node came up,
// not earlier by the time it queued.
//
// Destruction: no new call starts; queued provisions are dropped (nothing was made for them);
// a running call finishes (a script ends or is killed at its own timeout); then the queued
// releases run, and the nodes made but not yet handed over by Poll are released too, since
// their owner never learns of them (nothing is left running unseen); then the worker is joined.
// So it may block for one script's timeout plus one per queued release.
//
// Thread-safety: one owner calls Provision, Poll, Release, Failures and SetOffers (any one
// thread, as for every Provider); a mutex guards what the owner and the worker share.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "burst/provider.h"

namespace gpupool {

class AsyncProvider final : public Provider {
 public:
  // Starts the worker. REQUIRES: inner is not null and synchronous (above).
  explicit AsyncProvider(std::unique_ptr<Provider> inner);
  ~AsyncProvider() override;
  AsyncProvider(const AsyncProvider&) = delete;
  AsyncProvider& operator=(const AsyncProvider&) = delete;

  // Never fails: request.request_id is replaced by this provider's id.
  Result<std::string> Provision(const ProvisionRequest& request, int index, Time now) override;
  std::vector<ProvisionedNode> Poll(Time now) override;
  // Always Ok; a failure comes from Failures.
  Status Release(const std::string& node_name, Time now) override;
  ProviderFailures Failures() override;
  void SetOffers(const std::map<FlavorId, OnDemandOffer>& offers) override;

  // Calls queued or running (for tests: 0 means everything asked so far has been reported).
  size_t outstanding() const;

 private:
  struct ProvisionCall {
    ProvisionRequest request;  // request_id: ours
    int index = 0;
  };
  struct ReleaseCall {
    std::string node_name;
  };
  struct OffersCall {
    std::map<FlavorId, OnDemandOffer> offers;
  };
  struct Call {
    std::variant<ProvisionCall, ReleaseCall, OffersCall> what;
    Time now;                                      // the owner's
    std::chrono::steady_clock::time_point queued;  // to add the time it waited
  };

  void Queue(Call call);
  void Run();  // the worker
  // One call of the inner provider, on the worker; posts its results.
  void Do(const Call& call);
  void DoProvision(const ProvisionCall& c, Time start);
  // On the worker, after it stopped taking work: the queued releases, then the nodes made
  // that Poll never handed over.
  void ShutDown(std::deque<Call> left);

  std::unique_ptr<Provider> inner_;  // the worker's only (invariant 1)
  uint64_t seq_ = 0;                 // the owner's only
  Time last_start_;                  // the worker's only: when its latest call started

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call> queue_;              // guarded by mu_
  bool running_ = false;                // guarded by mu_: the worker is in a call
  bool stopping_ = false;               // guarded by mu_
  std::vector<ProvisionedNode> ready_;  // guarded by mu_: made, not handed over yet
  ProviderFailures failures_;           // guarded by mu_
  std::thread worker_;                  // last: started once everything above exists
};

}  // namespace gpupool
