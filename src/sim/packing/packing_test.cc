// The packing experiment through Schedule(): protocol details, the offline reference, and golden
// runs on the real trace (when ../shared/traces is there). The policies' formulas are tested
// where they live (policy/placement/baselines_test.cc, scheduler/baselines_test.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "sim/packing/experiment.h"
#include "policy/placement/pairing.h"
#include "sim/packing/offline.h"

namespace gpupool::packing {
namespace {

OpenbPod Pod(std::string name, int num_gpu, int milli, int64_t cpu = 1000, int64_t mem = 1024,
             uint32_t models = 0) {
  return {std::move(name), cpu, mem, num_gpu, milli, models, ""};
}

OpenbTrace TinyTrace() {
  OpenbTrace t;
  t.models = {"A", "B"};
  for (int i = 0; i < 4; ++i) t.nodes.push_back({"n" + std::to_string(i), 32000, 65536, 2, i % 2});
  // 8 GPUs; requests: 6 pods summing to 4.5 GPUs.
  t.pods = {Pod("p1", 1, 1000), Pod("p2", 1, 500), Pod("p3", 2, 1000), Pod("p4", 1, 250),
            Pod("p5", 0, 0), Pod("p6", 1, 750)};
  return t;
}

TEST(Protocol, EveryPolicyRunsThroughTheDaemonsScheduler) {
  // The same pods in the same order, one Schedule() cycle each: every original fits (4.5 of 8
  // GPUs, with a CPU-only pod), the copies fill what is left.
  const OpenbTrace t = TinyTrace();
  for (const char* placement : {"fgd", "gpupool", "bestfit", "dotprod", "bestfit_host", "random", "clustering", "packing"}) {
    SCOPED_TRACE(placement);
    Result<SeedRun> r = RunSeed(t, placement, 42);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->rows.size(), static_cast<size_t>(r->pods));
    EXPECT_EQ(r->rows[5].used_milli, 4500) << "the six originals are all placed";
    EXPECT_LE(r->rows.back().used_milli, 8000);
    EXPECT_GE(r->rows.back().used_milli, 6000) << "the copies fill most of what is left";
    EXPECT_GT(r->failed, 0) << "the 130% of copies cannot all fit";
    // The same seed twice: the same rows.
    Result<SeedRun> again = RunSeed(t, placement, 42);
    ASSERT_TRUE(again.ok());
    for (size_t i = 0; i < r->rows.size(); ++i) ASSERT_EQ(again->rows[i].used_milli, r->rows[i].used_milli);
  }
  // A pod list with gpu_spec: each pod only on its models (a flavor per model).
  OpenbTrace spec = t;
  spec.pods.push_back(Pod("p7", 1, 1000, 1000, 1024, /*models=*/0b10));
  Result<SeedRun> r = RunSeed(spec, "fgd", 7);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(RunSeed(t, "magic", 42).ok());
  EXPECT_FALSE(RunSeed(t, "fgd", 42, 0).ok()) << "tune ratio out of range";
}

TEST(Protocol, RunOrderReportsWherePodsWent) {
  // Two 2-GPU nodes (n0 model A, n1 model B, by name), the priority reversed: ties go to n1.
  OpenbTrace t;
  t.models = {"A", "B"};
  for (int i = 0; i < 2; ++i) t.nodes.push_back({"n" + std::to_string(i), 32000, 65536, 2, i});
  t.pods = {Pod("a", 2, 1000), Pod("b", 1, 1000, 1000, 1024, /*models=*/0b01), Pod("c", 2, 1000)};
  std::vector<PodPlacement> placed;
  Result<SeedRun> r = RunOrder(t, t.pods, {1, 0}, "firstfit", 1, &placed);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(placed.size(), 3u);
  EXPECT_EQ(placed[0].node, 1);
  EXPECT_EQ(placed[0].gpus, 2);
  EXPECT_EQ(placed[1].node, 0) << "b accepts model A only";
  EXPECT_EQ(placed[1].gpus, 1);
  EXPECT_EQ(placed[2].node, -1) << "no node has 2 free GPUs left";
  EXPECT_EQ(r->failed, 1);
  EXPECT_FALSE(RunOrder(t, t.pods, {0}, "fgd", 1).ok()) << "a priority per node";
}

TEST(Protocol, ShuffleKeepsTheOriginalsAndTuneAppendsCopiesUpToTheTarget) {
  const OpenbTrace t = TinyTrace();
  std::vector<int> prio;
  const std::vector<OpenbPod> order = PodOrder(t, 42, 1.3, &prio);
  // The originals come first, as a permutation.
  std::vector<std::string> first;
  for (size_t i = 0; i < t.pods.size(); ++i) first.push_back(order[i].name);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<std::string>{"p1", "p2", "p3", "p4", "p5", "p6"}));
  // Then copies named after their source, until the GPU request reaches 1.3 x 8000 = 10400:
  // the stop test uses the per-GPU milli, so a 2-GPU copy can overshoot by at most 1000.
  int64_t total = 0;
  for (const OpenbPod& p : order) total += p.GpuMilliTotal();
  EXPECT_GT(order.size(), t.pods.size());
  EXPECT_LE(total, 10400 + 1000);
  for (size_t i = t.pods.size(); i < order.size(); ++i) {
    EXPECT_NE(order[i].name.find("-tuned-" + std::to_string(i - t.pods.size())), std::string::npos);
  }
  // The node priority is a permutation; the same seed gives the same order.
  std::vector<int> sorted = prio;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2, 3}));
  std::vector<int> again;
  const std::vector<OpenbPod> order2 = PodOrder(t, 42, 1.3, &again);
  ASSERT_EQ(order.size(), order2.size());
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i].name, order2[i].name);
  EXPECT_EQ(prio, again);
}

