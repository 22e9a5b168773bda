// load_bench: concurrent clients submitting durable jobs to a running `gpupool serve`.
//
// Each client is one thread with one keep-alive connection, using the member token of one
// tenant (one token per tenant, clients assigned to tenants round robin); it POSTs /v1/jobs back to back, each with an
// Idempotency-Key, and times every request until the 201 arrives, which the daemon sends only
// once the job is in the journal. A monitor thread samples GET /v1/summary to see whether the
// scheduler keeps up (the pending queue stays short, jobs are admitted as fast as they come).
// After the storm it waits for the pending queue to drain and reads the daemon's own metrics.
//
// usage: load_bench --url URL --token ADMIN_TOKEN [--clients 32] [--seconds 20] [--warmup 3]
//                   [--gpus 1] [--duration-s 5] [--rate PER_CLIENT_PER_S] [--json OUT.json]
// Started by scripts/bench-daemon.sh, which also starts the daemon on a large cluster.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string url, token, json_out;
  int clients = 32;
  double seconds = 20, warmup = 3;
  int gpus = 1;
  int duration_s = 5;
  // Submissions per second per client, paced (an open loop: latency counts from when a request
  // was due, so a stall is not hidden by the requests it delayed); 0: back to back.
  double rate = 0;
};

[[noreturn]] void Die(const std::string& why) {
  std::cerr << "load_bench: " << why << "\n";
  std::exit(1);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--url") o.url = next();
    else if (a == "--token") o.token = next();
    else if (a == "--clients") o.clients = std::stoi(next());
    else if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--warmup") o.warmup = std::stod(next());
    else if (a == "--gpus") o.gpus = std::stoi(next());
    else if (a == "--duration-s") o.duration_s = std::stoi(next());
    else if (a == "--rate") o.rate = std::stod(next());
    else if (a == "--json") o.json_out = next();
    else Die("unknown argument " + a);
  }
  if (o.url.empty() || o.token.empty()) Die("--url and --token are required");
  if (o.clients < 1 || o.seconds <= 0 || o.warmup < 0) Die("bad --clients, --seconds or --warmup");
  return o;
}

