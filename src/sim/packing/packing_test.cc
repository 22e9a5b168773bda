// The packing experiment: protocol details, the published policies' scores on hand-made nodes,
// and golden runs on the real trace (when ../shared/traces is there).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "sim/packing/experiment.h"
#include "sim/packing/gap_waste.h"
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

TEST(ThroughSchedule, TheProtocolRunsThroughTheDaemonsScheduler) {
  // The same pods in the same order, one Schedule() cycle each: every original fits (4.5 of 8
  // GPUs, with a CPU-only pod), the copies fill what is left, and the run reads as RunSeed's.
  const OpenbTrace t = TinyTrace();
  for (const char* placement : {"schedule:fgd", "schedule:gpupool", "schedule:bestfit"}) {
    SCOPED_TRACE(placement);
    Result<SeedRun> r = RunSeed(t, placement, 42);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->rows.size(), static_cast<size_t>(r->pods));
    EXPECT_EQ(r->rows[5].used_milli, 4500) << "the six originals are all placed";
    EXPECT_LE(r->rows.back().used_milli, 8000);
    EXPECT_GE(r->rows.back().used_milli, 7000) << "the copies fill most of what is left";
    EXPECT_GT(r->failed, 0) << "the 130% of copies cannot all fit";
  }
  // A pod list with gpu_spec: each pod only on its models (a flavor per model).
  OpenbTrace spec = t;
  spec.pods.push_back(Pod("p7", 1, 1000, 1000, 1024, /*models=*/0b10));
  Result<SeedRun> r = RunSeed(spec, "schedule:fgd", 7);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(RunSeed(t, "schedule:magic", 42).ok());
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
  run.rows = {{995, 900, 0, 0}, {1005, 950, 0, 0}, {1015, 960, 0, 0}};
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

TEST(Fragmentation, CountsOnlyWhatATypeCannotUse) {
  NodeState n;
  n.model = 0;
  n.gpus = 2;
  n.cpu_left = 4000;
  n.mem_left = 1000;
  n.idle = {300, 1000};
  // Type 1: 500 milli fits GPU 1; GPU 0's 300 is a fragment. Type 2: lacks CPU: all 1300.
  // Type 3: a CPU-only type: all 1300. Type 4: needs model 1: all 1300.
  std::vector<TypicalPod> types(4);
  types[0] = {1000, 100, 500, 1, 0, "", 1, 0.25};
  types[1] = {8000, 100, 500, 1, 0, "", 1, 0.25};
  types[2] = {1000, 100, 0, 0, 0, "", 1, 0.25};
  types[3] = {1000, 100, 500, 1, 0b10, "B", 1, 0.25};
  EXPECT_DOUBLE_EQ(NodeFrag(n, types), 0.25 * 300 + 0.75 * 1300);
  EXPECT_DOUBLE_EQ(FragModel(types, false).Frag(n), NodeFrag(n, types));
  // With memory counted, type 1 needs 100 MiB: fits. At 50 MiB left it cannot use the node.
  n.mem_left = 50;
  EXPECT_DOUBLE_EQ(FragModel(types, true).Frag(n), 1300.0);
  EXPECT_DOUBLE_EQ(FragModel(types, false).Frag(n), 0.25 * 300 + 0.75 * 1300);
}

NodeState Node2(int32_t g0, int32_t g1, int64_t cpu = 64000) {
  NodeState n;
  n.gpus = 2;
  n.cpu_left = cpu;
  n.mem_left = 1 << 20;
  n.idle = {g0, g1};
  return n;
}

int64_t ScoreOf(const std::string& policy, const NodeState& n, const OpenbPod& p) {
  std::vector<NodeState> nodes = {n};
  std::vector<TypicalPod> types = TypicalPods({p});
  std::vector<OpenbPod> originals = {p};
  PolicyContext ctx{&nodes, &types, &originals, 1};
  std::unique_ptr<PackPolicy> pol = std::move(MakePackPolicy(policy, ctx).value());
  GpuPick pick;
  return pol->Score(0, n, p, pick);
}

