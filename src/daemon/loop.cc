#include "daemon/loop.h"

#include <algorithm>
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

void Loop::Post(Work work, Done done, bool read) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      queue_.push_back({std::move(work), std::move(done), read});
      cv_.notify_one();
      return;
    }
  }
  done({503, ErrorBody({ErrorCode::kUnavailable, "shutting down"})});
}

void Loop::SetReplica(ReplicaOptions options) {
  replica_ = std::move(options);
  SetRole({.replica = true, .leader = false, .seq = core_.journal().last_seq()});
}

ReplicaRole Loop::role() const {
  std::lock_guard<std::mutex> lock(role_mu_);
  return role_;
}

void Loop::SetRole(const ReplicaRole& r) {
  std::lock_guard<std::mutex> lock(role_mu_);
  role_ = r;
}

void Loop::Run(const std::atomic<bool>& stop) {
  auto next_tick = Clock::now();
  while (true) {
    std::deque<Task> batch;
    bool last = false;
    {
      auto wake = next_tick;
      if (replica_) wake = std::min({wake, next_campaign_, leading_ ? lease_deadline_ : next_catch_up_});
      if (core_.stale()) wake = std::min(wake, next_reload_);
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, wake, [&] { return !queue_.empty() || stop.load(); });
      batch.swap(queue_);
      if (stop) last = stopped_ = true;
    }
    Upkeep(Clock::now());
    if (!ended_.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      last = stopped_ = true;
    }
    std::vector<Reply> replies = Answer(batch);
    // The batch's replies go out before a due tick runs: a request never waits for a
    // scheduling cycle it did not need. The tick's own records are a second group commit.
    const Status flushed = FlushTimed();
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].done(flushed.ok() ? std::move(replies[i])
                                 : Reply{503, ErrorBody({ErrorCode::kUnavailable,
                                                         "journal write failed: " + flushed.error().message})});
    }
    const auto start = Clock::now();
    if (start >= next_tick) {
      if (leading() && !core_.stale()) {
        const int64_t cycles = core_.cycles();
        const Time tick_now = WallNow();
        core_.Tick(tick_now, executor_);
        const bool ran = core_.cycles() != cycles;
        metrics_.AfterCycle(core_.state(), tick_now, ran ? &core_.last_plan() : nullptr, SecondsSince(start));
        (void)FlushTimed();
      } else {
        metrics_.AfterCycle(core_.state(), WallNow(), nullptr, 0);
      }
      next_tick = Clock::now() + std::chrono::milliseconds(tick_ms_);
    }
    if (snapshots_ && leading() && !core_.stale() && core_.staged() == 0) snapshots_->AfterFlush(core_);
    if (last) break;
  }
  if (snapshots_ && leading() && !core_.stale()) snapshots_->Finish(core_);
}

