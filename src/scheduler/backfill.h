// Backfill holds (EASY backfilling, as Slurm's backfill plugin does it): a job blocked only by
// running work gets the earliest time its replicas fit, computed from the running jobs' expected
// ends, and the GPUs it will use that are free now are held for it until then. Later jobs in the
// cycle may use held GPUs only if they end before the hold starts, so a large gang at the head
// of its queue is not starved by a stream of small jobs.
//
// A node may take several of the job's replicas, as many as its GPUs, CPU and memory fit then
// (so a gang that must share one node holds too). A held GPU keeps for the job only what its
// replicas will take there: a whole GPU, the MIG instances, or the fraction's room, and the
// node keeps the CPU and memory they will need (later jobs may use the rest). Simplifications, documented in docs/design/backfill.md: nodes already
// holding for one job are not considered for another; jobs without a duration estimate never end, jobs past their
// estimate end at any moment; a shared GPU freed on the timeline keeps its owner until empty.
#pragma once

#include <deque>
#include <vector>

#include "scheduler/placer.h"

namespace gpupool {

class Backfill {
 public:
  Backfill(Session& session, Placer& placer);

  // Records a placement made earlier in this cycle (it runs from now for its estimate).
  void AddPlaced(const Job& job, const std::vector<ReplicaPlacement>& placement);
  // Records a job released (preempted) in this cycle: its end no longer frees anything.
  void AddReleased(JobId id) { released_.push_back(id); }

  // Holds capacity for `job` and returns when it is expected to start; Time::Never() if no
  // hold could be made.
  Time HoldFor(const Job& job, const std::vector<uint32_t>& pools);

  struct End {
    Time at;
    JobId job;
    const Job* spec;  // the job's shape
    const ReplicaPlacement* replica;
  };

 private:
  void BuildTimeline();
  // How many replicas of the job (at most `most`) fit on a node with these GPU keys, CPU and
  // memory, taking them one after another; sets `after` to the keys once they are on it.
  int Fits(const TaskShape& task, const ReplicaShape& rs, Session::Keys keys, int64_t cpu, int64_t mem, int n,
           int most, Session::Keys* after) const;
  void SortPlaced();

  Session& s_;
  Placer& placer_;
  bool built_ = false;
  std::vector<End> timeline_;  // running jobs' ends, sorted once per cycle
  std::vector<End> placed_;    // ends of this cycle's placements, sorted when needed
  size_t placed_sorted_ = 0;   // placed_[0, placed_sorted_) is sorted
  std::deque<std::vector<ReplicaPlacement>> placements_;  // stable storage for placed_
  std::vector<JobId> released_;
};

}  // namespace gpupool
