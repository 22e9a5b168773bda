// `gpupool sim replay|packing`: trace-driven simulation (issue 3).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/table.h"
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

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

std::string ReplayJson(const ReplayReport& r, const ReplayOptions& o, const std::string& jobs,
                       double wall_s, bool timing) {
  JsonWriter w;
  w.BeginObject();
  w.Key("policy").String(o.scheduler.placement);
  w.Key("mode").String(o.partitioned ? "partitioned" : "pooled");
  w.Key("capacity_scale").Number(o.capacity_scale, 3);
  w.Key("jobs_csv").String(jobs);
  w.Key("capacity_gpus").Int(r.capacity_gpus);
  w.Key("tenants").BeginObject();
  for (const auto& [name, t] : r.tenants) {
    w.Key(name).BeginObject();
    w.Key("guaranteed_gpus").Int(t.guaranteed_gpus);
    w.Key("jobs").Int(t.jobs);
    w.Key("finished").Int(t.finished);
    w.Key("never_started").Int(t.never_started);
    w.Key("avg_jct_s").Number(t.avg_jct_s, 1);
    w.Key("p50_wait_s").Number(t.p50_wait_s, 1);
    w.Key("p95_wait_s").Number(t.p95_wait_s, 1);
    w.Key("p99_wait_s").Number(t.p99_wait_s, 1);
    w.Key("gpu_hours").Number(t.gpu_hours, 1);
    w.Key("mean_slowdown").Number(t.mean_slowdown, 3);
    w.Key("preemptions").Int(t.preempted);
    w.EndObject();
  }
  w.EndObject();
  w.Key("overall").BeginObject();
  w.Key("avg_jct_s").Number(r.avg_jct_s, 1);
  w.Key("p95_wait_s").Number(r.p95_wait_s, 1);
  w.Key("utilization_pct").Number(r.utilization_pct, 2);
  w.Key("makespan_s").Number(r.makespan_s, 0);
  w.Key("jain_fairness").Number(r.jain_fairness, 4);
  w.Key("preemptions").Int(r.preemptions);
  w.Key("cycles").Int(r.cycles);
  w.Key("reshaped_jobs").Int(r.reshaped_jobs);
  w.EndObject();
  if (timing) w.Key("wall_seconds").Number(wall_s, 2);
  w.EndObject();
  return w.str();
}

std::string ReplayCsv(const ReplayReport& r) {
  std::string out = "tenant,guaranteed_gpus,jobs,finished,never_started,avg_jct_s,p50_wait_s,"
                    "p95_wait_s,p99_wait_s,gpu_hours,mean_slowdown,preemptions\n";
  char buf[512];
  for (const auto& [name, t] : r.tenants) {
    std::snprintf(buf, sizeof buf, "%s,%lld,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%d\n", name.c_str(),
                  static_cast<long long>(t.guaranteed_gpus), t.jobs, t.finished, t.never_started,
                  t.avg_jct_s, t.p50_wait_s, t.p95_wait_s, t.p99_wait_s, t.gpu_hours,
                  t.mean_slowdown, t.preempted);
    out += buf;
  }
  return out;
}

int Replay(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv,
                                  {"jobs", "tenants", "policy", "partitioned", "capacity-scale",
                                   "json", "csv", "svg", "no-estimates", "no-timing"},
                                  {"partitioned", "no-estimates", "no-timing"});
  if (!args.ok()) {
    std::cerr << "gpupool sim replay: " << args.error().message << "\n";
    return 2;
  }
  if (!args->Has("jobs") || !args->Has("tenants")) {
    std::cerr << "gpupool sim replay: --jobs and --tenants are required\n";
    return 2;
  }
  ReplayOptions opt;
  opt.scheduler.placement = args->Str("policy", "fgd");
  opt.partitioned = args->Has("partitioned");
  opt.estimates = !args->Has("no-estimates");
  const std::string scale = args->Str("capacity-scale", "1");
  char* end = nullptr;
  opt.capacity_scale = std::strtod(scale.c_str(), &end);
  if (end == scale.c_str() || *end != '\0') {
    std::cerr << "gpupool sim replay: --capacity-scale must be a number\n";
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
  Progress progress("replay");
  const auto t0 = std::chrono::steady_clock::now();
  Result<ReplayReport> r = RunReplay(*jobs, *tenants, opt, [&](double f) { progress(f); });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) {
    std::cerr << "gpupool sim replay: " << r.error().message << "\n";
    return 2;
  }
  Table t({"tenant", "guaranteed", "jobs", "avg JCT (h)", "p50 wait (h)", "p95 wait (h)",
           "p99 wait (h)", "GPU-hours", "preempted"});
  for (const auto& [name, tr] : r->tenants) {
    t.Row({name, std::to_string(tr.guaranteed_gpus), std::to_string(tr.jobs),
           Fixed(tr.avg_jct_s / 3600, 2), Fixed(tr.p50_wait_s / 3600, 2),
           Fixed(tr.p95_wait_s / 3600, 2), Fixed(tr.p99_wait_s / 3600, 2),
           Fixed(tr.gpu_hours, 0), std::to_string(tr.preempted)});
  }
  std::cout << (opt.partitioned ? "partitioned" : "pooled") << ", " << r->capacity_gpus
            << " GPUs, policy " << opt.scheduler.placement << ", capacity scale "
            << opt.capacity_scale << "\n";
  t.Print(std::cout);
  std::cout << "overall: avg JCT " << Fixed(r->avg_jct_s / 3600, 2) << " h, p95 wait "
            << Fixed(r->p95_wait_s / 3600, 2) << " h, utilization " << Fixed(r->utilization_pct, 1)
            << "%, makespan " << Fixed(r->makespan_s / 86400, 1) << " d, Jain "
            << Fixed(r->jain_fairness, 3) << ", preemptions " << r->preemptions << ", "
            << r->cycles << " cycles in " << Fixed(wall, 1) << " s\n";
  const bool timing = !args->Has("no-timing");
  if (args->Has("json") &&
      !WriteFile(args->Str("json", ""), ReplayJson(*r, opt, args->Str("jobs", ""), wall, timing))) {
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
  if (argv.empty()) {
    std::cerr << "usage: gpupool sim replay|packing [FLAGS]\n";
    return 2;
  }
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  if (argv[0] == "replay") return Replay(rest);
  if (argv[0] == "packing") return Packing(rest);
  std::cerr << "gpupool sim: unknown experiment '" << argv[0] << "'\n";
  return 2;
}

}  // namespace gpupool::cli
