// Retention (issue 16 item 3): finished jobs past the window leave memory for the store's
// history, and the API shows the same things as before they left: the job with its events
// (scoped), the lists with their filters and cursors, usage reports, idempotent retries, the
// audit log; after a restart or a start from a snapshot too.
#include <gtest/gtest.h>

#include "daemon/control_plane_fixture.h"

namespace gpupool {
namespace {

using Query = std::map<std::string, std::string>;

class RetentionTest : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    core_->SetRetention(Duration::Seconds(60));
    tenant_admin_ = {"research-ada", Role::kTenantAdmin, *core_->state().FindTenant("research"), "research-ada-token"};
  }

  // Jobs of both tenants that run a few seconds and finish; one cancelled while pending.
  void RunJobs(int n) {
    for (int i = 0; i < n; ++i) {
      const char* t = i % 3 == 0 ? "product" : "research";
      Json body = Json::parse(Job(t, 1 + i % 2, "job-" + std::to_string(i)));
      body["duration_estimate_s"] = 2 + i % 3;
      ASSERT_EQ(core_->SubmitJob(As(members_[t], 3000), body.dump(), "key-" + std::to_string(i)).status, 201);
    }
    ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 8, "cancelled"), "").status, 201);
    ASSERT_EQ(core_->CancelJob(As(admin_, 3100), std::to_string(core_->state().NextJobId().value() - 1)).status, 200);
    for (int64_t ms = 4000; ms <= 20000; ms += 1000) core_->Tick(Time::FromMillis(ms), true);
    ASSERT_TRUE(core_->Flush().ok());
  }

  // What the API shows of every job, the lists, usage and the audit log, to an admin, a tenant
  // admin, a member and another tenant's member.
  std::string Shown(ControlPlane& core, int64_t ms) {
    std::string out;
    for (const Principal* p : {&admin_, &tenant_admin_, &members_["research"], &members_["product"]}) {
      const CallContext c = As(*p, ms);
      out += core.ListJobs(c, {}).body + "\n";
      for (const Query& q : std::vector<Query>{{{"state", "succeeded"}}, {{"state", "cancelled"}},
                                               {{"tenant", "research"}, {"limit", "3"}}, {{"limit", "4"}}}) {
        out += core.ListJobs(c, q).body + "\n";
      }
      // Walk the pages of two.
      std::string cursor;
      do {
        Query q{{"limit", "2"}};
        if (!cursor.empty()) q["cursor"] = cursor;
        const Json page = Json::parse(core.ListJobs(c, q).body);
        out += page.dump() + "\n";
        cursor = page["next_cursor"].is_null() ? "" : page["next_cursor"].get<std::string>();
      } while (!cursor.empty());
      for (uint64_t id = 1; id < core.state().NextJobId().value(); ++id) {
        const Reply r = core.GetJob(c, std::to_string(id));
        out += std::to_string(r.status) + " " + r.body + "\n";
      }
      out += core.Usage(c, {{"from", "1970-01-01T00:00:00Z"}}).body + "\n";
      out += core.ListAudit(c, {{"limit", "5"}}).body + "\n";
    }
    return out;
  }

  Principal tenant_admin_;
};

TEST_F(RetentionTest, ArchivedJobsAreServedAsTheyWereShown) {
  RunJobs(12);
  const size_t in_memory = core_->state().jobs().size();
  ASSERT_EQ(in_memory, 13u);
  const std::string before = Shown(*core_, 30000);
  // Past the window: every finished job leaves memory in the next tick.
  core_->Tick(Time::FromMillis(200000), true);
  ASSERT_TRUE(core_->Flush().ok());
  EXPECT_EQ(core_->state().jobs().size(), 0u);
  EXPECT_EQ(core_->archived(), 13);
  EXPECT_TRUE(core_->ledger().closed().empty()) << "the archived jobs' usage intervals left the ledger";
  EXPECT_EQ(Shown(*core_, 30000), before);
  // After a restart (a replay of the journal) the same.
  core_ = Open();
  EXPECT_EQ(core_->state().jobs().size(), 0u);
  EXPECT_EQ(Shown(*core_, 30000), before);
}

