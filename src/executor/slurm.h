// The Slurm executor (docs/design/executors.md): gpupool governs a Slurm partition's GPUs and
// Slurm launches the processes. Through slurmrestd (JWT auth, OpenAPI v0.0.38, Slurm 22.05) it
// lists the partition's nodes and jobs, submits each placement as a batch job pinned to the nodes
// gpupool chose (`nodelist`, `gres=gpu:TYPE:N` per node, a heterogeneous job when the nodes'
// shares differ), and cancels what gpupool no longer wants. slurmrestd v0.0.38 cannot update a
// node, so drain and resume go through `scontrol update`.
//
// Each job is named gpupool-<id> and carries "gpupool job=<id> attempt=<n>" as its comment: a
// restarted daemon (or executor) recognises its jobs by that, and never submits an attempt twice.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "executor/executor.h"

namespace gpupool::executor {

struct SlurmConfig {
  std::string name = "slurm";
  std::string url;                  // slurmrestd: http://HOST:PORT
  std::string api = "v0.0.38";
  std::string user = "gpupool";     // X-SLURM-USER-NAME; the jobs run as this user
  std::string token_file;           // a JWT (scontrol token), read again every round
  std::string jwt_key_file;         // or Slurm's HS256 key: short-lived tokens are minted here
  std::string partition;
  bool accounts = false;            // the tenant's name is the job's Slurm account
  std::string scontrol = "scontrol";
  std::string slurm_conf;           // SLURM_CONF for scontrol and sacct; empty: their default
  Duration command_timeout = Duration::Seconds(60);  // scontrol or sacct still running: killed
  std::string working_directory = "/tmp";
  std::string output;               // standard_output; empty: WORKDIR/gpupool-<job>-<attempt>.out
  Duration poll = Duration::Seconds(1);
  Duration request_timeout = Duration::Seconds(5);
  // Accounting (slurmdbd): sacct is run this often for the jobs submitted within the window, to
  // reconcile chargeback with it; empty `sacct`: not read.
  std::string sacct;
  Duration accounting_poll = Duration::Seconds(60);
  Duration accounting_window = Duration::Hours(24 * 35);
};

// --- the mapping, pure (tested in slurm_test.cc) ---

// The GPUs of a node's GRES string ("gpu:h100:8(S:0-1),shard:16"): the type of the first gpu
// entry ("" when untyped) and the count of all of them.
struct GresGpus {
  std::string type;
  int count = 0;
};
GresGpus ParseGres(const std::string& gres);
// "gpupool job=12 attempt=3" -> {12, 3}; anything else -> nullopt.
std::optional<std::pair<uint64_t, int64_t>> ParseComment(const std::string& comment);
std::string Comment(uint64_t job, int64_t attempt);
// A Slurm job's state as gpupool reads it, `we_cancelled`: gpupool asked for the cancel.
RunState RunStateOf(const std::string& job_state);
// A job's exit_code as slurmrestd v0.0.38 gives it (a wait status), for people.
std::string ExitText(int64_t status);
// The body of POST /job/submit for a placement.
nlohmann::json SubmitBody(const Placement& p, const SlurmConfig& c);
// A word for /bin/sh, quoted so that it reaches the program unchanged.
std::string ShellQuote(const std::string& word);
// The output of `sacct -X -P -n -o JobID,JobName,Account,State,Submit,Start,End,AllocTRES` run
// with SLURM_TIME_FORMAT=%s: gpupool's jobs (named gpupool-<id>), the components of a
// heterogeneous job merged (their GPUs added, the earliest submit and start, the latest end).
// Lines of other jobs are skipped; a line that is not of this shape is an error.
Result<std::vector<AccountedRun>> ParseSacct(const std::string& out);
// A Slurm hostlist ("gpu[01-03,07],cpu1") as node names, in order; nullopt when it is not of
// that shape or names more than `limit` nodes.
std::optional<std::vector<std::string>> ExpandHostlist(const std::string& list, size_t limit = 65536);
// A running job's GPUs per node: from gres_detail ("gpu:h100:2(IDX:0-1)" per node, in node order)
// when it has one entry per node, else `total` spread over the nodes as evenly as it goes.
std::vector<int> GpusPerNode(size_t nodes, const std::vector<std::string>& gres_detail, int total);
// The GPUs of a TRES string ("cpu=1,gres/gpu:h100=4,gres/gpu=4"): the untyped gres/gpu counts.
int TresGpus(const std::string& tres);
// An attempt of one gpupool job that Slurm lists, or may have (slurm_id 0: a submission not
// listed yet): its number, the Slurm job and its state.
struct SlurmAttempt {
  int64_t attempt = 0;
  uint64_t slurm_id = 0;
  std::string state;
};
// Why attempt `attempt` of a job may not be submitted yet: an earlier one that Slurm still has
// alive (cancelled and within its grace, completing, ...): "waiting for attempt 1 (Slurm job 7,
// COMPLETING) to end". Empty when there is none: two attempts never run at once (DESIGN.md §4).
std::string EarlierAttemptAlive(const std::vector<SlurmAttempt>& listed, int64_t attempt);
// A JWT for Slurm's auth/jwt, HS256 with `key`: {"exp": now + lifetime, "iat": now, "sun": user}.
std::string MintSlurmToken(const std::string& key, const std::string& user, int64_t now_s, int64_t lifetime_s);

class SlurmExecutor final : public Executor {
 public:
  // Starts the worker thread; its first round runs at once.
  static Result<std::unique_ptr<SlurmExecutor>> Start(SlurmConfig config);
  ~SlurmExecutor() override;

