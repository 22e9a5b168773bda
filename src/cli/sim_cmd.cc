// `gpupool sim replay|packing`: trace-driven simulation (issue 3).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/decode.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/sim_output.h"
#include "cli/table.h"
#include "sim/burst_config.h"
#include "sim/json.h"
#include "sim/replay.h"
#include "sim/report_svg.h"

namespace gpupool::cli {
namespace {

// A progress bar on stderr, only when it is a terminal.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), tty_(isatty(2) != 0) {}
  void operator()(double f) {
    if (!tty_) return;
    const int pct = static_cast<int>(f * 100);
    if (pct == last_) return;
    last_ = pct;
    const int filled = pct / 4;
    std::fprintf(stderr, "\r%s [%s%s] %3d%%", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(25 - filled, ' ').c_str(), pct);
    if (pct >= 100) std::fprintf(stderr, "\n");
  }

 private:
  std::string label_;
  bool tty_;
  int last_ = -1;
};

// "1,250.5" -> micros, each a price as in the burst file ("budget").
Result<std::vector<int64_t>> ParseBudgets(const std::string& list) {
  std::vector<int64_t> out;
  size_t from = 0;
  while (from <= list.size()) {
    const size_t comma = std::min(list.find(',', from), list.size());
    const std::string item = list.substr(from, comma - from);
    Result<int64_t> m = DecodePriceMicros("\"" + item + "\"", "--burst-budgets");
    if (item.empty() || !m.ok()) {
      return InvalidArgument(
          "--burst-budgets takes amounts such as 0,100,500.50 (each in [0, 1000000])");
    }
    out.push_back(*m);
    from = comma + 1;
  }
  return out;
}

int Sweep(const Args& args, ReplayOptions opt, const std::vector<TraceJob>& jobs,
          const std::vector<TraceTenant>& tenants, const std::string& burst_file) {
  Result<std::vector<int64_t>> budgets = ParseBudgets(args.Str("burst-budgets", ""));
  if (!budgets.ok()) {
    std::cerr << "gpupool sim replay: " << budgets.error().message << "\n";
    return 2;
  }
  if (args.Has("svg")) {
    std::cerr << "gpupool sim replay: --svg is not available with --burst-budgets\n";
    return 2;
  }
  const ReplayBurst file = *opt.burst;
  opt.burst.reset();
  std::vector<SweepRow> rows;
  for (int64_t budget : *budgets) {
    ReplayOptions o = opt;
    if (budget > 0) {
      ReplayBurst b = file;
      for (auto& [name, p] : b.tenants) p.budget_micros = budget;
      o.burst.emplace(std::move(b));
    }
    Progress progress("replay, budget " + Money(budget));
    const auto t0 = std::chrono::steady_clock::now();
    Result<ReplayReport> r = RunReplay(jobs, tenants, o, [&](double f) { progress(f); });
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      std::cerr << "gpupool sim replay: " << r.error().message << "\n";
      return 2;
    }
    rows.push_back({budget, std::move(*r), wall});
  }
  const bool timing = !args.Has("no-timing");
  std::cout << "pooled, " << (rows.empty() ? 0 : rows[0].report.capacity_gpus) << " GPUs, policy "
            << opt.scheduler.placement << ", capacity scale " << opt.capacity_scale
            << "; budget per tenant per budget period, 0 = no burst\n";
  Table t({"budget", "nodes", "node-hours", "cost", "p95 wait (h)", "avg JCT (h)", "jobs on demand",
           "requeued", "inside charge", "over budget", "utilization", "wall (s)"});
  for (const SweepRow& row : rows) {
    const ReplayReport& r = row.report;
    t.Row({Money(row.budget_micros), std::to_string(r.burst.nodes),
           Fixed(Hours(r.burst.node_ms), 1), Money(r.burst.cost_micros),
           Fixed(r.p95_wait_s / 3600, 2), Fixed(r.avg_jct_s / 3600, 2),
           std::to_string(r.burst.jobs_on_demand), std::to_string(r.burst.requeued),
           std::to_string(r.burst.requeued_charged), Money(r.burst.over_budget_micros),
           Fixed(r.utilization_pct, 1) + "%", timing ? Fixed(row.wall_s, 1) : "-"});
  }
  t.Print(std::cout);
  if (args.Has("json") &&
      !WriteFile(args.Str("json", ""),
                 SweepJson(rows, opt, args.Str("jobs", ""), burst_file, timing))) {
    std::cerr << "gpupool sim replay: cannot write " << args.Str("json", "") << "\n";
    return 1;
  }
  if (args.Has("csv") && !WriteFile(args.Str("csv", ""), SweepCsv(rows))) {
    std::cerr << "gpupool sim replay: cannot write " << args.Str("csv", "") << "\n";
    return 1;
  }
  return 0;
}