TEST(PublishedPolicies, ScoresFollowTheSimulatorsFormulas) {
  const OpenbPod frac = Pod("f", 1, 300, 16000);
  // GpuPacking: a fully idle 2-GPU node scores max(33 - 2, 2) = 31; a node whose fitting GPU is
  // partly used (idle 500, the 300 pod takes it) scores max(100 - (50)/10, 50) = 95.
  EXPECT_EQ(ScoreOf("packing", Node2(1000, 1000), frac), 31);
  EXPECT_EQ(ScoreOf("packing", Node2(500, 0), frac), 95);
  // BestFit: s = 0.5 (64000-16000)/128000 + 0.5 (1500-300)/8000 = 0.1875 + 0.075 -> 73.
  EXPECT_EQ(ScoreOf("bestfit", Node2(500, 1000), frac), 73);
  // DotProd: d = (0.5 * 0.125 + 0.1875 * 0.0375) / 2 = 0.03476 -> int(96.52) = 96.
  EXPECT_EQ(ScoreOf("dotprod", Node2(500, 1000), frac), 96);
  // GpuClustering on an empty node: base = 25 * (8000 - 2000) / 8000 = 18, +25 = 43.
  EXPECT_EQ(ScoreOf("clustering", Node2(1000, 1000), frac), 43);
}

// gpupool's score of `p` on each node, with `originals` as the workload.
std::vector<int64_t> GpupoolScores(const std::vector<NodeState>& nodes, const OpenbPod& p,
                                   const std::vector<OpenbPod>& originals) {
  std::vector<TypicalPod> types = TypicalPods(originals);
  PolicyContext ctx{&nodes, &types, &originals, 1};
  std::unique_ptr<PackPolicy> pol = std::move(MakePackPolicy("gpupool", ctx).value());
  std::vector<int64_t> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    GpuPick pick;
    out.push_back(pol->Score(static_cast<int>(i), nodes[i], p, pick));
  }
  return out;
}

NodeState Node4(int64_t cpu) {
  NodeState n;
  n.gpus = 4;
  n.cpu_left = cpu;
  n.mem_left = 1 << 20;
  n.idle = {1000, 1000, 1000, 1000};
  return n;
}

TEST(GpupoolPolicy, StrandingDrawsLeanPodsToCpuShortNodes) {
  // The workload's GPU pods need (8000 + 1000) / 2000 = 4.5 CPU milli per GPU milli. Node a has
  // 4 idle GPUs but CPU for 2 (9000 / 4.5 = 2000 milli); node b has plenty.
  const OpenbPod heavy = Pod("heavy", 1, 1000, 8000), lean = Pod("lean", 1, 1000, 1000);
  const std::vector<OpenbPod> originals = {heavy, lean};
  const std::vector<NodeState> nodes = {Node4(9000), Node4(128000)};
  // The lean pod on a: 2000 usable before, min(3000, 8000 / 4.5) = 1778 after, for the 1000 it
  // takes: -778 milli stranded, a better gradient than b's 0. The heavy pod on a would leave
  // CPU for 222 milli of the 3 GPUs, and no CPU for its own type: b is better.
  const std::vector<int64_t> l = GpupoolScores(nodes, lean, originals);
  const std::vector<int64_t> h = GpupoolScores(nodes, heavy, originals);
  EXPECT_GT(l[0], l[1]);
  EXPECT_LT(h[0], h[1]);
}

TEST(GpupoolPolicy, CpuOnlyPodsGoWhereTheyStrandNoGpu) {
  // 8 CPU milli per GPU milli. Node a has one idle GPU and exactly its CPU; node b has two idle
  // GPUs and CPU to spare. The old rule (least idle GPU first) chose a, stranding 750 milli.
  const OpenbPod gpu = Pod("g", 1, 1000, 8000), cpu_only = Pod("c", 0, 0, 6000);
  NodeState a;
  a.gpus = 2;
  a.cpu_left = 8000;
  a.mem_left = 1 << 20;
  a.idle = {0, 1000};
  NodeState b = a;
  b.cpu_left = 64000;
  b.idle = {1000, 1000};
  const std::vector<int64_t> s = GpupoolScores({a, b}, cpu_only, {gpu, cpu_only});
  EXPECT_LT(s[0], s[1]);
}

TEST(GapWaste, BestFitDecreasingPairsTheWorkload) {
  // Largest first, each into the fullest GPU it fits: 370 takes the 590's 410 free, not the
  // 650's 350 (too small); 320 takes the 650's; 160 fits nowhere any more (30, 40, 60 free).
  EXPECT_EQ(BestFitDecreasing({160, 320, 370, 470, 470, 590, 650}),
            (std::vector<std::vector<int>>{{650, 320}, {590, 370}, {470, 470}, {160}}));
}