  const std::string& name() const override { return config_.name; }
  const std::string& kind() const override { return kind_; }
  void Want(std::vector<Placement> run, std::map<std::string, std::string> out_of_service) override;
  Observation Observe() const override;
  Accounting Accounted() const override;

 private:
  explicit SlurmExecutor(SlurmConfig config) : config_(std::move(config)) {}
  void Run();
  // One round: list, reconcile, publish. Errors end the round (the next one retries).
  Status Round();
  Result<std::string> Token();
  Result<nlohmann::json> Call(const std::string& method, const std::string& path, const std::string& body = "");
  Status Scontrol(const std::vector<std::string>& args);
  // Runs a Slurm command with the configured SLURM_CONF (and `env` added); its standard output
  // in `out` when given.
  Status Tool(const std::string& program, const std::vector<std::string>& args, const std::vector<std::string>& env,
              std::string* out);
  void ReadAccounting();

  using Key = std::pair<uint64_t, int64_t>;  // (gpupool job, attempt)
  struct Ours {  // a job of the partition that gpupool submitted, its components merged
    uint64_t slurm_id = 0;  // the (heterogeneous) job's id: what a cancel names
    std::string state;      // the merged Slurm state
    RunState run = RunState::kWaiting;  // and as gpupool reads it
    std::string reason;
    int64_t exit_code = 0;
    std::string nodes;
  };
  // The steps of a round. The partition's nodes, drained and resumed where gpupool's operators
  // asked.
  std::vector<NodeInfo> ReadNodes(const nlohmann::json& nodes, const std::map<std::string, std::string>& drain,
                                  std::string* error);
  // gpupool's jobs by attempt; the GPUs that jobs outside gpupool hold, per node, into `obs`.
  std::map<Key, Ours> ReadJobs(const nlohmann::json& jobs, Observation* obs);
  // The status of each attempt gpupool wants, submitting those Slurm lacks; returns their keys.
  std::set<Key> Drive(const std::vector<Placement>& want, const std::map<Key, Ours>& ours, int64_t listed_ms,
                      Observation* obs, std::string* error);
  // SIGTERM to gpupool's jobs it no longer wants, KILL after the attempt's grace.
  void Reclaim(const std::set<Key>& wanted, const std::map<Key, Ours>& ours, std::string* error);

  SlurmConfig config_;
  const std::string kind_ = "slurm";
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Placement> want_;                 // guarded by mu_
  std::map<std::string, std::string> drain_;    // guarded by mu_
  Observation seen_;                            // guarded by mu_
  Accounting accounted_;                        // guarded by mu_
  int64_t accounting_due_ms_ = 0;               // the worker's: when sacct runs next
  std::thread worker_;
  // The worker's own: submissions not yet seen in a listing, signals sent, the grace of each
  // attempt it was told to run, the minted token.
  std::map<Key, std::pair<uint64_t, int64_t>> submitted_;  // key -> (slurm id, at ms)
  std::map<Key, int64_t> retry_at_;  // key -> ms: a failed submit waits
  std::map<uint64_t, int64_t> signalled_;                     // slurm id -> when SIGTERM went (ms)
  std::map<Key, Duration> grace_;
  std::string token_;
  int64_t token_until_s_ = 0;
};

}  // namespace gpupool::executor
