// Queue policies in the scheduler (policy/priority/queue_policy.h): the order of a tenant's
// queue, queue preemption within a class and its limits, the starvation bound, and what a
// waiting job is told.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class QueueScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    t_ = *AddTenant(s_, "t", {{"h100-80gb", {8}}});
    u_ = *AddTenant(s_, "u", {{"h100-80gb", {8}}});
    ASSERT_TRUE(AddNode(s_, "n0", NodeTemplate{.flavor = "h100-80gb"}).ok());
    cfg_.preemption.min_runtime = Duration::Minutes(2);
  }
  JobId Pending(const std::string& tenant, int gpus, Duration estimate, int submitted_s,
                const std::string& pc = "training") {
    return *Submit(s_, {.tenant = tenant, .priority_class = pc, .shape = *WholeGpus(s_, "h100-80gb", gpus),
                        .estimated = estimate},
                   Time::FromSeconds(submitted_s));
  }
  // Submitted and started at `started_s` on GPUs [first, first + gpus) of n0.
  JobId Running(const std::string& tenant, int gpus, Duration estimate, int started_s, uint16_t first,
                const std::string& pc = "training") {
    const JobId id = Pending(tenant, gpus, estimate, started_s, pc);
    std::vector<GpuGrant> grants;
    for (int g = 0; g < gpus; ++g) grants.push_back({.gpu = static_cast<uint16_t>(first + g)});
    EXPECT_TRUE(Apply(s_, JobAdmitted{id, {{NodeId(0), grants}}, AdmissionKind::kGuaranteed,
                                      Time::FromSeconds(started_s)})
                    .ok());
    EXPECT_TRUE(Apply(s_, JobStarted{id, Time::FromSeconds(started_s)}).ok());
    return id;
  }
  static bool Placed(const Plan& p, JobId id) {
    return std::any_of(p.placements.begin(), p.placements.end(), [&](const PlaceDecision& d) { return d.job == id; });
  }
  static const PendingNote* Note(const Plan& p, JobId id) {
    for (const PendingNote& n : p.pending) {
      if (n.job == id) return &n;
    }
    return nullptr;
  }
  static int QueuePreemptions(const Plan& p) {
    return static_cast<int>(std::count_if(p.preemptions.begin(), p.preemptions.end(),
                                          [](const PreemptDecision& d) { return d.kind == PreemptKind::kQueue; }));
  }
  State s_;
  TenantId t_, u_;
  SchedulerConfig cfg_;
};

