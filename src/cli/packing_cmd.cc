// `gpupool sim packing`: the FGD paper's packing experiment through the daemon's Schedule()
// (sim/packing/experiment.h), with the published figure for the same pod list and policy
// beside ours.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "sim/csv.h"
#include "sim/json.h"
#include "policy/placement/policies.h"
#include "sim/packing/experiment.h"
#include "sim/packing/offline.h"
#include "sim/report_svg.h"

namespace gpupool::cli {
namespace {

const int kLevels[] = {90, 95, 100, 105, 110, 120, 130};

// The paper's six policies by the names of the core's placement policies (the paper's BestFit
// sees CPU and GPU: bestfit_host), and the policies `--policy all` runs: those and gpupool.
const std::map<std::string, std::string>& PublishedName() {
  static const std::map<std::string, std::string> m = {
      {"random", "01-Random"},      {"dotprod", "02-DotProd"},        {"clustering", "03-GpuClustering"},
      {"packing", "04-GpuPacking"}, {"bestfit_host", "05-BestFit"}, {"fgd", "06-FGD"}};
  return m;
}
const std::vector<std::string> kAllPolicies = {"random",       "dotprod", "clustering", "packing",
                                               "bestfit_host", "fgd",     "gpupool"};

std::string Basename(const std::string& path) {
  std::string b = path.substr(path.find_last_of('/') + 1);
  if (b.size() > 4 && b.substr(b.size() - 4) == ".csv") b.resize(b.size() - 4);
  return b;
}

// Published unallocated % by (workload, policy, level), when the summary file is there.
std::map<std::tuple<std::string, std::string, int>, double> LoadPublished(const std::string& path) {
  std::map<std::tuple<std::string, std::string, int>, double> out;
  Result<CsvTable> t = CsvTable::Read(path, {"workload", "sc_policy", "arrived_pct",
                                             "unalloc_gpu_pct_mean"});
  if (!t.ok()) return out;
  for (size_t r = 0; r < t->rows(); ++r) {
    Result<int64_t> a = t->Int(r, "arrived_pct");
    Result<double> v = t->Real(r, "unalloc_gpu_pct_mean");
    if (a.ok() && v.ok()) out[{t->Field(r, "workload"), t->Field(r, "sc_policy"), static_cast<int>(*a)}] = *v;
  }
  return out;
}

Result<std::vector<uint64_t>> ParseSeeds(const std::string& s) {
  const size_t dash = s.find('-');
  char* end = nullptr;
  const unsigned long long lo = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return InvalidArgument("--seeds must look like 42-51 or 7");
  unsigned long long hi = lo;
  if (dash != std::string::npos) {
    const char* start = s.c_str() + dash + 1;
    hi = std::strtoull(start, &end, 10);
    if (end == start || *end != '\0') return InvalidArgument("--seeds must look like 42-51 or 7");
  } else if (*end != '\0') {
    return InvalidArgument("--seeds must look like 42-51 or 7");
  }
  if (hi < lo || hi - lo >= 1000) return InvalidArgument("--seeds: at most 1000, low to high");
  std::vector<uint64_t> v;
  for (unsigned long long x = lo; x <= hi; ++x) v.push_back(x);
  return v;
}

struct PolicyResult {
  std::string policy;
  std::vector<packing::SeedRun> runs;
  std::vector<packing::Curve> curves;
  double wall_s = 0;
  double Mean(int level) const {
    double sum = 0;
    for (const packing::Curve& c : curves) sum += c.unallocated_pct.at(level);
    return curves.empty() ? 0 : sum / static_cast<double>(curves.size());
  }
};

// Runs every (policy, seed) pair on `threads` threads; results in a fixed order.
Result<std::vector<PolicyResult>> RunAll(const packing::OpenbTrace& trace,
                                         const std::vector<std::string>& policies,
                                         const std::vector<uint64_t>& seeds, int threads) {
  std::vector<PolicyResult> results(policies.size());
  std::vector<std::pair<size_t, size_t>> work;
  for (size_t p = 0; p < policies.size(); ++p) {
    results[p].policy = policies[p];
    results[p].runs.resize(seeds.size());
    for (size_t s = 0; s < seeds.size(); ++s) work.push_back({p, s});
  }
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string error;
  const bool tty = isatty(2) != 0;
  std::atomic<size_t> done{0};
  std::vector<double> wall(policies.size(), 0.0);
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      const auto [p, s] = work[i];
      const auto t0 = std::chrono::steady_clock::now();
      Result<packing::SeedRun> r = packing::RunSeed(trace, policies[p], seeds[s]);
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu);
      if (!r.ok()) {
        error = r.error().message;
        continue;
      }
      results[p].runs[s] = std::move(*r);
      wall[p] += dt;
      const size_t d = ++done;
      if (tty) {
        const int pct = static_cast<int>(100 * d / work.size());
        std::fprintf(stderr, "\rpacking [%s%s] %3d%%", std::string(pct / 4, '#').c_str(),
                     std::string(25 - pct / 4, ' ').c_str(), pct);
        if (d == work.size()) std::fprintf(stderr, "\n");
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (!error.empty()) return InvalidArgument(error);
  for (size_t p = 0; p < policies.size(); ++p) {
    for (const packing::SeedRun& r : results[p].runs) results[p].curves.push_back(packing::Windowed(r));
    results[p].wall_s = wall[p];
  }
  return results;
}

std::string PackingJson(const PolicyResult& r, const std::vector<uint64_t>& seeds,
                        const std::string& workload, bool timing, const double* offline,
                        const double* bound) {
  JsonWriter w;
  w.BeginObject();
  w.Key("policy").String(r.policy);
  w.Key("workload").String(workload);
  w.Key("seeds").BeginArray();
  for (uint64_t s : seeds) w.Int(static_cast<int64_t>(s));
  w.EndArray();
  w.Key("unallocated_gpu_pct").BeginObject();
  for (int l : kLevels) w.Key(std::to_string(l)).Number(r.Mean(l), 3);
  w.EndObject();
  w.Key("unallocated_gpu_pct_per_seed").BeginObject();
  for (size_t s = 0; s < seeds.size(); ++s) {
    w.Key(std::to_string(seeds[s])).BeginObject();
    for (int l : kLevels) w.Key(std::to_string(l)).Number(r.curves[s].unallocated_pct.at(l), 3);
    w.EndObject();
  }
  w.EndObject();
  w.Key("failed_pods_per_seed").BeginObject();
  for (size_t s = 0; s < seeds.size(); ++s) {
    w.Key(std::to_string(seeds[s])).Int(r.runs[s].failed);
  }
  w.EndObject();
  if (offline != nullptr) {
    w.Key("offline_reference_unallocated_pct_100").Number(*offline, 3);
    w.Key("lower_bound_unallocated_pct_100").Number(*bound, 3);
  }
  if (timing) w.Key("wall_seconds").Number(r.wall_s, 2);
  w.EndObject();
  return w.str();
}

std::string PackingSvg(const std::vector<PolicyResult>& results, const std::string& workload) {
  static const char* kColors[] = {"#7f7f7f", "#8c564b", "#9467bd", "#2ca02c", "#ff7f0e", "#1f77b4", "#d62728"};
  std::vector<Series> series;
  for (size_t i = 0; i < results.size(); ++i) {
    Series s{results[i].policy, kColors[i % 7], {}};
    for (int a = 50; a <= 130; ++a) {
      double sum = 0;
      for (const packing::Curve& c : results[i].curves) sum += 100.0 - c.unallocated_pct.at(a);
      s.points.push_back({static_cast<double>(a), sum / static_cast<double>(results[i].curves.size())});
    }
    series.push_back(std::move(s));
  }
  return SvgDocument(800, 450, LinePlot({"GPU allocation vs arrived workload (" + workload + ")",
                                         "arrived GPU request, % of capacity",
                                         "allocated GPU, % of capacity", 50, 130, 50, 100, true},
                                        series, 0, 0, 800, 450));
}

}  // namespace

int Packing(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(
      argv, {"nodes", "pods", "policy", "seeds", "json", "csv", "svg", "threads", "published",
             "no-timing", "offline", "help"},
      {"no-timing", "offline", "help"});
  if (!args.ok()) {
    std::cerr << "gpupool sim packing: " << args.error().message << "\n" << kPackingUsage;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kPackingUsage;
    return 0;
  }
  if (!args->Has("nodes") || !args->Has("pods")) {
    std::cerr << "gpupool sim packing: --nodes and --pods are required\n" << kPackingUsage;
    return 2;
  }
  Result<std::vector<uint64_t>> seeds = ParseSeeds(args->Str("seeds", "42-51"));
  Result<int64_t> threads = args->Int("threads", 2, 1, 64);
  if (!seeds.ok() || !threads.ok()) {
    std::cerr << "gpupool sim packing: " << (seeds.ok() ? threads.error() : seeds.error()).message << "\n";
    return 2;
  }
  const std::string policy = args->Str("policy", "gpupool");
  std::vector<std::string> policies;
  if (policy == "all") {
    policies = kAllPolicies;
  } else {
    for (size_t at = 0; at <= policy.size();) {  // comma-separated
      const size_t comma = std::min(policy.find(',', at), policy.size());
      policies.push_back(policy.substr(at, comma - at));
      at = comma + 1;
    }
  }
  const std::vector<std::string_view>& placements = PlacementPolicyNames();
  for (const std::string& p : policies) {
    if (std::find(placements.begin(), placements.end(), p) == placements.end()) {
      std::string known;
      for (std::string_view n : placements) known += (known.empty() ? "" : ", ") + std::string(n);
      std::cerr << "gpupool sim packing: unknown policy '" << p << "' (known: " << known << ", or all)\n";
      return 2;
    }
  }
  Result<packing::OpenbTrace> trace = packing::LoadOpenb(args->Str("nodes", ""), args->Str("pods", ""));
  if (!trace.ok()) {
    std::cerr << "gpupool sim packing: " << trace.error().message << "\n";
    return 2;
  }
  const std::string pods = args->Str("pods", "");
  const std::string workload = Basename(pods);
  const std::string dir = pods.substr(0, pods.find_last_of('/') + 1);
  const auto published = LoadPublished(
      args->Str("published", dir + "../fgd_published_results/summary_unallocated_gpu_pct.csv"));
  Result<std::vector<PolicyResult>> results =
      RunAll(*trace, policies, *seeds, static_cast<int>(*threads));
  if (!results.ok()) {
    std::cerr << "gpupool sim packing: " << results.error().message << "\n";
    return 2;
  }
  std::cout << workload << ": " << trace->nodes.size() << " nodes, "
            << trace->TotalGpuMilli() / 1000 << " GPUs, " << trace->pods.size()
            << " pods (+ re-sampled copies to 130%), " << seeds->size() << " seeds\n";
  std::vector<std::string> header = {"policy"};
  for (int l : kLevels) header.push_back("@" + std::to_string(l) + "%");
  header.push_back("published @100%");
  header.push_back("ours - published");
  header.push_back("s/run");
  Table t(header);
  for (const PolicyResult& r : *results) {
    std::vector<std::string> row = {r.policy};
    for (int l : kLevels) row.push_back(Fixed(r.Mean(l), 2));
    auto it = PublishedName().find(r.policy);
    auto pub = it == PublishedName().end() ? published.end()
                                           : published.find({workload, it->second, 100});
    if (r.policy == "gpupool") pub = published.find({workload, "06-FGD", 100});
    row.push_back(pub == published.end() ? "-" : Fixed(pub->second, 2) + (r.policy == "gpupool" ? " (FGD)" : ""));
    row.push_back(pub == published.end() ? "-" : Fixed(r.Mean(100) - pub->second, 2));
    row.push_back(Fixed(r.wall_s / static_cast<double>(seeds->size()), 2));
    t.Row(row);
  }
  std::cout << "unallocated GPU % by arrived workload (mean of seeds; lower is better)\n";
  t.Print(std::cout);
  double offline = 0, bound = 0;
  if (args->Has("offline")) {
    for (uint64_t seed : *seeds) {
      Result<packing::OfflineResult> r = packing::OfflineReference(*trace, seed);
      if (!r.ok()) {
        std::cerr << "gpupool sim packing: " << r.error().message << "\n";
        return 2;
      }
      offline += r->unallocated_pct / static_cast<double>(seeds->size());
      bound += r->lower_bound_pct / static_cast<double>(seeds->size());
    }
    std::cout << "offline reference @100%: " << Fixed(offline, 2)
              << " (best greedy packing of the arrived pods found with hindsight, plus repair); "
                 "lower bound: "
              << Fixed(bound, 2) << "\n";
  }
  const bool timing = !args->Has("no-timing");
  if (args->Has("json")) {
    std::string text;
    if (results->size() == 1) {
      text = PackingJson(results->front(), *seeds, workload, timing,
                         args->Has("offline") ? &offline : nullptr, &bound);
    } else {
      text = "[\n";
      for (size_t i = 0; i < results->size(); ++i) {
        text += PackingJson((*results)[i], *seeds, workload, timing,
                            args->Has("offline") ? &offline : nullptr, &bound) +
                (i + 1 < results->size() ? ",\n" : "");
      }
      text += "]\n";
    }
    std::ofstream(args->Str("json", ""), std::ios::trunc) << text;
  }
  if (args->Has("csv")) {
    std::ofstream out(args->Str("csv", ""), std::ios::trunc);
    out << "policy,seed,arrived_pct,unallocated_gpu_pct\n";
    for (const PolicyResult& r : *results) {
      for (size_t s = 0; s < seeds->size(); ++s) {
        for (int l : kLevels) {
          out << r.policy << "," << (*seeds)[s] << "," << l << ","
              << Fixed(r.curves[s].unallocated_pct.at(l), 3) << "\n";
        }
      }
    }
  }
  if (args->Has("svg")) std::ofstream(args->Str("svg", ""), std::ios::trunc) << PackingSvg(*results, workload);
  return 0;
}

}  // namespace gpupool::cli
