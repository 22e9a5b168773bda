#include "daemon/loop.h"

#include <chrono>
#include <exception>

#include "api/decode.h"
#include "daemon/log.h"

namespace gpupool {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Time WallNow() {
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
}

Loop::Loop(ControlPlane& core, Metrics& metrics, int tick_ms, bool executor)
    : core_(core), metrics_(metrics), tick_ms_(tick_ms), executor_(executor) {}

void Loop::Post(Work work, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      queue_.push_back({std::move(work), std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  done({503, ErrorBody({ErrorCode::kUnavailable, "shutting down"})});
}

void Loop::Run(const std::atomic<bool>& stop) {
  auto next_tick = std::chrono::steady_clock::now();
  while (true) {
    std::deque<Task> batch;
    bool last = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next_tick, [&] { return !queue_.empty() || stop.load(); });
      batch.swap(queue_);
      if (stop) last = stopped_ = true;
    }
    const Time now = WallNow();
    std::vector<Reply> replies;
    replies.reserve(batch.size());
    // A request is all or nothing: a handler checks every change it makes before the first one
    // applies (as Apply does for an event). One that throws, or refuses after it changed
    // something, is a bug; memory may be half changed, so the batch is abandoned.
    size_t broken = batch.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      const size_t staged = core_.staged();
      try {
        replies.push_back(batch[i].work(core_, now));
        if (replies.back().status >= 400 && core_.staged() != staged && broken == batch.size()) {
          Log("error", "request handler refused after it changed state",
              {{"status", std::to_string(replies.back().status)}, {"body", replies.back().body.substr(0, 200)}});
          broken = i;
        }
      } catch (const std::exception& e) {  // a handler bug must not take the daemon down
        Log("error", "request handler threw", {{"what", e.what()}});
        replies.push_back({500, ErrorBody({ErrorCode::kInternal, "internal error"})});
        if (broken == batch.size()) broken = i;
      }
    }
    if (broken < batch.size()) {
      // None of this batch reaches the journal, memory goes back to what is durable, the broken
      // request keeps its answer (nothing of it was applied) and the others are told to retry.
      core_.Abandon();
      metrics_.ObserveAbandonedBatch();
      for (size_t i = 0; i < replies.size(); ++i) {
        if (i != broken && replies[i].status != 500) {
          replies[i] = {503, ErrorBody({ErrorCode::kUnavailable, "the batch was abandoned; retry"})};
        }
      }
    }
    // The batch's replies go out before a due tick runs: a request never waits for a
    // scheduling cycle it did not need. The tick's own records are a second group commit.
    const Status flushed = FlushTimed();
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].done(flushed.ok() ? std::move(replies[i])
                                 : Reply{503, ErrorBody({ErrorCode::kUnavailable,
                                                         "journal write failed: " + flushed.error().message})});
    }
    const auto start = std::chrono::steady_clock::now();
    if (start >= next_tick) {
      const int64_t cycles = core_.cycles();
      const Time tick_now = WallNow();
      core_.Tick(tick_now, executor_);
      const bool ran = core_.cycles() != cycles;
      metrics_.AfterCycle(core_.state(), tick_now, ran ? &core_.last_plan() : nullptr, SecondsSince(start));
      (void)FlushTimed();
      next_tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(tick_ms_);
    }
    if (snapshots_ && core_.staged() == 0) snapshots_->AfterFlush(core_);
    if (last) break;
  }
  if (snapshots_) snapshots_->Finish(core_);
}

Status Loop::FlushTimed() {
  const size_t records = core_.staged();
  if (records == 0) return Ok();
  const auto flush_start = std::chrono::steady_clock::now();
  const Status flushed = core_.Flush();
  metrics_.ObserveFlush(records, SecondsSince(flush_start), flushed.ok());
  if (!flushed.ok()) Log("error", "journal append failed", {{"error", flushed.error().message}});
  return flushed;
}

}  // namespace gpupool