TEST(Protocol, WindowAveragesRowsWhoseArrivedPercentRoundsHalfToEven) {
  SeedRun run;
  run.capacity_milli = 1000;
  // arrived 99.5% rounds to 100 (half to even), 100.5% also to 100, 101.5% to 102.
  run.rows = {{995, 900}, {1005, 950}, {1015, 960}};
  const Curve c = Windowed(run);
  EXPECT_DOUBLE_EQ(c.unallocated_pct.at(100), 100.0 - (90.0 + 95.0) / 2);
  EXPECT_DOUBLE_EQ(c.unallocated_pct.at(102), 100.0 - 96.0);
  // 101 has no row of its own: the window widens to 100..102.
  EXPECT_DOUBLE_EQ(c.unallocated_pct.at(101), 100.0 - (90.0 + 95.0 + 96.0) / 3);
}

TEST(TypicalPods, SmallestPrefixCoveringTheShareWithCountOrder) {
  std::vector<OpenbPod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(Pod("a" + std::to_string(i), 1, 500));
  for (int i = 0; i < 3; ++i) pods.push_back(Pod("b" + std::to_string(i), 1, 1000));
  pods.push_back(Pod("c", 8, 1000));
  const std::vector<TypicalPod> t = TypicalPods(pods, 0.9);  // 9 of 10 pods
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].gpu_milli, 500);
  EXPECT_DOUBLE_EQ(t[0].p, 6.0 / 9.0);
  EXPECT_DOUBLE_EQ(t[1].p, 3.0 / 9.0);
  EXPECT_EQ(TypicalPods(pods, 1.0).size(), 3u);
}

TEST(Offline, StrandedLowerBound) {
  // Two 810 pods strand 2 x 190; one 160 pod can fill 160 of it: at least 220 stays unused.
  EXPECT_EQ(StrandedLowerBound({Pod("a", 1, 810), Pod("b", 1, 810), Pod("c", 1, 160)}), 220);
  EXPECT_EQ(StrandedLowerBound({Pod("a", 1, 500), Pod("b", 1, 1000)}), 0);
}

std::string TraceDir() {
  const char* env = std::getenv("GPUPOOL_TRACES");
  const std::string d = env != nullptr ? env : std::string(GPUPOOL_SOURCE_DIR) + "/../shared/traces";
  return std::filesystem::exists(d + "/alibaba-gpu-v2023-openb/csv") ? d : "";
}

TEST(Offline, TheReferencePlacesAtLeastWhatTheOnlineRunDoes) {
  // The arrival-order start is the online packing itself, so the best start and the repair can
  // only do as well or better; the tiny trace's 4.5 GPUs all fit (nothing unallocated beyond the
  // 3.5 GPUs never asked for by 100%).
  const OpenbTrace t = TinyTrace();
  Result<OfflineResult> off = OfflineReference(t, 42);
  ASSERT_TRUE(off.ok()) << off.error().message;
  Result<SeedRun> online = RunSeed(t, "gpupool", 42);
  ASSERT_TRUE(online.ok());
  int64_t used = 0;  // online, over the same pods: those that arrived by 100%
  for (const PodRecord& row : online->rows) {
    if (row.arrived_milli <= online->capacity_milli) used = row.used_milli;
  }
  EXPECT_LE(off->unallocated_pct, 100.0 - 100.0 * static_cast<double>(used) / 8000.0 + 1e-9);
  EXPECT_GE(off->unallocated_pct, off->lower_bound_pct);
}

