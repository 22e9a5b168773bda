// Executors: what runs the jobs of a pool of nodes that gpupool schedules but does not run itself
// (docs/design/executors.md). The daemon decides admission and placement as for any node; an
// executor is told, every tick and in full, which placements should run on its nodes and which
// of its nodes an operator took out of service, and reports back what its backend runs and what
// nodes it has. Both calls return at once: the executor talks to its backend on a thread of its
// own, so a slow or dead backend never stalls the daemon's loop.
//
// Desired state in full, not commands: an executor that restarts, or a daemon that restarts,
// loses nothing and starts nothing twice, because each round compares what should run with what
// the backend says runs, by (job, attempt). Nothing here is specific to one backend: Slurm is the
// first (executor/slurm.h), Kubernetes the next.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/time.h"

namespace gpupool::executor {

// One node's share of a placement.
struct NodeShare {
  std::string node;
  int replicas = 0;  // replicas of the job placed there
  int gpus = 0;      // whole GPUs placed there, all replicas together
};

// One attempt of a job as the daemon placed it.
struct Placement {
  uint64_t job = 0;
  int64_t attempt = 0;
  std::string name;    // the job's name, for people
  std::string tenant;  // the tenant's name
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string gpu_type;             // the backend's name for the GPU model of the nodes
  std::vector<NodeShare> nodes;     // in placement order
  int64_t cpu_milli = 0, memory_mib = 0;  // per replica; 0: not asked
  Duration grace = Duration::Seconds(30);  // SIGTERM, then this long before SIGKILL
  // The daemon has seen it run (journaled): an executor whose backend no longer has it reports
  // it lost and never submits it again.
  bool started = false;
};

enum class RunState : uint8_t {
  kWaiting,    // the backend has it and has not started it (its reason in `detail`)
  kRunning,
  kSucceeded,
  kFailed,     // the job's own doing: a non-zero exit, a time limit, cancelled outside gpupool
  kLost,       // the infrastructure's: a node failed, the backend preempted or forgot it
};

struct AttemptStatus {
  uint64_t job = 0;
  int64_t attempt = 0;
  RunState state = RunState::kWaiting;
  std::string detail;  // "Slurm job 42: PENDING (Resources)"
};

// A node of the executor's pool as its backend describes it.
struct NodeInfo {
  std::string name;
  std::string gpu_type;  // as the backend names it ("h100"); empty: no GPUs
  int gpus = 0;
  int64_t cpu_milli = 0, memory_mib = 0;
  std::vector<std::string> labels;  // "key=value"
  bool unavailable = false;         // the backend will not run work there (drained, down, failed)
  std::string reason;               // why, for people
  int foreign_gpus = 0;             // GPUs held there by jobs gpupool did not submit
  std::string foreign;              // which, for people ("Slurm job 42")
};

// What the executor saw in its last round.
struct Observation {
  int64_t round = 0;   // counts completed rounds; 0: none yet (nothing is known)
  std::string error;   // the last round's failure, empty when it reached its backend
  std::vector<NodeInfo> nodes;
  std::vector<AttemptStatus> attempts;  // of the placements it was told to run
  int foreign_jobs = 0;                 // jobs in the pool that gpupool did not submit
  int foreign_gpus = 0;                 // and the GPUs they hold
};

// One job as the backend's accounting recorded it (Slurm: sacct from slurmdbd), for reconciling
// gpupool's chargeback ledger with it (GET /v1/usage/reconcile).
struct AccountedRun {
  uint64_t job = 0;        // gpupool's job id, from the backend job's name
  std::string backend_id;  // "42"
  std::string account;     // the backend's account ("" when it has none)
  std::string state;       // the backend's word: COMPLETED, CANCELLED, FAILED, RUNNING...
  int64_t submit_s = 0, start_s = 0, end_s = 0;  // Unix seconds; 0: not (yet) known
  int gpus = 0;            // GPUs allocated, all nodes and components together
};

// The backend's accounting as last read.
struct Accounting {
  int64_t read_ms = 0;   // when it was read (Unix ms); 0: never
  int64_t from_s = 0;    // the jobs submitted since then are in `runs`
  std::string error;     // the last read's failure, empty when it worked
  bool account_is_tenant = false;  // the backend's account of a job is its tenant's name
  std::vector<AccountedRun> runs;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& kind() const = 0;
  // What should run now, in full, and the nodes an operator took out of service (node -> reason).
  // Whatever the backend runs for gpupool and is not listed is stopped (SIGTERM, then SIGKILL
  // after its grace).
  virtual void Want(std::vector<Placement> run, std::map<std::string, std::string> out_of_service) = 0;
  // The last round's observation.
  virtual Observation Observe() const = 0;
  // The backend's accounting of gpupool's jobs, as last read; read_ms 0 when the executor has
  // none (not configured, or not read yet).
  virtual Accounting Accounted() const { return {}; }
};

}  // namespace gpupool::executor
