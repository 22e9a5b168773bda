// Chargeback reconciled with an executor's accounting (docs/design/executors.md, "Accounting"):
// gpupool's ledger says what it charged a tenant for a job, the backend's accounting (Slurm:
// sacct from slurmdbd) says what ran. Reconcile pairs them per job and per attempt and flags
// where they disagree: another GPU count, a duration beyond the tolerance, another account, a
// charge without a backend job, a backend job without a charge, two backend jobs for one stint.
//
// What is compared: a stint is one of the job's stays in the ledger (its contiguous intervals,
// from admission to release); it is paired with the backend jobs whose life [submit, end]
// overlaps it. The ledger charges from admission (when gpupool hands the job to the backend) to
// release (when it learns the job ended, or takes the GPUs back); the backend's [submit, end] is
// the same span seen from the other side, so the two agree within the executor's polling delay.
// Slurm's own run time (start to end) is shown beside it, the difference being what the job
// waited in Slurm after gpupool admitted it.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "executor/executor.h"

namespace gpupool {

struct ReconcileQuery {
  Time from, to;                  // stints and backend jobs overlapping [from, to)
  Time now;                       // open stints and running backend jobs end here
  Duration tolerance = Duration::Seconds(10);
  Time accounting_read;           // when the backend's accounting was read
  bool account_is_tenant = false; // the backend's account is the tenant's name
};

struct ReconcileStint {
  Time start, end;
  bool open = false;
  double gpus = 0;  // whole-GPU equivalents, all replicas
};

enum class ReconcileStatus : uint8_t {
  kMatch,            // both sides agree within the tolerance
  kMismatch,         // both sides have it and disagree (problems says how)
  kMissingBackend,   // charged in gpupool, no backend job
  kMissingLedger,    // a backend job gpupool has no charge for
  kPending,          // too recent to be in the accounting read yet
};
std::string_view ReconcileStatusName(ReconcileStatus s);

struct ReconcileLine {
  uint64_t job = 0;
  TenantId tenant;  // from the ledger; unset for kMissingLedger
  ReconcileStatus status = ReconcileStatus::kMatch;
  std::vector<std::string> problems;
  std::optional<ReconcileStint> ledger;
  std::vector<executor::AccountedRun> runs;  // the backend jobs paired with it (one when all is well)
};

// `intervals`: the ledger's (of any job: only those of `jobs` are compared); `jobs`: the jobs
// handed to this executor; `tenant_names`: indexed by TenantId. Lines in job order, then time.
std::vector<ReconcileLine> Reconcile(const std::vector<UsageInterval>& intervals,
                                     const std::vector<executor::AccountedRun>& runs, const std::set<uint64_t>& jobs,
                                     const std::vector<std::string>& tenant_names, const ReconcileQuery& q);

}  // namespace gpupool
