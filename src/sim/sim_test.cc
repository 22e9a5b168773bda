#include <gtest/gtest.h>

#include <cstdlib>

#include "sim/csv.h"
#include "sim/json.h"
#include "sim/replay.h"

namespace gpupool {
namespace {

TEST(Csv, ParsesHeaderAndRejectsRaggedRows) {
  Result<CsvTable> t = CsvTable::Parse("a,b\n1,x\n2,y\n", {"a", "b"}, "mem");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows(), 2u);
  EXPECT_EQ(*t->Int(1, "a"), 2);
  EXPECT_EQ(t->Field(0, "b"), "x");
  EXPECT_FALSE(t->Int(0, "b").ok());
  EXPECT_FALSE(CsvTable::Parse("a,b\n1\n", {"a"}, "mem").ok());
  EXPECT_FALSE(CsvTable::Parse("a,b\n1,2\n", {"c"}, "mem").ok());
  EXPECT_FALSE(CsvTable::Parse("a\n\"x\"\n", {"a"}, "mem").ok());
}

TEST(Json, WritesNestedValuesDeterministically) {
  JsonWriter w;
  w.BeginObject().Key("a").Int(1).Key("b").BeginArray().Number(0.5, 2).String("x\"y").EndArray();
  w.Key("c").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), "{\n  \"a\": 1,\n  \"b\": [\n    0.50,\n    \"x\\\"y\"\n  ],\n  \"c\": {}\n}\n");
}

TEST(Stats, PercentileByNearestRankAndJain) {
  EXPECT_EQ(Percentile({}, 95), 0);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 50), 3);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 100), 5);
  EXPECT_EQ(Percentile({5, 1, 3, 2, 4}, 1), 1);
  EXPECT_DOUBLE_EQ(JainIndex({2, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({1, 0}), 0.5);
}

TEST(Replay, PoolingLetsAnIdleGuaranteeBeBorrowed) {
  // Tenant a has 8 GPUs guaranteed, b has 8. a submits two 8-GPU jobs of 1 h at t=0; b nothing.
  // Partitioned, a's second job waits an hour; pooled, it borrows b's idle node at once.
  std::vector<TraceTenant> tenants = {{"a", 8, 1000}, {"b", 8, 1000}};
  std::vector<TraceJob> jobs = {{"a", 1, 0, 8, 3600}, {"a", 2, 0, 8, 3600}};
  ReplayOptions pooled, partitioned;
  partitioned.partitioned = true;
  Result<ReplayReport> p = RunReplay(jobs, tenants, pooled, {});
  Result<ReplayReport> q = RunReplay(jobs, tenants, partitioned, {});
  ASSERT_TRUE(p.ok() && q.ok());
  EXPECT_EQ(p->tenants.at("a").finished, 2);
  EXPECT_DOUBLE_EQ(p->avg_jct_s, 3600);
  EXPECT_DOUBLE_EQ(p->makespan_s, 3600);
  EXPECT_DOUBLE_EQ(q->avg_jct_s, 5400);  // (3600 + 7200) / 2
  EXPECT_DOUBLE_EQ(q->tenants.at("a").p95_wait_s, 3600);
  EXPECT_EQ(p->capacity_gpus, 16);
}

TEST(Replay, OwnerReclaimsItsGuarantee) {
  // a borrows all 16 GPUs with two long jobs; b arrives later for its 8: one of a's jobs is
  // preempted (after the minimum runtime) and resumes when b is done.
  std::vector<TraceTenant> tenants = {{"a", 8, 1000}, {"b", 8, 1000}};
  std::vector<TraceJob> jobs = {{"a", 1, 0, 8, 36000}, {"a", 2, 0, 8, 36000}, {"b", 1, 3600, 8, 3600}};
  ReplayOptions opt;
  Result<ReplayReport> r = RunReplay(jobs, tenants, opt, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_EQ(r->tenants.at("b").p95_wait_s, 0);
  EXPECT_EQ(r->tenants.at("a").finished, 2);
  // The preempted job lost no work (checkpointing) but waited b's hour: it ends at 36000 + 3600.
  EXPECT_DOUBLE_EQ(r->makespan_s, 39600);
}

TEST(ReplayGolden, PhillySliceSharingIncentive) {
  // The first 20 days of the real trace at half capacity: pooling must not make any tenant's
  // p95 wait worse than its own partition (the sharing-incentive property), the same input must
  // give the same report, and the pinned figures must not drift unnoticed.
  const char* env = std::getenv("GPUPOOL_TRACES");
  const std::string dir = (env != nullptr ? std::string(env)
                                          : std::string(GPUPOOL_SOURCE_DIR) + "/../shared/traces") +
                          "/philly-pcs-per-vc";
  Result<std::vector<TraceJob>> all = LoadTraceJobs(dir + "/philly_pcs_shared_jobs.csv");
  Result<std::vector<TraceTenant>> tenants = LoadTraceTenants(dir + "/tenants.csv");
  if (!all.ok() || !tenants.ok()) GTEST_SKIP() << "../shared/traces not found (set GPUPOOL_TRACES)";
  std::vector<TraceJob> jobs;
  for (const TraceJob& j : *all) {
    if (j.submit_s < 20 * 86400) jobs.push_back(j);
  }
  ReplayOptions pooled, partitioned;
  pooled.capacity_scale = partitioned.capacity_scale = 0.5;
  partitioned.partitioned = true;
  Result<ReplayReport> p = RunReplay(jobs, *tenants, pooled, {});
  Result<ReplayReport> q = RunReplay(jobs, *tenants, partitioned, {});
  Result<ReplayReport> p2 = RunReplay(jobs, *tenants, pooled, {});
  ASSERT_TRUE(p.ok() && q.ok() && p2.ok());
  for (const auto& [name, t] : p->tenants) {
    EXPECT_LE(t.p95_wait_s, q->tenants.at(name).p95_wait_s) << name;
    EXPECT_EQ(t.p95_wait_s, p2->tenants.at(name).p95_wait_s) << name;
  }
  EXPECT_LT(p->avg_jct_s, q->avg_jct_s);
  EXPECT_EQ(p->preemptions, p2->preemptions);
  EXPECT_EQ(p->cycles, p2->cycles);
  EXPECT_EQ(p->capacity_gpus, 1028);
}

}  // namespace
}  // namespace gpupool
