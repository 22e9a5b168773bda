// The Slurm executor's reading of Slurm's accounting (slurmdbd, through sacct), for reconciling
// chargeback with it (slurm.h; docs/design/executors.md, "Accounting").
#include <algorithm>
#include <map>
#include <sstream>

#include "executor/slurm.h"
#include "executor/slurm_internal.h"

namespace gpupool::executor {

using slurm_internal::NowMs;

namespace {

// "1733490000" -> 1733490000; "Unknown", "None", "" -> 0.
int64_t EpochOrZero(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), ::isdigit) || s.size() > 18) return 0;
  return std::stoll(s);
}

}  // namespace

Result<std::vector<AccountedRun>> ParseSacct(const std::string& out) {
  std::vector<AccountedRun> runs;
  std::map<std::string, size_t> by_id;  // the job id before any "+": its entry in runs
  std::stringstream lines(out);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
    if (!line.empty() && line.back() == '|') f.emplace_back();
    if (f.size() != 8) {
      return Error{ErrorCode::kInvalidArgument, "sacct line " + std::to_string(n) + ": " + std::to_string(f.size()) +
                                                   " fields where JobID|JobName|Account|State|Submit|Start|End|AllocTRES "
                                                   "has 8"};
    }
    const std::string& name = f[1];
    constexpr std::string_view kPrefix = "gpupool-";
    if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size() || name.size() > kPrefix.size() + 19 ||
        !std::all_of(name.begin() + kPrefix.size(), name.end(), ::isdigit)) {
      continue;  // not one of gpupool's
    }
    const std::string id = f[0].substr(0, f[0].find_first_of("+._"));
    if (id.empty()) continue;
    const int gpus = TresGpus(f[7]);
    const std::string state = f[3].substr(0, f[3].find(' '));  // "CANCELLED by 0"
    auto [it, fresh] = by_id.try_emplace(id, runs.size());
    if (fresh) {
      AccountedRun r;
      r.job = std::stoull(name.substr(kPrefix.size()));
      r.backend_id = id;
      r.account = f[2];
      r.state = state;
      r.submit_s = EpochOrZero(f[4]);
      // Slurm gives a job cancelled while pending its cancel time as start; nothing was
      // allocated (AllocTRES is empty), and it never started.
      r.start_s = f[7].empty() ? 0 : EpochOrZero(f[5]);
      r.end_s = EpochOrZero(f[6]);
      r.gpus = gpus;
      runs.push_back(std::move(r));
      continue;
    }
    AccountedRun& r = runs[it->second];  // another component of a heterogeneous job
    r.gpus += gpus;
    auto earliest = [](int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); };
    r.submit_s = earliest(r.submit_s, EpochOrZero(f[4]));
    r.start_s = earliest(r.start_s, f[7].empty() ? 0 : EpochOrZero(f[5]));
    const int64_t end = EpochOrZero(f[6]);
    r.end_s = r.end_s == 0 || end == 0 ? 0 : std::max(r.end_s, end);  // 0 while a component runs
    if (RunStateOf(state) != RunState::kSucceeded) r.state = state;
  }
  return runs;
}

Accounting SlurmExecutor::Accounted() const {
  std::lock_guard<std::mutex> l(mu_);
  return accounted_;
}

void SlurmExecutor::ReadAccounting() {
  if (config_.sacct.empty() || NowMs() < accounting_due_ms_) return;
  accounting_due_ms_ = NowMs() + config_.accounting_poll.millis();
  // gpupool's jobs run as its Slurm user in its partition; SLURM_TIME_FORMAT=%s gives Unix
  // seconds, whatever the time zone of either side.
  // Its listing reaches up to when it ran ("-E now"); jobs charged after that are not in it yet.
  const int64_t read_ms = NowMs();
  std::string out;
  Status s = Tool(config_.sacct,
                  {"-X", "-P", "-n", "-u", config_.user, "-r", config_.partition, "-S", "now-" + std::to_string(
                       config_.accounting_window.millis() / 1000) + "seconds", "-E", "now", "-o",
                   "JobID,JobName,Account,State,Submit,Start,End,AllocTRES"},
                  {"SLURM_TIME_FORMAT=%s"}, &out);
  Result<std::vector<AccountedRun>> runs = s.ok() ? ParseSacct(out) : Result<std::vector<AccountedRun>>(s.error());
  // sacct began its window a moment before this (when it ran): what is reported from here on is
  // all in what it read.
  const int64_t from_s = NowMs() / 1000 - config_.accounting_window.millis() / 1000;
  std::lock_guard<std::mutex> l(mu_);
  if (!runs.ok()) {
    accounted_.error = runs.error().message;  // the last good read stays
    return;
  }
  accounted_ = Accounting{read_ms, from_s, "", config_.accounts, std::move(runs).value()};
}

}  // namespace gpupool::executor
