// MigWorker: applies MIG layouts (GpuProbe::ApplyMigLayout) on a thread of its own, so that the
// agent loop keeps heartbeating while GPU and compute instances are destroyed and created: on
// real hardware re-partitioning several GPUs can outlast the daemon's heartbeat timeout.
// Design: docs/design/agent.md ("MIG layouts").
//
// The loop submits a layout and later collects what finished with TakeDone; it never waits for
// an apply. The probe is shared with the loop through `probe_mu`: the worker holds it for each
// whole ApplyMigLayout call (NvmlProbe is not thread-safe) and the Discover right after it, and
// the loop only try-locks it, so it skips a health poll or a rediscovery rather than wait for a
// MIG change. That Discover comes back with the result: the loop learns what the GPU holds now
// together with the end of the apply, even while the worker already holds the probe for the
// next GPU (a rediscovery of its own would then be skipped, and the GPU's state left stale).
//
// Thread-safety: Submit, TakeDone and the destructor are called by one thread (the loop). The
// worker thread touches only the queue and the results (under mu_) and the probe (under
// probe_mu). What the loop knows about which GPUs are being applied is the loop's own state.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/gpu_probe.h"
#include "core/result.h"
#include "model/catalogue.h"
#include "model/mig.h"

namespace gpupool {

class MigWorker {
 public:
  struct Job {
    uint32_t gpu = 0;
    const GpuModel* model = nullptr;  // must outlive the worker (the agent's catalogue)
    MigLayout layout;
    std::string text;  // the layout as the daemon wrote it, for logs and mig_errors
  };
  struct Done {
    uint32_t gpu = 0;
    std::string text;
    Status status;
    // Every GPU as Discover saw it right after the apply, under the same lock.
    Result<std::vector<GpuInfo>> seen = FailedPrecondition("not discovered");
  };

  // The probe and the mutex must outlive the worker. The thread starts with the first Submit.
  MigWorker(GpuProbe& probe, std::mutex& probe_mu);
  // Finishes the apply in progress (MIG calls cannot be cancelled half-way) and drops the rest
  // of the queue.
  ~MigWorker();
  MigWorker(const MigWorker&) = delete;
  MigWorker& operator=(const MigWorker&) = delete;

  // Queues one layout; applies are done one at a time, in submission order.
  void Submit(Job job);
  // The applies finished since the last call, in order.
  std::vector<Done> TakeDone();

 private:
  void Loop();

  GpuProbe& probe_;
  std::mutex& probe_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;   // guarded by mu_
  std::vector<Done> done_;  // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  std::thread thread_;      // started by the first Submit (the loop's thread only)
};

}  // namespace gpupool
