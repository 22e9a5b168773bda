// A failed journal write must leave the daemon serving exactly what is durable (issue 16 item 1).
// Random sequences of every kind of change the API and the agents make, through a journal whose
// appends fail at random; after each step the daemon must still serve (a tick runs, a read
// answers) and show what a fresh replay of the journal shows.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/loop.h"
#include "daemon/random_changes.h"

namespace gpupool {
namespace {

using FlushProperty = RandomChanges;

TEST_F(FlushProperty, AFailedFlushLeavesWhatIsDurableAndTheDaemonServing) {
  ::testing::internal::CaptureStderr();  // silent nodes are logged at every tick
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::string> steps;
    for (int i = 0; i < 60; ++i) {
      now_ += 1000;
      // A batch of one to three changes, then the flush that fails one time in four.
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < n; ++k) steps.push_back(Step(rng));
      fail_next_ = rng() % 4 == 0 ? 1 : 0;
      steps.push_back(fail_next_ ? "flush (fails)" : "flush");
      (void)core_->Flush();
      fail_next_ = 0;
      // Still serving: a tick over whatever memory holds now, a read, and a flush.
      core_->Tick(Time::FromMillis(now_ + 500), true);
      ASSERT_EQ(core_->Summary(As(admin_, now_ + 500)).status, 200);
      ASSERT_TRUE(core_->Flush().ok());
      std::unique_ptr<ControlPlane> fresh = Fresh();
      ASSERT_TRUE(fresh);
      const std::string mine = Visible(*core_), replayed = Visible(*fresh);
      if (mine != replayed) {
        std::string trail;
        for (const std::string& s : steps) trail += "  " + s + "\n";
        FAIL() << "seed " << seed << ": memory differs from a replay of the journal after:\n"
               << trail << "memory:\n" << mine << "\nreplay:\n" << replayed;
      }
    }
  }
  (void)::testing::internal::GetCapturedStderr();
}

// A batch abandoned halfway (a handler threw) leaves memory as the journal has it.
TEST_F(FlushProperty, AnAbandonedBatchLeavesWhatIsDurable) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], now_), Job("research", 8, "kept"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string durable = Visible(*core_);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], now_), Job("research", 8, "dropped"), "").status, 201);
  ASSERT_NE(Visible(*core_), durable);
  core_->Abandon();
  EXPECT_EQ(Visible(*core_), durable);
  EXPECT_EQ(core_->staged(), 0u);
}

using LoopTest = RandomChanges;

// The loop holds every request to all or nothing: a handler that staged a change and then
// refused is a bug, and its batch is abandoned (memory back to what is durable; the others in
// the batch are told to retry) rather than half of it journaled.
TEST_F(LoopTest, AHandlerThatRefusesAfterAChangeAbandonsItsBatch) {
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], now_), Job("research", 8, "kept"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string durable = Visible(*core_);
  Metrics metrics;
  Loop loop(*core_, metrics, 200, false);
  const CallContext m = As(members_["research"], now_);
  std::promise<Reply> broken, other, later;
  std::string after_abandon;  // read on the loop thread, before its next tick changes anything
  // Both are queued before the loop runs, so they are one batch.
  loop.Post([&](ControlPlane& c, Time) {
    EXPECT_EQ(c.SubmitJob(m, Job("research", 8, "half"), "").status, 201);
    return Reply{400, "{\"error\": \"refused after a change\"}"};
  }, [&](Reply r) {
    after_abandon = Visible(*core_);
    broken.set_value(std::move(r));
  });
  loop.Post([&](ControlPlane& c, Time) { return c.SubmitJob(m, Job("research", 8, "innocent"), ""); },
            [&](Reply r) { other.set_value(std::move(r)); });
  std::atomic<bool> stop{false};
  std::thread runner([&] { loop.Run(stop); });
  const Reply b = broken.get_future().get(), o = other.get_future().get();
  EXPECT_EQ(b.status, 400);
  EXPECT_EQ(o.status, 503) << o.body;
  EXPECT_EQ(after_abandon, durable) << "nothing of the broken batch is applied";
  // The next batch is served as usual.
  loop.Post([&](ControlPlane& c, Time) { return c.SubmitJob(m, Job("research", 8, "retried"), ""); },
            [&](Reply r) { later.set_value(std::move(r)); });
  EXPECT_EQ(later.get_future().get().status, 201);
  stop = true;
  runner.join();
  EXPECT_NE(metrics.Render().find("gpupool_batches_abandoned_total 1"), std::string::npos);
  std::unique_ptr<ControlPlane> fresh = Fresh();
  ASSERT_TRUE(fresh);
  const std::string jobs = fresh->ListJobs(As(admin_, now_), {}).body;
  EXPECT_EQ(jobs.find("\"half\""), std::string::npos);
  EXPECT_EQ(jobs.find("\"innocent\""), std::string::npos);
  EXPECT_NE(jobs.find("\"retried\""), std::string::npos);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("request handler refused after it changed state"), std::string::npos) << err;
}