TEST(GapWaste, MeanFinalWasteOfTheGpusThatPassedThroughTheGap) {
  // One GPU packs 650 + 320 and wastes 30, whichever pod came first; 210 free never occurs in
  // the packing and counts as wasted whole; a free GPU wastes nothing.
  const GapWaste w = GapWasteOf({Pod("a", 1, 650), Pod("b", 1, 320), Pod("c", 1, 1000), Pod("d", 0, 0)});
  EXPECT_DOUBLE_EQ(w(350), 30);
  EXPECT_DOUBLE_EQ(w(680), 30);
  EXPECT_DOUBLE_EQ(w(30), 30);
  EXPECT_DOUBLE_EQ(w(210), 210);
  EXPECT_DOUBLE_EQ(w(1000), 0);
  // Three 810s and one 160: GPUs {810, 160} (30 left) and {810} twice (190 left). A GPU with
  // 190 free ended with 30 once and 190 twice.
  const GapWaste v = GapWasteOf({Pod("a", 1, 810), Pod("b", 1, 810), Pod("c", 1, 810), Pod("d", 1, 160)});
  EXPECT_DOUBLE_EQ(v(190), (30.0 + 190 + 190) / 3);
  EXPECT_DOUBLE_EQ(v(840), 30);
  // Two equal pods on one GPU: both subsets of one pod give 530 free.
  const GapWaste u = GapWasteOf({Pod("a", 1, 470), Pod("b", 1, 470)});
  EXPECT_DOUBLE_EQ(u(530), 60);
}

TEST(GpupoolPolicy, PairingPutsAFractionWhereLittleIsLeftForGood) {
  // A 320 pod and three nodes with one GPU left each: beside a 650 (350 free), free, or beside a
  // 470 (530 free). The workload pairs 650 + 320, 590 + 370 and 470 + 470. Beside the 650 the GPU
  // ends with 30 free; on the free GPU a 650 can still join it; beside the 470 it keeps 210 that
  // nothing in the workload fills. FGD's gradient alone prefers the 470 to the free GPU.
  const std::vector<OpenbPod> originals = {Pod("a", 1, 650), Pod("b", 1, 320), Pod("c", 1, 590),
                                           Pod("d", 1, 370), Pod("e", 1, 470), Pod("f", 1, 470),
                                           Pod("g", 1, 1000), Pod("h", 1, 1000)};
  NodeState beside650 = Node4(128000);
  beside650.idle = {0, 350, 0, 0};
  NodeState free = beside650, beside470 = beside650;
  free.idle[1] = 1000;
  beside470.idle[1] = 530;
  const std::vector<int64_t> s =
      GpupoolScores({beside650, free, beside470}, Pod("x", 1, 320), originals);
  EXPECT_GT(s[0], s[1]);
  EXPECT_GT(s[1], s[2]);
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

TEST(Golden, DefaultListSeed42) {
  const std::string dir = TraceDir();
  if (dir.empty()) GTEST_SKIP() << "../shared/traces not found (set GPUPOOL_TRACES)";
  Result<OpenbTrace> t = LoadOpenb(dir + "/alibaba-gpu-v2023-openb/csv/openb_node_list_gpu_node.csv",
                                   dir + "/alibaba-gpu-v2023-openb/csv/openb_pod_list_default.csv");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->nodes.size(), 1213u);
  EXPECT_EQ(t->TotalGpuMilli(), 6212000);
  EXPECT_EQ(t->pods.size(), 8152u);
  // Pinned results of seed 42 (docs/benchmarks.md): a change here is a change of behaviour.
  // FGD must also stay within 0.5 pp of the published 10-seed mean of 4.77 at 100%.
  Result<SeedRun> fgd = RunSeed(*t, "fgd", 42);
  Result<SeedRun> ours = RunSeed(*t, "gpupool", 42);
  ASSERT_TRUE(fgd.ok() && ours.ok());
  const double f = Windowed(*fgd).unallocated_pct.at(100);
  const double g = Windowed(*ours).unallocated_pct.at(100);
  EXPECT_NEAR(f, 4.78, 0.005);
  EXPECT_NEAR(g, 4.02, 0.005);  // 4.52 before the stranding term, 4.15 before pairing (issue 3)
  EXPECT_LT(std::abs(f - 4.77), 0.5);
  // The offline reference's paired order leaves lone 810s out for whole-GPU pods: well below
  // the online run (the three other orders alone gave 4.13 on average, no better than online).
  Result<OfflineResult> off = OfflineReference(*t, 42);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->best_order, "paired");
  EXPECT_NEAR(off->unallocated_pct, 3.47, 0.005);
  // The same seed twice: the same rows.
  Result<SeedRun> again = RunSeed(*t, "gpupool", 42);
  ASSERT_EQ(again->rows.size(), ours->rows.size());
  for (size_t i = 0; i < ours->rows.size(); ++i) {
    ASSERT_EQ(again->rows[i].used_milli, ours->rows[i].used_milli) << "pod " << i;
  }
}

}  // namespace
}  // namespace gpupool::packing