int Replay(const std::vector<std::string>& argv) {
  Result<Args> args =
      Args::Parse(argv,
                  {"jobs", "tenants", "policy", "partitioned", "capacity-scale", "json", "csv",
                   "svg", "no-estimates", "no-timing", "burst", "burst-budgets", "queue-policy",
                   "starvation-after-h", "estimate-noise", "seed", "las-thresholds-gpu-h", "help"},
                  {"partitioned", "no-estimates", "no-timing", "help"});
  if (!args.ok()) {
    std::cerr << "gpupool sim replay: " << args.error().message << "\n" << kReplayUsage;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kReplayUsage;
    return 0;
  }
  if (!args->Has("jobs") || !args->Has("tenants")) {
    std::cerr << "gpupool sim replay: --jobs and --tenants are required\n";
    return 2;
  }
  ReplayOptions opt;
  opt.scheduler.placement = args->Str("policy", "gpupool");
  opt.partitioned = args->Has("partitioned");
  opt.estimates = !args->Has("no-estimates");
  const std::string scale = args->Str("capacity-scale", "1");
  char* end = nullptr;
  opt.capacity_scale = std::strtod(scale.c_str(), &end);
  if (end == scale.c_str() || *end != '\0') {
    std::cerr << "gpupool sim replay: --capacity-scale must be a number\n";
    return 2;
  }
  if (args->Has("queue-policy")) {
    Result<QueueOrder> q = ParseQueueOrder(args->Str("queue-policy", ""));
    if (!q.ok()) {
      std::cerr << "gpupool sim replay: --queue-policy: " << q.error().message << "\n";
      return 2;
    }
    opt.scheduler.queue.order = *q;
  }
  struct NumberFlag {
    const char* name;
    double* into;
  };
  double starvation_h = static_cast<double>(opt.scheduler.queue.starvation_after.millis()) / 3.6e6;
  double seed = 1;
  for (const NumberFlag& f : {NumberFlag{"starvation-after-h", &starvation_h},
                              NumberFlag{"estimate-noise", &opt.estimate_noise}, NumberFlag{"seed", &seed}}) {
    if (!args->Has(f.name)) continue;
    const std::string v = args->Str(f.name, "");
    char* e = nullptr;
    *f.into = std::strtod(v.c_str(), &e);
    if (e == v.c_str() || *e != '\0') {
      std::cerr << "gpupool sim replay: --" << f.name << " must be a number\n";
      return 2;
    }
  }
  if (!(seed >= 0) || seed > 9e15 || seed != std::floor(seed)) {
    std::cerr << "gpupool sim replay: --seed must be a whole number\n";
    return 2;
  }
  opt.seed = static_cast<uint64_t>(seed);
  if (!(starvation_h > 0) || starvation_h > 366 * 24) {
    std::cerr << "gpupool sim replay: --starvation-after-h must be in (0, 8784]\n";
    return 2;
  }
  opt.scheduler.queue.starvation_after = Duration::Millis(std::llround(starvation_h * 3.6e6));
  if (args->Has("las-thresholds-gpu-h")) {  // A,B,C in GPU-hours
    std::vector<int64_t> t;
    std::stringstream in(args->Str("las-thresholds-gpu-h", ""));
    for (std::string item; std::getline(in, item, ',');) {
      char* e = nullptr;
      const double h = std::strtod(item.c_str(), &e);
      if (e == item.c_str() || *e != '\0' || !(h > 0) || h > 1e9) {
        std::cerr << "gpupool sim replay: --las-thresholds-gpu-h must be GPU-hours separated by commas\n";
        return 2;
      }
      t.push_back(std::llround(h * 3600));
    }
    opt.scheduler.queue.las_thresholds_gpu_s = t;
  }
  if (Status v = Validate(opt.scheduler.queue); !v.ok()) {
    std::cerr << "gpupool sim replay: " << v.error().message << "\n";
    return 2;
  }
  Result<std::vector<TraceJob>> jobs = LoadTraceJobs(args->Str("jobs", ""));
  Result<std::vector<TraceTenant>> tenants = LoadTraceTenants(args->Str("tenants", ""));
  for (const Status& st : {jobs.ok() ? Ok() : Status(jobs.error()),
                           tenants.ok() ? Ok() : Status(tenants.error())}) {
    if (!st.ok()) {
      std::cerr << "gpupool sim replay: " << st.error().message << "\n";
      return 2;
    }
  }
  const std::string burst_file = args->Str("burst", "");
  if (args->Has("burst")) {
    Result<ReplayBurst> b = LoadReplayBurst(burst_file, ReplayCatalogue());
    if (!b.ok()) {
      std::cerr << "gpupool sim replay: " << b.error().message << "\n";
      return 2;
    }
    if (opt.partitioned) {
      std::cerr << "gpupool sim replay: --burst replays the pool only (drop --partitioned)\n";
      return 2;
    }
    opt.burst = std::move(*b);
  }
  if (args->Has("burst-budgets")) {
    if (!opt.burst) {
      std::cerr << "gpupool sim replay: --burst-budgets needs --burst FILE\n";
      return 2;
    }
    return Sweep(*args, opt, *jobs, *tenants, burst_file);
  }
  Progress progress("replay");
  const auto t0 = std::chrono::steady_clock::now();
  Result<ReplayReport> r = RunReplay(*jobs, *tenants, opt, [&](double f) { progress(f); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    std::cerr << "gpupool sim replay: " << r.error().message << "\n";
    return 2;
  }
  const bool burst = r->burst.enabled;
  std::vector<std::string> header = {"tenant",      "guaranteed",   "jobs",
                                     "avg JCT (h)", "p50 wait (h)", "p95 wait (h)"};
  if (burst) header.insert(header.end(), {"burst cost", "on-demand nodes"});
  header.insert(header.end(), {"p99 wait (h)", "GPU-hours", "preempted"});
  Table t(header);
  for (const auto& [name, tr] : r->tenants) {
    std::vector<std::string> row = {name,
                                    std::to_string(tr.guaranteed_gpus),
                                    std::to_string(tr.jobs),
                                    Fixed(tr.avg_jct_s / 3600, 2),
                                    Fixed(tr.p50_wait_s / 3600, 2),
                                    Fixed(tr.p95_wait_s / 3600, 2)};
    if (burst) {
      const auto b = r->burst.tenants.find(name);
      row.push_back(b == r->burst.tenants.end() ? "-" : Money(b->second.cost_micros));
      row.push_back(b == r->burst.tenants.end() ? "-" : std::to_string(b->second.nodes));
    }
    row.insert(row.end(), {Fixed(tr.p99_wait_s / 3600, 2), Fixed(tr.gpu_hours, 0),
                           std::to_string(tr.preempted)});
    t.Row(std::move(row));
  }
  std::cout << (opt.partitioned ? "partitioned" : "pooled") << ", " << r->capacity_gpus
            << " GPUs, policy " << opt.scheduler.placement << ", queue policy "
            << QueueOrderName(opt.scheduler.queue.order) << ", capacity scale " << opt.capacity_scale;
  if (opt.estimate_noise > 1) std::cout << ", estimates within " << opt.estimate_noise << "x (seed " << opt.seed << ")";
  std::cout << "\n";
  t.Print(std::cout);
  std::cout << "overall: avg JCT " << Fixed(r->avg_jct_s / 3600, 2) << " h (p50 "
            << Fixed(r->p50_jct_s / 3600, 2) << ", p99 " << Fixed(r->p99_jct_s / 3600, 2) << "), p95 wait "
            << Fixed(r->p95_wait_s / 3600, 2) << " h, utilization " << Fixed(r->utilization_pct, 1)
            << "%, makespan " << Fixed(r->makespan_s / 86400, 1) << " d, Jain "
            << Fixed(r->jain_fairness, 3) << ", preemptions " << r->preemptions << ", "
            << r->cycles << " cycles in " << Fixed(wall, 1) << " s\n";
  if (burst) {
    const BurstReport& b = r->burst;
    std::cout << "burst: " << b.nodes << " on-demand nodes, " << Fixed(Hours(b.node_ms), 1)
              << " node-hours, " << Fixed(Hours(b.billed_gpu_ms), 1) << " GPU-hours billed ("
              << Fixed(Hours(b.used_gpu_ms), 1) << " used), cost " << Money(b.cost_micros) << "; "
              << b.jobs_on_demand << " jobs ran on demand, " << b.requeued
              << " requeued by a release (" << b.requeued_charged
              << " before the end their budget paid for), at most " << Money(b.over_budget_micros)
              << " over a budget\n";
  }
  const bool timing = !args->Has("no-timing");
  if (args->Has("json") &&
      !WriteFile(args->Str("json", ""),
                 ReplayJson(*r, opt, args->Str("jobs", ""), burst_file, wall, timing))) {
    std::cerr << "gpupool sim replay: cannot write " << args->Str("json", "") << "\n";
    return 1;
  }
  if (args->Has("csv") && !WriteFile(args->Str("csv", ""), ReplayCsv(*r))) {
    std::cerr << "gpupool sim replay: cannot write " << args->Str("csv", "") << "\n";
    return 1;
  }
  if (args->Has("svg") && !WriteFile(args->Str("svg", ""), ReplaySvg(*r))) {
    std::cerr << "gpupool sim replay: cannot write " << args->Str("svg", "") << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int Sim(const std::vector<std::string>& argv) {
  if (!argv.empty() && (argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help")) {
    std::cout << kSimUsage;
    return 0;
  }
  std::vector<std::string> rest(argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  if (!argv.empty() && argv[0] == "replay") return Replay(rest);
  if (!argv.empty() && argv[0] == "packing") return Packing(rest);
  std::cerr << "gpupool sim: "
            << (argv.empty()                 ? std::string("which experiment: replay or packing")
                : argv[0].rfind("--", 0) == 0 ? "unknown flag " + argv[0] + " (flags go after replay or packing)"
                                              : "unknown experiment '" + argv[0] + "'")
            << "\n" << kSimUsage;
  return 2;
}

}  // namespace gpupool::cli
