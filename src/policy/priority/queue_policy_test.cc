#include "policy/priority/queue_policy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/builder.h"
#include "policy/priority/ordering.h"

namespace gpupool {
namespace {

class QueuePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    *AddTenant(s_, "a", {{"h100-80gb", {8}}});
    ASSERT_TRUE(AddNode(s_, "n", NodeTemplate{.flavor = "h100-80gb"}).ok());
  }
  JobId Pending(int gpus, Duration estimate, int submitted_s) {
    return *Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", gpus), .estimated = estimate},
                   Time::FromSeconds(submitted_s));
  }
  // Admits on GPUs [first, first + gpus) and starts at `started_s`.
  JobId Running(int gpus, Duration estimate, int started_s, uint16_t first = 0) {
    const JobId id = Pending(gpus, estimate, started_s);
    std::vector<GpuGrant> grants;
    for (int g = 0; g < gpus; ++g) grants.push_back({.gpu = static_cast<uint16_t>(first + g)});
    EXPECT_TRUE(Apply(s_, JobAdmitted{id, {{NodeId(0), grants}}, AdmissionKind::kGuaranteed,
                                      Time::FromSeconds(started_s)}).ok());
    EXPECT_TRUE(Apply(s_, JobStarted{id, Time::FromSeconds(started_s)}).ok());
    return id;
  }
  const Job& J(JobId id) { return *s_.FindJob(id); }
  const Catalogue& cat() { return s_.catalogue(); }
  State s_;
  QueuePolicyConfig cfg_;
};

TEST_F(QueuePolicyTest, ValidateRefusesBadSettings) {
  EXPECT_TRUE(Validate(cfg_).ok());
  QueuePolicyConfig c = cfg_;
  c.las_thresholds_gpu_s = {};
  EXPECT_FALSE(Validate(c).ok());
  c.las_thresholds_gpu_s = {100, 100};
  EXPECT_FALSE(Validate(c).ok());
  c.las_thresholds_gpu_s = {0, 100};
  EXPECT_FALSE(Validate(c).ok());
  c = cfg_;
  c.starvation_after = Duration();
  EXPECT_FALSE(Validate(c).ok());
  c = cfg_;
  c.max_preemptions_per_cycle = -1;
  EXPECT_FALSE(Validate(c).ok());
}

TEST_F(QueuePolicyTest, NamesRoundTripAndUnknownIsRefused) {
  for (QueueOrder o : {QueueOrder::kFifo, QueueOrder::kLas, QueueOrder::kSrsf, QueueOrder::kSjf}) {
    Result<QueueOrder> back = ParseQueueOrder(QueueOrderName(o));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, o);
  }
  Result<QueueOrder> bad = ParseQueueOrder("lifo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("fifo, las, srsf or sjf"), std::string::npos);
}

TEST_F(QueuePolicyTest, AttainedServiceCountsEveryAttemptTimesGpus) {
  const JobId r = Running(2, Duration::Hours(10), 1000);
  const Time now = Time::FromSeconds(1000 + 1800);
  EXPECT_DOUBLE_EQ(AttainedGpuSeconds(J(r), cat(), now), 2 * 1800.0);
  // Preempted after 1800 s, it keeps them; running again, it adds to them.
  ASSERT_TRUE(Apply(s_, JobPreempted{r, JobId(99), now, PreemptKind::kQueue}).ok());
  EXPECT_EQ(J(r).ran, Duration::Seconds(1800));
  EXPECT_DOUBLE_EQ(AttainedGpuSeconds(J(r), cat(), now + Duration::Hours(5)), 2 * 1800.0);  // pending: no growth
  EXPECT_DOUBLE_EQ(RemainingGpuSeconds(J(r), cat(), now), 2 * (36000.0 - 1800.0));
  ASSERT_TRUE(Apply(s_, JobAdmitted{r, {{NodeId(0), {{.gpu = 0}, {.gpu = 1}}}}, AdmissionKind::kGuaranteed, now}).ok());
  ASSERT_TRUE(Apply(s_, JobStarted{r, now + Duration::Seconds(100)}).ok());
  EXPECT_DOUBLE_EQ(AttainedGpuSeconds(J(r), cat(), now + Duration::Seconds(700)), 2 * (1800.0 + 600.0));
}