TEST_F(QueueScheduleTest, FifoRunsTheFirstSubmittedSrsfAndSjfTheShortest) {
  const JobId long_job = Pending("t", 8, Duration::Hours(10), 0);
  const JobId short_job = Pending("t", 8, Duration::Hours(1), 10);
  const Time now = Time::FromSeconds(20);
  cfg_.queue.order = QueueOrder::kFifo;
  Plan fifo = Schedule(s_, cfg_, now);
  EXPECT_TRUE(Placed(fifo, long_job)) << Describe(s_, fifo);
  ASSERT_NE(Note(fifo, short_job), nullptr);
  EXPECT_EQ(Note(fifo, short_job)->position, "");  // fifo says nothing new
  for (QueueOrder o : {QueueOrder::kSrsf, QueueOrder::kSjf}) {
    cfg_.queue.order = o;
    const Plan p = Schedule(s_, cfg_, now);
    EXPECT_TRUE(Placed(p, short_job)) << QueueOrderName(o) << "\n" << Describe(s_, p);
    ASSERT_NE(Note(p, long_job), nullptr);
    EXPECT_NE(Note(p, long_job)->position.find("1 job ahead"), std::string::npos) << Note(p, long_job)->position;
  }
  // The reason a job is given carries its place in the queue.
  cfg_.queue.order = QueueOrder::kSrsf;
  const Plan p = Schedule(s_, cfg_, now);
  ApplyPlan(p, now, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
  EXPECT_NE(s_.FindJob(long_job)->reason.message.find(
                "in tenant t's queue, srsf (80.0 GPU-hours remaining): 1 job ahead, with less remaining service"),
            std::string::npos)
      << s_.FindJob(long_job)->reason.message;
}

TEST_F(QueueScheduleTest, ATenantsOwnPolicyOverridesTheSchedulersAndOnlyForItsQueue) {
  // Two tenants guaranteed half the node each: each gets one 4-GPU job.
  const TenantId a = *AddTenant(s_, "a", {{"h100-80gb", {4, 0}}});
  *AddTenant(s_, "b", {{"h100-80gb", {4, 0}}});
  Tenant t = s_.tenant(a);
  t.queue_policy = QueueOrder::kSjf;
  ASSERT_TRUE(s_.UpdateTenant(t).ok());
  const JobId a_long = Pending("a", 4, Duration::Hours(10), 0);
  const JobId a_short = Pending("a", 4, Duration::Hours(1), 10);
  const JobId b_long = Pending("b", 4, Duration::Hours(10), 0);
  const JobId b_short = Pending("b", 4, Duration::Hours(1), 10);
  const Plan p = Schedule(s_, cfg_, Time::FromSeconds(20));
  EXPECT_TRUE(Placed(p, a_short)) << Describe(s_, p);
  EXPECT_FALSE(Placed(p, a_long));
  EXPECT_TRUE(Placed(p, b_long)) << Describe(s_, p);  // b keeps the scheduler's fifo
  EXPECT_FALSE(Placed(p, b_short));
}

TEST_F(QueueScheduleTest, SrsfPreemptsAJobWithMoreRemainingServiceOnceItRanItsMinimum) {
  const JobId victim = Running("t", 8, Duration::Hours(10), 0, 0);
  const JobId short_job = Pending("t", 8, Duration::Hours(1), 30);
  cfg_.queue.order = QueueOrder::kSrsf;
  // Before the class's minimum runtime: no.
  const Plan early = Schedule(s_, cfg_, Time::FromSeconds(60));
  EXPECT_TRUE(early.preemptions.empty()) << Describe(s_, early);
  const Time now = Time::FromSeconds(600);
  const Plan p = Schedule(s_, cfg_, now);
  ASSERT_EQ(p.preemptions.size(), 1u) << Describe(s_, p);
  EXPECT_EQ(p.preemptions[0].victim, victim);
  EXPECT_EQ(p.preemptions[0].kind, PreemptKind::kQueue);
  EXPECT_TRUE(Placed(p, short_job));
  EXPECT_NE(Describe(s_, p).find("(queue)"), std::string::npos);
  // fifo and sjf never preempt for the queue; neither does a budget of 0.
  for (QueueOrder o : {QueueOrder::kFifo, QueueOrder::kSjf}) {
    cfg_.queue.order = o;
    EXPECT_TRUE(Schedule(s_, cfg_, now).preemptions.empty()) << QueueOrderName(o);
  }
  cfg_.queue.order = QueueOrder::kSrsf;
  cfg_.queue.max_preemptions_per_cycle = 0;
  EXPECT_TRUE(Schedule(s_, cfg_, now).preemptions.empty());
  // The victim keeps its service: back in the queue with 600 s run, 10 h - 600 s to go.
  cfg_.queue.max_preemptions_per_cycle = 8;
  ApplyPlan(p, now, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
  const Job& v = *s_.FindJob(victim);
  EXPECT_EQ(v.state, JobState::kPending);
  EXPECT_EQ(v.ran, Duration::Seconds(600));
  EXPECT_DOUBLE_EQ(RemainingGpuSeconds(v, s_.catalogue(), now), 8.0 * (36000 - 600));
  // And does not preempt back: it has more remaining service than the job that took its place.
  const Plan next = Schedule(s_, cfg_, now + Duration::Minutes(30));
  EXPECT_TRUE(next.preemptions.empty()) << Describe(s_, next);
}

TEST_F(QueueScheduleTest, QueuePreemptionTakesOnlyPreemptibleJobsOfTheSameClassAndTenant) {
  cfg_.queue.order = QueueOrder::kSrsf;
  Running("t", 4, Duration::Hours(10), 0, 0, "inference");  // never preemptible
  Running("u", 4, Duration::Hours(10), 0, 4);               // another tenant, within its guarantee
  const JobId short_job = Pending("t", 4, Duration::Hours(1), 30);
  const Plan p = Schedule(s_, cfg_, Time::FromSeconds(3600));
  EXPECT_TRUE(p.preemptions.empty()) << Describe(s_, p);
  EXPECT_FALSE(Placed(p, short_job));
}

TEST_F(QueueScheduleTest, TheBudgetCapsQueuePreemptionsPerCycle) {
  cfg_.queue.order = QueueOrder::kSrsf;
  for (uint16_t g = 0; g < 8; ++g) Running("t", 1, Duration::Hours(10), 0, g);
  std::vector<JobId> shorts;
  for (int i = 0; i < 5; ++i) shorts.push_back(Pending("t", 1, Duration::Minutes(10), 100 + i));
  cfg_.queue.max_preemptions_per_cycle = 3;
  const Plan p = Schedule(s_, cfg_, Time::FromSeconds(3600));
  EXPECT_EQ(QueuePreemptions(p), 3) << Describe(s_, p);
  EXPECT_EQ(p.placements.size(), 3u);
  // The first three in srsf order (equal remaining: submission order).
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Placed(p, shorts[i])) << i;
}

TEST_F(QueueScheduleTest, LasPreemptsTheMostAttainedAndTheNewcomerIsNotPreemptedBack) {
  cfg_.queue.order = QueueOrder::kLas;
  cfg_.queue.las_thresholds_gpu_s = {3600, 36000};
  const JobId old_job = Running("t", 4, Duration::Infinite(), 0, 0);     // 4 GPU x 2 h: queue 1
  const JobId older_job = Running("t", 4, Duration::Infinite(), -3600, 4);  // 4 x 3 h: queue 2
  const JobId fresh = Pending("t", 4, Duration::Infinite(), 7000);
  const Time now = Time::FromSeconds(7200);
  const Plan p = Schedule(s_, cfg_, now);
  ASSERT_EQ(p.preemptions.size(), 1u) << Describe(s_, p);
  EXPECT_EQ(p.preemptions[0].victim, older_job);  // the most attained service goes first
  EXPECT_TRUE(Placed(p, fresh));
  ApplyPlan(p, now, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
  EXPECT_EQ(s_.FindJob(older_job)->ran, Duration::Hours(3));
  // Half an hour on, the newcomer (4 x 0.5 h = 7200 GPU-s) is in queue 1 too: no one preempts.
  const Plan next = Schedule(s_, cfg_, now + Duration::Minutes(30));
  EXPECT_TRUE(next.preemptions.empty()) << Describe(s_, next);
  EXPECT_EQ(s_.FindJob(old_job)->state, JobState::kRunning);
}

// Under las the job that took the GPUs goes on attaining service; once it is in a higher queue
// than its victim, the victim takes them back (the rule against preempting one's preemptor is
// for priorities, which do not move).
TEST_F(QueueScheduleTest, LasGivesTheGpusBackOnceTheNewcomerAttainedMore) {
  cfg_.queue.order = QueueOrder::kLas;
  cfg_.queue.las_thresholds_gpu_s = {3600, 36000};
  const JobId first = Running("t", 8, Duration::Infinite(), 0, 0);
  const JobId newcomer = Pending("t", 8, Duration::Infinite(), 1000);
  Time now = Time::FromSeconds(1000);  // first: 8 x 1000 s, queue 1; the newcomer queue 0
  Plan p = Schedule(s_, cfg_, now);
  ASSERT_EQ(p.preemptions.size(), 1u) << Describe(s_, p);
  EXPECT_EQ(p.preemptions[0].victim, first);
  ApplyPlan(p, now, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
  // 4,000 s on the newcomer has 32,000 GPU-s, queue 1 as its victim: nobody moves.
  now = Time::FromSeconds(5000);
  p = Schedule(s_, cfg_, now);
  EXPECT_TRUE(p.preemptions.empty()) << Describe(s_, p);
  // 4,600 s on it has 36,800, queue 2: the first job (8,000, queue 1) takes the GPUs back.
  now = Time::FromSeconds(5600);
  p = Schedule(s_, cfg_, now);
  ASSERT_EQ(p.preemptions.size(), 1u) << Describe(s_, p);
  EXPECT_EQ(p.preemptions[0].victim, newcomer);
  EXPECT_EQ(p.preemptions[0].kind, PreemptKind::kQueue);
  EXPECT_TRUE(Placed(p, first));
  ApplyPlan(p, now, s_, [&](const Event& e) { return Apply(s_, e); }, {.start_placed = true});
  EXPECT_EQ(s_.FindJob(newcomer)->ran, Duration::Seconds(4600));
  EXPECT_EQ(s_.FindJob(first)->ran, Duration::Seconds(1000));
}

// The bound: a stream of short jobs overtakes a long one under srsf, but not for longer than
// starvation_after. Every hour a 1-hour 8-GPU job arrives; the long one waits for them.
TEST_F(QueueScheduleTest, StarvationBoundsHowLongShorterWorkOvertakes) {
  auto first_start = [&](Duration starvation_after) -> Time {
    State s = s_;
    SchedulerConfig cfg = cfg_;
    cfg.queue.order = QueueOrder::kSrsf;
    cfg.queue.starvation_after = starvation_after;
    const JobId long_job = *Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", 8),
                                       .estimated = Duration::Hours(10)},
                                   Time());
    for (int h = 0; h < 48; ++h) {
      const Time now = Time::FromSeconds(h * 3600);
      for (JobId id : std::vector<JobId>(s.active().begin(), s.active().end())) {
        const Job& j = *s.FindJob(id);
        if (j.state == JobState::kRunning && j.id != long_job && now >= j.ExpectedEnd()) {
          EXPECT_TRUE(Apply(s, JobFinished{id, JobState::kSucceeded, now}).ok());
        }
      }
      EXPECT_TRUE(Submit(s, {.tenant = "t", .shape = *WholeGpus(s, "h100-80gb", 8), .estimated = Duration::Hours(1)},
                         now)
                      .ok());
      const Plan p = Schedule(s, cfg, now);
      ApplyPlan(p, now, s, [&](const Event& e) { return Apply(s, e); }, {.start_placed = true});
      if (s.FindJob(long_job)->state == JobState::kRunning) return now;
    }
    return Time::Never();
  };
  // Without a bound in reach, the long job never runs in two days.
  EXPECT_TRUE(first_start(Duration::Hours(24 * 7)).is_never());
  // With a 5-hour bound it runs once starved: at 5 h (it preempts the short job, past its minimum).
  const Time started = first_start(Duration::Hours(5));
  ASSERT_FALSE(started.is_never());
  EXPECT_EQ(started, Time::FromSeconds(5 * 3600));
}

TEST_F(QueueScheduleTest, AStarvedJobIsNeverTheQueuesVictim) {
  cfg_.queue.order = QueueOrder::kSrsf;
  cfg_.queue.starvation_after = Duration::Hours(2);
  const JobId starved_running = Running("t", 8, Duration::Hours(10), 0, 0);
  Pending("t", 8, Duration::Hours(1), 3 * 3600);
  const Plan p = Schedule(s_, cfg_, Time::FromSeconds(3 * 3600 + 60));
  EXPECT_TRUE(p.preemptions.empty()) << Describe(s_, p);
  EXPECT_EQ(s_.FindJob(starved_running)->state, JobState::kRunning);
}

}  // namespace
}  // namespace gpupool
