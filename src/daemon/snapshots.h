// Snapshotter: when the daemon snapshots its state, and the worker thread that encodes and
// writes each snapshot (docs/design/daemon.md, "Snapshots").
//
// On the loop, after a batch's flushes: once `every_records` records or `every_bytes` bytes were
// appended since the last snapshot, the core's journaled state is copied (in memory; the loop
// pauses for that copy only) and a worker thread encodes the copy and writes it durably. When
// the write is done, the next call on the loop tells the core, whose journal then drops the
// records the snapshot covers: `compact_step_records` of them per call (each step moves their
// history to the history file and deletes them, two short transactions), so that no request
// waits behind the whole compaction (66 ms for 20,000 records in bench/history_bench, and the
// load bench's p99). A stop in the middle leaves the rest to the next snapshot's compaction
// (each step drops every record up to its end; a start skips what its snapshot covers). One snapshot at a time; after a failed write or compaction step (a full
// disk), the next try waits `retry_after`, and the journal keeps every record meanwhile.
//
// Thread-safety: AfterFlush and Finish on the loop thread only; the worker touches nothing but
// its copy and the journal's WriteSnapshot, which is safe beside the loop's calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "daemon/control_plane.h"

namespace gpupool {

struct SnapshotPolicy {
  int64_t every_records = 20'000;    // 0: no snapshots
  uint64_t every_bytes = 64u << 20;  // record bytes; 0: by records only
  std::chrono::milliseconds retry_after{30'000};
  int64_t compact_step_records = 2'000;  // records dropped per loop turn
};

class Snapshotter {
 public:
  explicit Snapshotter(SnapshotPolicy policy) : policy_(policy) {}
  ~Snapshotter();  // waits for a write in progress (its result is dropped; the next start has the journal)
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  // Collects a finished snapshot, then starts the next one if it is due. REQUIRES: nothing
  // staged in `core`.
  void AfterFlush(ControlPlane& core);
  // Waits for a snapshot in progress and collects it (shutdown).
  void Finish(ControlPlane& core);

  int64_t written() const { return written_; }
  int64_t failed() const { return failed_; }
  // Whether records a durable snapshot covers are still in the journal.
  bool compacting() const { return compacted_ < compact_to_; }

 private:
  void Collect(ControlPlane& core, bool wait);
  // One step of the compaction in progress, if any.
  void CompactStep(ControlPlane& core);

  const SnapshotPolicy policy_;
  std::thread worker_;
  std::mutex mu_;
  bool done_ = false;                    // guarded by mu_
  std::optional<Error> error_;           // guarded by mu_: the worker's failure
  int64_t seq_ = 0;                      // of the snapshot in progress
  double encode_s_ = 0, write_s_ = 0;    // guarded by mu_
  size_t bytes_ = 0;                     // guarded by mu_
  std::chrono::steady_clock::time_point copy_start_;
  std::optional<std::chrono::steady_clock::time_point> retry_at_;
  int64_t written_ = 0, failed_ = 0;
  int64_t compacted_ = 0;   // the journal dropped records 1..compacted_ (as far as this process knows)
  int64_t compact_to_ = 0;  // the newest durable snapshot's seq
  int compact_steps_ = 0;   // of the compaction in progress
  double compact_s_ = 0;    // likewise: time on the loop
};

}  // namespace gpupool