TEST_F(RetentionTest, OnlyJobsFinishedLongerAgoThanTheWindowLeave) {
  RunJobs(6);
  // The jobs finished at 6-8 s; at 65 s the window of 60 s covers some of them.
  core_->Tick(Time::FromMillis(67000), true);
  ASSERT_TRUE(core_->Flush().ok());
  for (const auto& [id, job] : core_->state().jobs()) EXPECT_TRUE(IsTerminal(job.state));
  const size_t left = 7 - core_->state().jobs().size();
  EXPECT_GT(left, 0u);
  EXPECT_LT(left, 7u);
  // A job still running is never archived, however old.
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], 70000), Job("research", 1, "long"), "").status, 201);
  core_->Tick(Time::FromMillis(71000), true);
  core_->Tick(Time::FromMillis(500000), true);
  ASSERT_TRUE(core_->Flush().ok());
  ASSERT_EQ(core_->state().jobs().size(), 1u);
  EXPECT_EQ(core_->state().jobs().begin()->second.state, JobState::kRunning);
}

// However young, finished jobs beyond the count leave memory, the oldest first: memory is
// bounded at any rate of jobs, not only by rate x window.
TEST_F(RetentionTest, AtMostTheCountOfFinishedJobsStaysInMemory) {
  core_->SetMaxFinishedInMemory(3);
  RunJobs(6);
  const std::string before = Shown(*core_, 30000);
  core_->Tick(Time::FromMillis(21000), true);  // well inside the 60 s window
  ASSERT_TRUE(core_->Flush().ok());
  size_t finished = 0;
  for (const auto& [id, job] : core_->state().jobs()) finished += IsTerminal(job.state) ? 1 : 0;
  EXPECT_EQ(finished, 3u);
  EXPECT_EQ(core_->archived(), 4) << "7 finished, 3 stay";
  // The oldest left first: the cancelled one (finished at 3.1 s) is in the history.
  EXPECT_EQ(core_->state().FindJob(JobId(7)), nullptr);
  EXPECT_EQ(Shown(*core_, 30000), before) << "the API shows the same jobs, from memory or the history";
  core_ = Open();
  EXPECT_EQ(Shown(*core_, 30000), before);
}

TEST_F(RetentionTest, AnIdempotentRetryOfAnArchivedJobIsAnsweredWithIt) {
  RunJobs(3);
  core_->Tick(Time::FromMillis(200000), true);
  ASSERT_TRUE(core_->Flush().ok());
  const Reply r = core_->SubmitJob(As(members_["research"], 210000), Job("research", 1, "again"), "key-1");
  ASSERT_EQ(r.status, 201) << r.body;
  const Json j = Json::parse(r.body);
  EXPECT_EQ(j["id"], "2");
  EXPECT_EQ(j["replayed"], true);
  EXPECT_EQ(j["state"], "succeeded");
}

TEST_F(RetentionTest, ASnapshotHoldsOnlyWhatIsInMemoryAndTheHistoryStays) {
  RunJobs(9);
  core_->Tick(Time::FromMillis(200000), true);
  ASSERT_TRUE(core_->Flush().ok());
  const std::string before = Shown(*core_, 30000);
  std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core_->CopyForSnapshot();
  ASSERT_TRUE(core_->journal().WriteSnapshot(ControlPlane::EncodeSnapshot(*copy)).ok());
  ASSERT_TRUE(core_->SnapshotWritten(ControlPlane::SnapshotSeq(*copy)).ok());
  core_ = Open();
  EXPECT_EQ(core_->state().jobs().size(), 0u);
  EXPECT_EQ(Shown(*core_, 30000), before);
}

}  // namespace
}  // namespace gpupool