// A store that cannot be read back after a failed write: the loop answers 503 without running
// any handler (memory may be ahead of the store), reloads every half second, and serves again
// once the store answers; nothing it refused is in the journal.
TEST_F(LoopTest, AStaleCoreServesNothingUntilTheStoreAnswersAgain) {
  ::testing::internal::CaptureStderr();
  Metrics metrics;
  Loop loop(*core_, metrics, 200, false);
  const CallContext m = As(members_["research"], now_);
  fail_next_ = 1;   // the first batch's append fails
  fail_reads_ = 3;  // and the store cannot be read for three loads
  std::atomic<bool> stop{false};
  std::thread runner([&] { loop.Run(stop); });
  auto submit = [&](const std::string& name) {
    std::promise<Reply> p;
    loop.Post([&, name](ControlPlane& c, Time) { return c.SubmitJob(m, Job("research", 1, name), ""); },
              [&](Reply r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  };
  EXPECT_EQ(submit("lost").status, 503);
  int refused = 0;
  Reply r;
  for (int i = 0; i < 100 && (r = submit("after")).status == 503; ++i) {
    ++refused;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_GE(refused, 1) << "a stale core answered before the store could be read";
  stop = true;
  runner.join();
  std::unique_ptr<ControlPlane> fresh = Fresh();
  ASSERT_TRUE(fresh);
  const std::string jobs = fresh->ListJobs(As(admin_, now_), {}).body;
  EXPECT_EQ(jobs.find("\"lost\""), std::string::npos);
  EXPECT_NE(jobs.find("\"after\""), std::string::npos);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("serving nothing until it can"), std::string::npos) << err;
}

// A heartbeat whose second replica report is malformed is refused whole: the first report's
// change (the job starting) is neither applied nor staged.
TEST_F(AgentProtocolTest, ABadReplicaReportChangesNothing) {
  const std::string j = Submit(member_a_, 4, 1);
  core_->Tick(At(1), false);
  const std::string node = NodeOf(j, 1);
  const Json start = Beat(node, 2)["start"][0];
  ASSERT_TRUE(core_->Flush().ok());
  Json bad = Report(start, "running");
  bad["state"] = "dancing";
  const Json body = {{"replicas", {Report(start, "running"), bad}}};
  const Reply r = core_->AgentHeartbeat({&admin_, "", At(3)}, node, body.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(Job(j, 3)["state"], "admitted");
  EXPECT_EQ(core_->staged(), 0u) << "a refused heartbeat stages nothing";
  // The same report, well formed, starts it.
  EXPECT_EQ(Beat(node, 4, {{"replicas", {Report(start, "running")}}})["start"].size(), 0u);
  EXPECT_EQ(Job(j, 4)["state"], "running");
}

}  // namespace
}  // namespace gpupool
