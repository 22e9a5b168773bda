// The daemon's event loop: one thread owns the ControlPlane. Requests come in as work items from
// the HTTP front end's threads; the loop drains its queue, appends everything the batch staged
// to the journal in one transaction (group commit), and only then hands each item its reply;
// then, when one is due, it runs a scheduling tick and commits its records. Nothing here knows
// HTTP.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "daemon/control_plane.h"
#include "daemon/metrics.h"
#include "daemon/snapshots.h"

namespace gpupool {

class Loop {
 public:
  using Work = std::function<Reply(ControlPlane&, Time now)>;
  using Done = std::function<void(Reply)>;  // called on the loop thread once the batch is durable

  // `executor`: run the simulated executor in each tick (demo, --simulate-executor).
  Loop(ControlPlane& core, Metrics& metrics, int tick_ms, bool executor);

  // Queues `work`. Once the loop has stopped, `done` gets a 503 at once, on the caller's thread.
  void Post(Work work, Done done);

  // Snapshots after flushes when due (daemon/snapshots.h); none without this call. Call before Run.
  void SetSnapshots(SnapshotPolicy policy) { snapshots_.emplace(policy); }

  // Runs batches until `stop` is set (checked at least every tick), then answers the last batch
  // and returns. Every Done posted before it returns has been called.
  void Run(const std::atomic<bool>& stop);

 private:
  // Flush with its metrics and a log line on failure; nothing staged: Ok at once.
  Status FlushTimed();

  struct Task {
    Work work;
    Done done;
  };

  ControlPlane& core_;
  Metrics& metrics_;
  const int tick_ms_;
  const bool executor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;  // guarded by mu_
  bool stopped_ = false;    // guarded by mu_
  std::optional<Snapshotter> snapshots_;
};

// Wall-clock now, in the core's Time.
Time WallNow();

}  // namespace gpupool
