// The daemon's event loop: one thread owns the ControlPlane. Requests come in as work items from
// the HTTP front end's threads; the loop drains its queue, appends everything the batch staged
// to the journal in one transaction (group commit), and only then hands each item its reply;
// then, when one is due, it runs a scheduling tick and commits its records. Nothing here knows
// HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "daemon/control_plane.h"
#include "daemon/metrics.h"
#include "daemon/snapshots.h"

namespace gpupool {

// One of several `gpupool serve` processes on a shared store (PostgreSQL; docs/design/daemon.md,
// "Replicas"): one leads, the others follow.
struct ReplicaOptions {
  Candidate candidate;       // its advertised URL, its id, the lease
  int64_t catch_up_ms = 200;  // how often a follower reads the leader's new records
  // On the loop, each time this process becomes the leader, after the state was loaded afresh
  // from the store: bootstraps an empty store, starts what only a leader runs (the agents'
  // executor, the burst provider; once, though a replica that stepped down leads again). An
  // error stops the process.
  std::function<Status(ControlPlane&)> on_promote;
};

// Who this process is, for /healthz and the front end's redirects. Without replicas: the leader.
struct ReplicaRole {
  bool replica = false;    // one of several processes on a shared store
  bool leader = true;      // it leads now: holds the lease and renewed it in time
  std::string leader_url;  // the leader's advertised URL ("" while none is known)
  int64_t epoch = 0;       // the store's epoch, as last read
  int64_t seq = 0;         // the last journal record this process's state holds
};

class Loop {
 public:
  using Work = std::function<Reply(ControlPlane&, Time now)>;
  using Done = std::function<void(Reply)>;  // called on the loop thread once the batch is durable

  // `executor`: run the simulated executor in each tick (demo, --simulate-executor).
  Loop(ControlPlane& core, Metrics& metrics, int tick_ms, bool executor);

  // Queues `work`. Once the loop has stopped, `done` gets a 503 at once, on the caller's thread.
  // `read`: the work only reads (a GET), so a follower may run it on its copy of the state; any
  // other is answered 503 while this process does not lead.
  void Post(Work work, Done done, bool read = false);

  // Snapshots after flushes when due (daemon/snapshots.h); none without this call. Call before Run.
  void SetSnapshots(SnapshotPolicy policy) { snapshots_.emplace(policy); }
  // Runs as a replica of a shared store: campaigns for its lease every lease/3, follows the
  // leader's journal while it does not lead, and ticks, writes and snapshots only while it does.
  // Call before Run.
  void SetReplica(ReplicaOptions options);
  // Thread-safe.
  ReplicaRole role() const;

  // Runs batches until `stop` is set (checked at least every tick), then answers the last batch
  // and returns. Every Done posted before it returns has been called. Also returns, with the
  // reason in ended(), once a replica learns that another took over from it, or its on_promote
  // failed.
  void Run(const std::atomic<bool>& stop);
  const Status& ended() const { return ended_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Flush with its metrics and a log line on failure; nothing staged: no write, but the core
  // still hands over the executor wants a tick left due.
  Status FlushTimed();
  // Between batches: reloads a stale core, and a replica's campaign and catch-up when due.
  void Upkeep(Clock::time_point now);
  void Campaign(Clock::time_point now);
  void Promote(const Leadership& l);
  void StepDown(const std::string& why);
  void SetRole(const ReplicaRole& r);
  bool leading() const { return !replica_ || leading_; }

  struct Task {
    Work work;
    Done done;
    bool read = false;
  };
  // Runs a batch's handlers (none while the core is stale; only reads while this replica does
  // not lead); abandons the batch if a handler broke it. The replies, in order.
  std::vector<Reply> Answer(std::deque<Task>& batch);

  ControlPlane& core_;
  Metrics& metrics_;
  const int tick_ms_;
  const bool executor_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;  // guarded by mu_
  bool stopped_ = false;    // guarded by mu_
  std::optional<Snapshotter> snapshots_;
  std::optional<ReplicaOptions> replica_;
  bool leading_ = false;          // a replica that holds the lease (loop thread)
  Clock::time_point lease_deadline_{}, next_campaign_{}, next_catch_up_{}, next_reload_{};
  std::string last_campaign_error_;
  int64_t role_seq_ = 0;  // the seq last put in role_ while leading
  Status ended_ = Ok();
  mutable std::mutex role_mu_;
  ReplicaRole role_;  // guarded by role_mu_
};

// Wall-clock now, in the core's Time.
Time WallNow();

}  // namespace gpupool