TEST_F(QueuePolicyTest, RemainingIsInfiniteWithoutEstimateAndNeverNegative) {
  const JobId none = Pending(1, Duration::Infinite(), 0);
  EXPECT_TRUE(std::isinf(RemainingGpuSeconds(J(none), cat(), Time())));
  const JobId over = Running(1, Duration::Seconds(60), 0);
  EXPECT_DOUBLE_EQ(RemainingGpuSeconds(J(over), cat(), Time::FromSeconds(600)), 0.0);
}

TEST_F(QueuePolicyTest, LasQueuesAreHalfOpenIntervals) {
  EXPECT_EQ(LasQueue(cfg_, 0), 0);
  EXPECT_EQ(LasQueue(cfg_, 3599.9), 0);
  EXPECT_EQ(LasQueue(cfg_, 3600), 1);
  EXPECT_EQ(LasQueue(cfg_, 35999), 1);
  EXPECT_EQ(LasQueue(cfg_, 360000), 3);
  EXPECT_EQ(LasQueue(cfg_, 1e12), 3);
}

TEST_F(QueuePolicyTest, RanksOrderEachPolicy) {
  const JobId long_small = Pending(1, Duration::Hours(10), 0);   // 36000 GPU-s
  const JobId short_big = Pending(4, Duration::Hours(1), 10);    // 14400 GPU-s
  const JobId no_estimate = Pending(1, Duration::Infinite(), 20);
  const Time now = Time::FromSeconds(100);
  auto key = [&](JobId id, QueueOrder o) { return QueueKeyOf(s_, J(id), cfg_, o, now); };
  // fifo: submission.
  EXPECT_LT(key(long_small, QueueOrder::kFifo), key(short_big, QueueOrder::kFifo));
  EXPECT_LT(key(short_big, QueueOrder::kFifo), key(no_estimate, QueueOrder::kFifo));
  // srsf and sjf: GPUs x time, jobs without an estimate last.
  for (QueueOrder o : {QueueOrder::kSrsf, QueueOrder::kSjf}) {
    EXPECT_LT(key(short_big, o), key(long_small, o)) << QueueOrderName(o);
    EXPECT_LT(key(long_small, o), key(no_estimate, o)) << QueueOrderName(o);
  }
  // las: nothing attained yet, all in queue 0: submission order.
  EXPECT_LT(key(long_small, QueueOrder::kLas), key(short_big, QueueOrder::kLas));
  EXPECT_LT(key(short_big, QueueOrder::kLas), key(no_estimate, QueueOrder::kLas));
}

TEST_F(QueuePolicyTest, LasPutsJobsThatRanLongerInLaterQueues) {
  const JobId veteran = Running(1, Duration::Infinite(), 0);  // runs 2 h: 7200 GPU-s, queue 1
  const Time now = Time::FromSeconds(7200);
  ASSERT_TRUE(Apply(s_, JobPreempted{veteran, JobId(99), now, PreemptKind::kQueue}).ok());
  const JobId newcomer = Pending(8, Duration::Infinite(), 7000);  // submitted later, queue 0
  EXPECT_LT(QueueKeyOf(s_, J(newcomer), cfg_, QueueOrder::kLas, now),
            QueueKeyOf(s_, J(veteran), cfg_, QueueOrder::kLas, now));
  EXPECT_LT(QueueKeyOf(s_, J(veteran), cfg_, QueueOrder::kFifo, now),
            QueueKeyOf(s_, J(newcomer), cfg_, QueueOrder::kFifo, now));
}

TEST_F(QueuePolicyTest, StarvedJobsGoFirstInSubmissionOrder) {
  cfg_.starvation_after = Duration::Hours(1);
  const JobId huge_old = Pending(8, Duration::Hours(100), 0);
  const JobId huge_older = Pending(8, Duration::Hours(200), -10);
  const JobId tiny_new = Pending(1, Duration::Seconds(60), 3000);
  const Time now = Time::FromSeconds(3600);
  for (QueueOrder o : {QueueOrder::kSrsf, QueueOrder::kSjf, QueueOrder::kLas}) {
    EXPECT_TRUE(Starved(cfg_, J(huge_old), now));
    EXPECT_FALSE(Starved(cfg_, J(tiny_new), now));
    EXPECT_LT(QueueKeyOf(s_, J(huge_older), cfg_, o, now), QueueKeyOf(s_, J(huge_old), cfg_, o, now));
    EXPECT_LT(QueueKeyOf(s_, J(huge_old), cfg_, o, now), QueueKeyOf(s_, J(tiny_new), cfg_, o, now))
        << QueueOrderName(o);
  }
  // A second earlier, the long job was not starved yet and the short one went first.
  EXPECT_LT(QueueKeyOf(s_, J(tiny_new), cfg_, QueueOrder::kSrsf, Time::FromSeconds(3599)),
            QueueKeyOf(s_, J(huge_old), cfg_, QueueOrder::kSrsf, Time::FromSeconds(3599)));
}