httplib::Headers Auth(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

Json GetJson(httplib::Client& c, const std::string& path, const std::string& token) {
  auto r = c.Get(path, Auth(token));
  if (!r) Die("GET " + path + ": " + httplib::to_string(r.error()));
  if (r->status != 200) Die("GET " + path + ": " + std::to_string(r->status) + " " + r->body);
  return Json::parse(r->body);
}

// A sample of the daemon's Prometheus text: the value of an unlabelled series, or -1.
double Metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

struct Sample {
  double at_s;      // completion time since the start of the storm
  double latency_ms;
};

struct ClientResult {
  std::vector<Sample> ok;
  int64_t errors = 0;
  std::string first_error;
};

double Quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  httplib::Client admin(o.url);
  admin.set_read_timeout(30, 0);

  // One member token per tenant, and each tenant's first flavor.
  struct Tenant {
    std::string name, token, flavor;
  };
  std::vector<Tenant> tenants;
  const Json listed = GetJson(admin, "/v1/tenants", o.token);  // kept alive for the loop
  for (const Json& t : listed["items"]) {
    if (!t.contains("quotas") || t["quotas"].empty()) continue;
    const std::string name = t["name"];
    const Json body = {{"name", "load-" + name}, {"role", "member"}, {"tenant", name}};
    auto r = admin.Post("/v1/tokens", Auth(o.token), body.dump(), "application/json");
    if (!r || r->status != 201) Die("cannot create a member token for " + name);
    tenants.push_back({name, Json::parse(r->body)["token"], t["quotas"].begin().key()});
  }
  if (tenants.empty()) Die("no tenant with a quota");
  const std::string klass = GetJson(admin, "/v1/priority-classes", o.token)["items"][0]["name"];

  std::atomic<bool> stop{false};
  const Clock::time_point start = Clock::now();
  auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(t - start).count(); };
  const double end_s = o.warmup + o.seconds;

  std::vector<ClientResult> results(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < o.clients; ++i) {
    threads.emplace_back([&, i] {
      const Tenant& t = tenants[static_cast<size_t>(i) % tenants.size()];
      httplib::Client c(o.url);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      c.set_read_timeout(30, 0);
      ClientResult& out = results[static_cast<size_t>(i)];
      httplib::Headers h = Auth(t.token);
      for (int64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        const std::string key = "load-" + std::to_string(i) + "-" + std::to_string(n);
        const Json body = {{"tenant", t.name},
                           {"name", key},
                           {"priority_class", klass},
                           {"replicas", 1},
                           {"resources", {{"flavor", t.flavor}, {"gpus", o.gpus}}},
                           {"duration_estimate_s", o.duration_s},
                           {"command", {"sleep", std::to_string(o.duration_s)}}};
        h.erase("Idempotency-Key");
        h.emplace("Idempotency-Key", key);
        Clock::time_point sent = Clock::now();
        if (o.rate > 0) {
          // Due at a fixed schedule, each client with its own phase.
          const auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                       (static_cast<double>(n) + static_cast<double>(i) / o.clients) / o.rate));
          if (due > sent) std::this_thread::sleep_until(due);
          sent = due;
        }
        auto r = c.Post("/v1/jobs", h, body.dump(), "application/json");
        const Clock::time_point got = Clock::now();
        const double at = since(got);
        if (at > end_s) break;
        if (r && r->status == 201) {
          if (at >= o.warmup) out.ok.push_back({at, std::chrono::duration<double, std::milli>(got - sent).count()});
        } else {
          ++out.errors;
          if (out.first_error.empty()) {
            out.first_error = (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error())) +
                              " at " + std::to_string(at) + " s after " +
                              std::to_string(std::chrono::duration<double, std::milli>(got - sent).count()) +
                              " ms, request " + std::to_string(n) + " of client " + std::to_string(i);
          }
        }
      }
    });
  }

  // The scheduler keeps up when the pending queue stays short while jobs pour in.
  int64_t max_pending = 0, samples = 0;
  double sum_pending = 0;
  {
    httplib::Client mon(o.url);
    mon.set_keep_alive(true);
    mon.set_read_timeout(30, 0);
    while (since(Clock::now()) < end_s) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      if (since(Clock::now()) < o.warmup) continue;
      const Json s = GetJson(mon, "/v1/summary", o.token);
      const int64_t p = s["pending_jobs"];
      max_pending = std::max(max_pending, p);
      sum_pending += static_cast<double>(p);
      ++samples;
    }
  }
  stop = true;
  for (std::thread& t : threads) t.join();

  // Drain: how long until every submitted job has been considered and admitted.
  const Clock::time_point drain_start = Clock::now();
  Json summary;
  do {
    summary = GetJson(admin, "/v1/summary", o.token);
    if (summary["pending_jobs"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::duration<double>(Clock::now() - drain_start).count() < 60);
  const double drain_s = std::chrono::duration<double>(Clock::now() - drain_start).count();

  auto m = admin.Get("/metrics");
  const std::string metrics = m && m->status == 200 ? m->body : "";
  const double cycles = Metric(metrics, "gpupool_scheduling_cycle_seconds_count");
  const double cycle_sum = Metric(metrics, "gpupool_scheduling_cycle_seconds_sum");
  const double flushes = Metric(metrics, "gpupool_journal_flush_seconds_count");
  const double flush_sum = Metric(metrics, "gpupool_journal_flush_seconds_sum");
  const double records = Metric(metrics, "gpupool_journal_records_total");

  std::vector<double> lat;
  int64_t errors = 0;
  std::string first_error;
  for (const ClientResult& r : results) {
    for (const Sample& s : r.ok) lat.push_back(s.latency_ms);
    errors += r.errors;
    if (!r.first_error.empty()) std::fprintf(stderr, "error: %s\n", r.first_error.c_str());
    if (first_error.empty()) first_error = r.first_error;
  }
  const double rate = static_cast<double>(lat.size()) / o.seconds;
  const double p50 = Quantile(lat, 0.50), p90 = Quantile(lat, 0.90), p99 = Quantile(lat, 0.99);
  const double pmax = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());

  Json out = {{"clients", o.clients},
              {"seconds", o.seconds},
              {"acknowledged", lat.size()},
              {"acknowledged_per_s", rate},
              {"latency_ms", {{"p50", p50}, {"p90", p90}, {"p99", p99}, {"max", pmax}}},
              {"errors", errors},
              {"pending_during_storm", {{"max", max_pending}, {"mean", samples ? sum_pending / static_cast<double>(samples) : 0}}},
              {"pending_after", summary["pending_jobs"]},
              {"drain_s", drain_s},
              {"active_after", summary["active_jobs"]},
              {"scheduling_cycles", cycles},
              {"mean_cycle_ms", cycles > 0 ? 1000 * cycle_sum / cycles : 0},
              {"journal_flushes", flushes},
              {"mean_flush_ms", flushes > 0 ? 1000 * flush_sum / flushes : 0},
              {"records_per_flush", flushes > 0 ? records / flushes : 0}};
  std::printf("clients %d, %.0f s measured after %.0f s warm-up, %zu tenants\n", o.clients, o.seconds, o.warmup,
              tenants.size());
  std::printf("acknowledged  %zu (%.0f/s), errors %lld\n", lat.size(), rate, static_cast<long long>(errors));
  std::printf("latency ms    p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", p50, p90, p99, pmax);
  std::printf("scheduler     pending during storm: max %lld, mean %.1f; after: %d pending, drained in %.2f s\n",
              static_cast<long long>(max_pending), samples ? sum_pending / static_cast<double>(samples) : 0.0,
              summary["pending_jobs"].get<int>(), drain_s);
  std::printf("daemon        %.0f cycles, mean %.2f ms; %.0f journal flushes, mean %.2f ms, %.1f records each\n",
              cycles, cycles > 0 ? 1000 * cycle_sum / cycles : 0, flushes, flushes > 0 ? 1000 * flush_sum / flushes : 0,
              flushes > 0 ? records / flushes : 0);
  if (!first_error.empty()) std::printf("first error   %s\n", first_error.c_str());
  if (!o.json_out.empty()) std::ofstream(o.json_out) << out.dump(2) << "\n";
  return errors == 0 ? 0 : 1;
}
