// GET /v1/jobs and GET /v1/audit on a long-lived daemon: 100,000 jobs and as many audit
// entries, in ControlPlane (no HTTP), the whole list against one page of 50 (docs/benchmarks.md,
// "Daemon"). Tenants research and product submit 99% of the jobs in turn, interns every
// hundredth: a page of interns' jobs walks past about 100 jobs of others per job it returns.
// Reports the time per reply, serialisation included; it passes or fails on nothing.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "api/page.h"
#include "daemon/control_plane.h"
#include "model/demo_cluster.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;
using Query = std::map<std::string, std::string>;
constexpr int kJobs = 100000;

struct Fixture {
  std::unique_ptr<ControlPlane> core;
  std::map<std::string, Principal> members, admins;
  Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
};

Fixture& Loaded() {
  static Fixture* f = [] {
    auto* out = new Fixture;
    const auto dir = std::filesystem::temp_directory_path() / ("gpupool-list-bench-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    Result<std::unique_ptr<Journal>> journal = OpenSqliteJournal((dir / "journal.db").string());
    GP_CHECK(journal.ok());
    Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*journal), SchedulerConfig());
    GP_CHECK(core.ok());
    out->core = std::move(*core);
    GP_CHECK(out->core->Bootstrap(DemoCluster(), Time::FromMillis(1000)).ok());
    for (const char* t : {"research", "product", "interns"}) {
      const TenantId id = *out->core->state().FindTenant(t);
      out->members[t] = {std::string(t) + "-bob", Role::kMember, id, std::string(t) + "-bob-token"};
      out->admins[t] = {std::string(t) + "-admin", Role::kTenantAdmin, id, std::string(t) + "-admin-token"};
    }
    for (int i = 0; i < kJobs; ++i) {
      const std::string t = i % 100 == 99 ? "interns" : i % 2 ? "research" : "product";
      const std::string body =
          Json({{"tenant", t}, {"name", "job-" + std::to_string(i)}, {"priority_class", "batch"}, {"replicas", 1},
                {"resources", {{"flavor", "h100-80gb"}, {"gpus", 1}}}, {"duration_estimate_s", 600},
                {"command", {"python", "train.py", "--seed", std::to_string(i)}}})
              .dump();
      const CallContext c{&out->members[t], "127.0.0.1", Time::FromMillis(2000 + i)};
      GP_CHECK(out->core->SubmitJob(c, body, "").status == 201);
      if (i % 10000 == 9999) GP_CHECK(out->core->Flush().ok());
    }
    GP_CHECK(out->core->Flush().ok());
    return out;
  }();
  return *f;
}

// `who`: "admin", or a tenant's member (jobs) or tenant admin (audit).
void Run(benchmark::State& st, bool audit, const std::string& who, Query q) {
  Fixture& f = Loaded();
  const Principal& p = who == "admin" ? f.admin : audit ? f.admins[who] : f.members[who];
  const CallContext c{&p, "127.0.0.1", Time::FromMillis(1000000)};
  if (q.count("cursor")) q["cursor"] = EncodeCursor(audit ? "audit" : "jobs", kJobs / 2);  // halfway down
  size_t bytes = 0, items = 0;
  for (auto _ : st) {
    const Reply r = audit ? f.core->ListAudit(c, q) : f.core->ListJobs(c, q);
    GP_CHECK(r.status == 200) << r.body;
    bytes = r.body.size();
    benchmark::DoNotOptimize(bytes);
  }
  items = Json::parse(audit ? f.core->ListAudit(c, q).body : f.core->ListJobs(c, q).body)["items"].size();
  st.counters["items"] = static_cast<double>(items);
  st.counters["reply_kb"] = static_cast<double>(bytes) / 1024;
}

const Query kPage = {{"limit", "50"}};
const Query kMid = {{"limit", "50"}, {"cursor", "mid"}};

BENCHMARK_CAPTURE(Run, jobs_all_admin, false, "admin", Query{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Run, jobs_page_admin, false, "admin", kPage)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, jobs_page_admin_mid, false, "admin", kMid)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, jobs_all_research, false, "research", Query{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Run, jobs_page_research, false, "research", kPage)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, jobs_page_research_pending, false, "research", (Query{{"limit", "50"}, {"state", "pending"}}))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, jobs_page_interns, false, "interns", kPage)->Unit(benchmark::kMicrosecond);
// The worst case: a filter nothing matches walks the whole list to find that out.
BENCHMARK_CAPTURE(Run, jobs_page_running_none, false, "admin", (Query{{"limit", "50"}, {"state", "running"}}))
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, audit_all_admin, true, "admin", Query{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Run, audit_page_admin, true, "admin", kPage)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, audit_page_admin_mid, true, "admin", kMid)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, audit_all_research, true, "research", Query{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Run, audit_page_research, true, "research", kPage)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Run, audit_page_interns, true, "interns", kPage)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpupool

BENCHMARK_MAIN();