TEST_F(QueuePolicyTest, WhoMayPreemptWhom) {
  cfg_.starvation_after = Duration::Hours(10);
  const JobId long_running = Running(4, Duration::Hours(8), 0, 0);  // 4 x 8 h
  const JobId short_pending = Pending(4, Duration::Hours(1), 100);
  const JobId longer_pending = Pending(4, Duration::Hours(9), 100);
  const Time now = Time::FromSeconds(3600);  // long_running: 4 x 7 h left, attained 4 h of GPU
  const Job& v = J(long_running);
  // srsf: only less remaining service preempts.
  EXPECT_TRUE(QueueMayPreempt(cfg_, QueueOrder::kSrsf, J(short_pending), v, cat(), now));
  EXPECT_FALSE(QueueMayPreempt(cfg_, QueueOrder::kSrsf, J(longer_pending), v, cat(), now));
  // las: both pending have attained nothing (queue 0); the victim has 14400 GPU-s (queue 1).
  EXPECT_TRUE(QueueMayPreempt(cfg_, QueueOrder::kLas, J(longer_pending), v, cat(), now));
  // fifo and sjf never preempt.
  EXPECT_FALSE(QueueMayPreempt(cfg_, QueueOrder::kFifo, J(short_pending), v, cat(), now));
  EXPECT_FALSE(QueueMayPreempt(cfg_, QueueOrder::kSjf, J(short_pending), v, cat(), now));
  // A starved victim is safe from everyone; a starved job may preempt any non-starved one.
  const Time late = Time::FromSeconds(10 * 3600 + 200);
  EXPECT_FALSE(QueueMayPreempt(cfg_, QueueOrder::kSrsf, J(short_pending), v, cat(), late));
  const JobId fresh_long = Running(4, Duration::Hours(100), 10 * 3600, 4);
  EXPECT_TRUE(QueueMayPreempt(cfg_, QueueOrder::kSrsf, J(longer_pending), J(fresh_long), cat(), late));
  EXPECT_FALSE(QueueMayPreempt(cfg_, QueueOrder::kSrsf, J(fresh_long), J(fresh_long), cat(), late));  // no less than itself
  // The victim taken first: most remaining (srsf), most attained (las).
  EXPECT_GT(VictimRank(QueueOrder::kSrsf, J(fresh_long), cat(), late), VictimRank(QueueOrder::kSrsf, v, cat(), late));
  EXPECT_GT(VictimRank(QueueOrder::kLas, v, cat(), late), VictimRank(QueueOrder::kLas, J(fresh_long), cat(), late));
}

TEST_F(QueuePolicyTest, DescribePositionSaysWhyOthersGoFirst) {
  cfg_.starvation_after = Duration::Hours(1);
  const JobId j = Pending(2, Duration::Hours(3), 0);
  const Time now = Time::FromSeconds(60);
  EXPECT_EQ(DescribePosition(cfg_, QueueOrder::kSrsf, J(j), cat(), now, 3),
            "srsf (6.0 GPU-hours remaining): 3 jobs ahead, with less remaining service");
  EXPECT_EQ(DescribePosition(cfg_, QueueOrder::kLas, J(j), cat(), now, 1),
            "las queue 0 (0.0 GPU-hours attained): 1 job ahead, in lower queues or earlier");
  const std::string starved = DescribePosition(cfg_, QueueOrder::kSjf, J(j), cat(), Time::FromSeconds(7200), 0);
  EXPECT_NE(starved.find("starved"), std::string::npos) << starved;
  EXPECT_NE(starved.find("0 jobs ahead"), std::string::npos) << starved;
}

}  // namespace
}  // namespace gpupool
