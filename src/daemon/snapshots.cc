#include "daemon/snapshots.h"

#include <algorithm>

#include "daemon/log.h"

namespace gpupool {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Snapshotter::~Snapshotter() {
  if (worker_.joinable()) worker_.join();
}

void Snapshotter::AfterFlush(ControlPlane& core) {
  Collect(core, false);
  if (retry_at_ && Clock::now() < *retry_at_) return;
  CompactStep(core);
  if (worker_.joinable() || policy_.every_records <= 0) return;
  const bool due = core.records_since_snapshot() >= policy_.every_records ||
                   (policy_.every_bytes > 0 && core.bytes_since_snapshot() >= policy_.every_bytes);
  if (!due || core.records_since_snapshot() == 0) return;
  copy_start_ = Clock::now();
  std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core.CopyForSnapshot();
  const double copy_s = Seconds(Clock::now() - copy_start_);
  seq_ = ControlPlane::SnapshotSeq(*copy);
  done_ = false;
  Journal& journal = core.journal();
  Log("info", "snapshot started", {{"seq", std::to_string(seq_)}, {"copy_s", std::to_string(copy_s)}});
  worker_ = std::thread([this, copy = std::move(copy), &journal] {
    const auto t0 = Clock::now();
    const Snapshot s = ControlPlane::EncodeSnapshot(*copy);
    const auto t1 = Clock::now();
    const Status written = journal.WriteSnapshot(s);
    std::lock_guard<std::mutex> lock(mu_);
    encode_s_ = Seconds(t1 - t0);
    write_s_ = Seconds(Clock::now() - t1);
    bytes_ = s.body.size();
    if (!written.ok()) error_ = written.error();
    done_ = true;
  });
}

void Snapshotter::Finish(ControlPlane& core) { Collect(core, true); }

void Snapshotter::Collect(ControlPlane& core, bool wait) {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_ && !wait) return;
  }
  worker_.join();
  std::optional<Error> error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    error.swap(error_);
  }
  if (error) {
    ++failed_;
    retry_at_ = Clock::now() + policy_.retry_after;
    Log("error", "snapshot failed; the journal keeps every record until one succeeds",
        {{"seq", std::to_string(seq_)}, {"error", error->message}});
    return;
  }
  // What the journal holds of records before the previous snapshot is already gone, or goes with
  // this compaction's first step (each step drops every record up to its end).
  if (!compacting()) compacted_ = std::max(compacted_, core.snapshot_seq());
  core.SnapshotDurable(seq_);
  compact_to_ = seq_;
  compact_steps_ = 0;
  compact_s_ = 0;
  ++written_;
  retry_at_.reset();
  Log("info", "snapshot written",
      {{"seq", std::to_string(seq_)}, {"bytes", std::to_string(bytes_)}, {"encode_s", std::to_string(encode_s_)},
       {"write_s", std::to_string(write_s_)}, {"total_s", std::to_string(Seconds(Clock::now() - copy_start_))}});
}

void Snapshotter::CompactStep(ControlPlane& core) {
  if (!compacting()) return;
  const int64_t to = std::min(compact_to_, compacted_ + std::max<int64_t>(1, policy_.compact_step_records));
  const auto t0 = Clock::now();
  const Status s = core.CompactThrough(to);
  compact_s_ += Seconds(Clock::now() - t0);
  ++compact_steps_;
  if (!s.ok()) {
    ++failed_;
    retry_at_ = Clock::now() + policy_.retry_after;
    Log("error", "compaction failed; the journal keeps the records until a step succeeds",
        {{"through", std::to_string(to)}, {"error", s.error().message}});
    return;
  }
  compacted_ = to;
  if (!compacting()) {
    Log("info", "journal compacted",
        {{"through", std::to_string(compacted_)}, {"steps", std::to_string(compact_steps_)},
         {"loop_s", std::to_string(compact_s_)}});
  }
}

}  // namespace gpupool
