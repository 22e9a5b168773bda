// A follower's warm copy (docs/design/daemon.md, "Replicas"): a leader core on the tests'
// PostgreSQL makes random changes of every kind (random_changes.h) and a follower core on the
// same store catches up (ControlPlane::CatchUp); after each catch-up the follower shows what the
// leader shows, through a snapshot and a compaction that drop the records it had not read yet.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "daemon/random_changes.h"
#include "model/demo_cluster.h"
#include "store/pg_journal.h"
#include "store/test_postgres.h"

namespace gpupool {
namespace {

class FollowerTest : public RandomChanges {
 protected:
  void SetUp() override {
    Result<std::string> url = testing::TestPostgresUrl();
    ASSERT_TRUE(url.ok()) << url.error().message;
    url_ = *url;
    schema_ = testing::UniqueSchema("follow");
    dir_ = std::filesystem::temp_directory_path() / ("gpupool-follow-" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
    core_ = OpenOnStore(/*leader=*/true);
    ASSERT_TRUE(core_);
    ASSERT_TRUE(core_->Bootstrap(DemoCluster(), Time::FromMillis(1000)).ok());
    for (const char* t : {"research", "product"}) {
      const TenantId id = *core_->state().FindTenant(t);
      members_[t] = {std::string(t) + "-bob", Role::kMember, id, std::string(t) + "-bob-token"};
      viewers_[t] = {std::string(t) + "-vic", Role::kViewer, id, std::string(t) + "-vic-token"};
    }
    ASSERT_TRUE(core_->Flush().ok());
    follower_ = OpenOnStore(/*leader=*/false);
    ASSERT_TRUE(follower_);
  }
  void TearDown() override {
    follower_.reset();
    core_.reset();
    (void)testing::PostgresSql(url_, "DROP SCHEMA " + schema_ + " CASCADE");
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<ControlPlane> OpenOnStore(bool leader) {
    Result<std::unique_ptr<Journal>> j = OpenPostgresJournal(url_, {.schema = schema_, .take_over = leader});
    EXPECT_TRUE(j.ok()) << (j.ok() ? "" : j.error().message);
    if (!j.ok()) return nullptr;
    Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*j), SchedulerConfig());
    EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
    return core.ok() ? std::move(*core) : nullptr;
  }

  std::string url_, schema_;
  std::unique_ptr<ControlPlane> follower_;
};

TEST_F(FollowerTest, AFollowerShowsWhatTheLeaderShowsThroughACompaction) {
  ::testing::internal::CaptureStderr();  // silent nodes are logged at every tick
  std::mt19937_64 rng(17);
  int compactions = 0;
  for (int i = 1; i <= 240; ++i) {
    now_ += 1000;
    const std::string step = Step(rng);
    ASSERT_TRUE(core_->Flush().ok()) << step;
    if (i % 80 == 40) {  // a snapshot, and the records it covers dropped, behind the follower's back
      const auto copy = core_->CopyForSnapshot();
      ASSERT_TRUE(core_->journal().WriteSnapshot(ControlPlane::EncodeSnapshot(*copy)).ok());
      ASSERT_TRUE(core_->SnapshotWritten(ControlPlane::SnapshotSeq(*copy)).ok());
      ++compactions;
    }
    if (i % 20 != 0) continue;
    Result<int64_t> caught = follower_->CatchUp();
    ASSERT_TRUE(caught.ok()) << caught.error().message;
    ASSERT_EQ(Visible(*follower_), Visible(*core_)) << "after step " << i << " (" << step << ")";
  }
  EXPECT_EQ(compactions, 3);
  EXPECT_EQ(follower_->journal().last_seq(), core_->journal().last_seq());
  (void)::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace gpupool