std::vector<Reply> Loop::Answer(std::deque<Task>& batch) {
  const bool lead = leading() && !core_.stale();
  const Time now = WallNow();
  std::vector<Reply> replies;
  replies.reserve(batch.size());
  // A request is all or nothing: a handler checks every change it makes before the first one
  // applies (as Apply does for an event). One that throws, or refuses after it changed
  // something, is a bug; memory may be half changed, so the batch is abandoned.
  size_t broken = batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (core_.stale()) {  // memory may be ahead of the store: nothing is served from it
      replies.push_back({503, ErrorBody({ErrorCode::kUnavailable, "the store cannot be read; retry"})});
      continue;
    }
    if (!lead && !batch[i].read) {  // raced a change of leader: the front end redirects the next one
      const ReplicaRole r = role();
      replies.push_back({503, ErrorBody({ErrorCode::kUnavailable,
                                         "this replica does not lead" +
                                             (r.leader_url.empty() ? std::string("; retry") : "; the leader is " + r.leader_url)})});
      continue;
    }
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
  if (!lead && broken == batch.size() && core_.staged() > 0) {  // a bug: reads never stage
    Log("error", "a read changed state on a replica that does not lead", {{"records", std::to_string(core_.staged())}});
    core_.Abandon();
    for (Reply& r : replies) r = {503, ErrorBody({ErrorCode::kUnavailable, "this replica does not lead; retry"})};
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
  return replies;
}

void Loop::Upkeep(Clock::time_point now) {
  if (core_.stale() && now >= next_reload_) {
    next_reload_ = now + std::chrono::milliseconds(500);
    if (Status s = core_.Reload(); s.ok()) {
      Log("info", "the store is readable again; serving");
    }
  }
  if (!replica_) return;
  if (now >= next_campaign_) Campaign(now);
  if (leading_ && role_seq_ != core_.journal().last_seq()) {
    role_seq_ = core_.journal().last_seq();
    ReplicaRole r = role();
    r.seq = role_seq_;
    SetRole(r);
  }
  if (leading_ && Clock::now() >= lease_deadline_) StepDown("the lease was not renewed in time");
  if (!leading_ && !core_.stale() && ended_.ok() && Clock::now() >= next_catch_up_) {
    next_catch_up_ = Clock::now() + std::chrono::milliseconds(replica_->catch_up_ms);
    Result<int64_t> caught = core_.CatchUp();
    if (!caught.ok()) {
      Log("warn", "cannot follow the leader's journal", {{"error", caught.error().message}});
    } else {
      ReplicaRole r = role();
      r.seq = core_.journal().last_seq();
      SetRole(r);
    }
  }
}

void Loop::Campaign(Clock::time_point now) {
  const int64_t lease_ms = replica_->candidate.lease_ms;
  next_campaign_ = now + std::chrono::milliseconds(std::max<int64_t>(1, lease_ms / 3));
  // The store's lease runs from when it read its clock, which is after `now`; this process
  // counts from `now` and stops a tenth early, so it stops leading before another may start.
  const Clock::time_point deadline = now + std::chrono::milliseconds(lease_ms - lease_ms / 10);
  Result<Leadership> l = core_.journal().Campaign(replica_->candidate);
  if (!l.ok()) {
    if (l.error().message != last_campaign_error_) {
      Log("warn", "cannot reach the store to renew or take the lease", {{"error", l.error().message}});
      last_campaign_error_ = l.error().message;
    }
    return;
  }
  last_campaign_error_.clear();
  if (l->leader) {
    if (l->promoted || !leading_) {
      Promote(*l);
      if (!leading_) return;
    }
    lease_deadline_ = deadline;
    return;
  }
  if (l->deposed || leading_) {
    ended_ = Error{ErrorCode::kUnavailable, "another replica (" + (l->leader_url.empty() ? "?" : l->leader_url) +
                                                ") took over the store at epoch " + std::to_string(l->epoch) +
                                                "; this process stops (start it again to follow)"};
    Log("error", "deposed", {{"leader", l->leader_url}, {"epoch", std::to_string(l->epoch)}});
    leading_ = false;
  }
  // A follower asks again just after the holder's lease would lapse, rather than up to a third
  // of a lease later: a dead leader is replaced as soon as its lease allows.
  next_campaign_ = std::min(next_campaign_, now + std::chrono::milliseconds(std::max<int64_t>(10, l->lease_left_ms + 5)));
  ReplicaRole r = role();
  r.leader = false;
  r.leader_url = l->leader_url;
  r.epoch = l->epoch;
  SetRole(r);
}

void Loop::Promote(const Leadership& l) {
  // What the predecessor wrote up to its last append is the state; this process's copy may be
  // a catch-up behind it.
  if (Status s = core_.Reload(); !s.ok()) {
    Log("error", "took the lease but cannot read the store; not leading yet", {{"error", s.error().message}});
    return;
  }
  core_.SetEpoch(l.epoch);
  if (replica_->on_promote) {
    if (Status s = replica_->on_promote(core_); !s.ok()) {
      ended_ = s;
      Log("error", "cannot start leading", {{"error", s.error().message}});
      return;
    }
  }
  leading_ = true;
  Log("info", "leading", {{"epoch", std::to_string(l.epoch)}, {"url", replica_->candidate.url},
                          {"records", std::to_string(core_.journal().last_seq())}});
  SetRole({.replica = true, .leader = true, .leader_url = replica_->candidate.url, .epoch = l.epoch,
           .seq = core_.journal().last_seq()});
}

void Loop::StepDown(const std::string& why) {
  Log("error", "stepped down: writes wait for a leader", {{"why", why}});
  leading_ = false;
  ReplicaRole r = role();
  r.leader = false;
  r.leader_url.clear();
  SetRole(r);
}

Status Loop::FlushTimed() {
  const size_t records = core_.staged();
  // Nothing to write, but a tick's executor wants may be due: the core hands them over.
  if (records == 0) return core_.Flush();
  const auto flush_start = std::chrono::steady_clock::now();
  const Status flushed = core_.Flush();
  metrics_.ObserveFlush(records, SecondsSince(flush_start), flushed.ok());
  if (!flushed.ok()) Log("error", "journal append failed", {{"error", flushed.error().message}});
  return flushed;
}

}  // namespace gpupool
