// What a new user sees of a job's life (issue "first week"): every job's events with who and
// why, scoped like the job; pending reasons that say a job was sent back.
#include <gtest/gtest.h>

#include "daemon/core_fixture.h"

namespace gpupool {
namespace {

Time At(int64_t s) { return Time::FromMillis(s * 1000); }

std::vector<std::string> Types(const Json& job) {
  std::vector<std::string> out;
  for (const Json& e : job["events"]) out.push_back(e["type"]);
  return out;
}

// research borrows 16 H100 beyond its 24; product then asks for its guarantee and takes back
// a borrowed job by reclaim, once the victims have run their 5 minutes.
class HistoryTest : public CoreTest {
 protected:
  void SetUp() override {
    CoreTest::SetUp();
    for (int i = 0; i < 5; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["research"], 2000), Job("research"), "").status, 201);
    core_->Tick(At(3), false);
    core_->Tick(At(4), true);  // the simulated executor starts them
    for (int i = 0; i < 2; ++i) ASSERT_EQ(core_->SubmitJob(As(members_["product"], 5000), Job("product"), "").status, 201);
    core_->Tick(At(400), false);  // past the 5-minute minimum runtime: reclaim
    ASSERT_EQ(core_->last_plan().preemptions.size(), 1u);
    victim_ = std::to_string(core_->last_plan().preemptions[0].victim.value());
    preemptor_ = std::to_string(core_->last_plan().preemptions[0].preemptor.value());
    ASSERT_TRUE(core_->Flush().ok());
  }
  Json Get(const Principal& p, const std::string& id) { return Json::parse(core_->GetJob(As(p, 401'000), id).body); }
  std::string victim_, preemptor_;
};

TEST_F(HistoryTest, APreemptedJobSaysByWhomAndWhyToThoseWhoMaySeeIt) {
  const Json admin = Get(admin_, victim_);
  EXPECT_EQ(Types(admin), (std::vector<std::string>{"submitted", "admitted", "started", "preempted"}));
  const Json& preempted = admin["events"][3];
  EXPECT_EQ(preempted["reason"], "reclaim");
  EXPECT_EQ(preempted["by"]["job"], preemptor_);
  EXPECT_EQ(preempted["by"]["tenant"], "product");
  EXPECT_NE(preempted["message"].get<std::string>().find("job " + preemptor_ + " of tenant product"), std::string::npos)
      << preempted["message"];
  EXPECT_NE(admin["events"][1]["message"].get<std::string>().find("admitted as borrowed on h100-"), std::string::npos);

  // research's member sees that it was reclaimed, never by which job of which tenant.
  const Json member = Get(members_["research"], victim_);
  const Json& seen = member["events"][3];
  EXPECT_TRUE(seen["by"].is_null());
  EXPECT_EQ(seen["message"].get<std::string>().find("product"), std::string::npos) << seen["message"];
  EXPECT_EQ(seen["message"].get<std::string>().find(preemptor_), std::string::npos) << seen["message"];
  EXPECT_EQ(member.dump().find("product"), std::string::npos) << member.dump();
}

TEST_F(HistoryTest, APreemptedJobsReasonLeadsWithThePreemption) {
  core_->Tick(At(401), false);  // the next cycle gives it a scheduler reason of its own
  const Json job = Get(members_["research"], victim_);
  ASSERT_EQ(job["state"], "pending");
  EXPECT_EQ(job["reason"]["code"], "preempted");
  const std::string msg = job["reason"]["message"];
  EXPECT_EQ(msg.rfind("preempted by a job of another tenant (reclaim", 0), 0u) << msg;
  EXPECT_NE(msg.find("; now "), std::string::npos) << msg;
  EXPECT_NE(job["reason"]["waiting"], "none");
  // Admitted again later, the lead is gone.
}

TEST_F(HistoryTest, TheHistorySurvivesARestartAndOtherTenantsCannotReadIt) {
  const std::string before = core_->GetJob(As(admin_, 401'000), victim_).body;
  core_.reset();
  core_ = Open();
  EXPECT_EQ(core_->GetJob(As(admin_, 401'000), victim_).body, before);
  EXPECT_EQ(core_->GetJob(As(members_["product"], 401'000), victim_).status, 404);
}

TEST_F(CoreTest, CancelAndDrainSayWhoAndWhy) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"]), Job("research"), "").status, 201);
  core_->Tick(At(3), false);
  const Json placed = Json::parse(core_->GetJob(As(admin_), "2").body);
  const std::string node = placed["placement"][0]["node"];
  ASSERT_EQ(core_->NodeAction(As(admin_, 4000), node, "drain").status, 200);
  ASSERT_EQ(core_->CancelJob(As(members_["research"], 5000), "1").status, 200);
  const Json drained = Json::parse(core_->GetJob(As(members_["research"], 6000), "2").body);
  const Json& requeued = drained["events"].back();
  EXPECT_EQ(requeued["type"], "requeued");
  EXPECT_EQ(requeued["reason"], "node_drained");
  EXPECT_EQ(requeued["message"], "requeued (node_drained): node " + node + " was drained by admin");
  EXPECT_EQ(drained["reason"]["code"], "requeued");
  const Json cancelled = Json::parse(core_->GetJob(As(members_["research"], 6000), "1").body);
  EXPECT_EQ(cancelled["events"].back()["type"], "cancelled");
  EXPECT_EQ(cancelled["events"].back()["message"], "cancelled by research-bob");
}

TEST(JobHistoryBounds, AJobRequeuedWithoutEndKeepsItsFirstAndLastEvents) {
  State s = DemoCluster();
  JobHistory h;
  const JobId id(1);
  for (int i = 0; i < 200; ++i) h.Observe(s, JobLost{id, Time::FromMillis(i), RequeueCause::kNodeLost, std::to_string(i)});
  ASSERT_EQ(h.Of(id).size(), JobHistory::kMaxEntries);
  EXPECT_EQ(h.dropped(id), 200 - JobHistory::kMaxEntries);
  EXPECT_EQ(h.Of(id)[JobHistory::kKeepFirst - 1].detail, std::to_string(JobHistory::kKeepFirst - 1));
  EXPECT_EQ(h.Of(id).back().detail, "199");
}

}  // namespace
}  // namespace gpupool