Result<OpenbTrace> DefaultList(const std::string& dir) {
  const std::string csv = dir + "/alibaba-gpu-v2023-openb/csv/";
  return LoadOpenb(csv + "openb_node_list_gpu_node.csv", csv + "openb_pod_list_default.csv");
}

TEST(Golden, DefaultListSeed42) {
  const std::string dir = TraceDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/traces not found (set GPUPOOL_TRACES)";
  Result<OpenbTrace> t = DefaultList(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->nodes.size(), 1213u);
  EXPECT_EQ(t->TotalGpuMilli(), 6212000);
  EXPECT_EQ(t->pods.size(), 8152u);
  // Pinned results of seed 42 through Schedule() (docs/benchmarks.md): a change here is a
  // change of behaviour. FGD must also stay within 0.5 pp of the published 10-seed mean of 4.77
  // at 100%.
  Result<SeedRun> fgd = RunSeed(*t, "fgd", 42);
  Result<SeedRun> ours = RunSeed(*t, "gpupool", 42);
  ASSERT_TRUE(fgd.ok() && ours.ok());
  const double f = Windowed(*fgd).unallocated_pct.at(100);
  const double g = Windowed(*ours).unallocated_pct.at(100);
  EXPECT_NEAR(f, 4.813, 0.001);
  EXPECT_NEAR(g, 3.897, 0.001);  // 4.031 with the best-fit-decreasing pairing table
  EXPECT_LT(std::abs(f - 4.77), 0.5);
  EXPECT_LT(g, 4.77) << "below published FGD";
}

TEST(Golden, TheKeptSessionPlansAsScheduleDoesForEveryPolicy) {
  // The experiment keeps its session between one-pod cycles (KeptScheduler). Every 29th cycle
  // of seed 43 on the default list, the kept session must equal one rebuilt from the state, and
  // the cycle's plan Schedule()'s own (the run aborts where either differs): every policy, and
  // a gpu_spec-style run (several flavors) on the tiny trace at every cycle.
  const std::string dir = TraceDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/traces not found (set GPUPOOL_TRACES)";
  Result<OpenbTrace> t = DefaultList(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  for (const char* placement : {"fgd", "gpupool", "bestfit", "dotprod", "bestfit_host", "random", "clustering", "packing"}) {
    SCOPED_TRACE(placement);
    Result<SeedRun> r = RunSeed(*t, placement, 43, 1.3, /*check_every=*/29);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_GT(r->pods - r->failed, 8000) << "most pods are placed";
  }
  OpenbTrace spec = TinyTrace();
  spec.pods.push_back(Pod("p7", 1, 1000, 1000, 1024, /*models=*/0b10));
  spec.pods.push_back(Pod("p8", 1, 500, 1000, 1024, /*models=*/0b01));
  for (const char* placement : {"fgd", "gpupool", "clustering"}) {
    SCOPED_TRACE(placement);
    ASSERT_TRUE(RunSeed(spec, placement, 7, 1.3, /*check_every=*/1).ok());
  }
}

TEST(Golden, MinimumBinSlackPacksTheDefaultListsFractionsInTheFewestGpus) {
  const std::string dir = TraceDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/traces not found (set GPUPOOL_TRACES)";
  Result<OpenbTrace> t = DefaultList(dir);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::vector<int> fractions;
  for (const OpenbPod& p : t->pods) {
    if (p.num_gpu == 1 && p.gpu_milli > 0 && p.gpu_milli < kMilliPerGpu) fractions.push_back(p.gpu_milli);
  }
  ASSERT_EQ(fractions.size(), 3078u);
  // 1,965 is the optimum: an integer program over every maximal pattern of the 20 sizes (GLPK,
  // docs/benchmarks.md) needs as many. Best fit decreasing needs 1,975.
  EXPECT_EQ(MinimumBinSlack(fractions).size(), 1965u);
  EXPECT_EQ(BestFitDecreasing(fractions).size(), 1975u);
}

}  // namespace
}  // namespace gpupool::packing
