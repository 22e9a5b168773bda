// Snapshots of the core (issue 16 item 2): a start from a snapshot and the journal's tail has the
// very state the live core had (every journaled member, compared in the snapshot's own encoding,
// and everything the API shows); a copy taken on the loop is not disturbed by the changes made
// while it is encoded; damaged, missing or foreign snapshots are refused, never loaded as less.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/random_changes.h"
#include "daemon/snapshots.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

class SnapshotTest : public RandomChanges {
 protected:
  // The whole journaled state in the snapshot's encoding (which leaves out the pending reasons,
  // derived data that the next cycle recomputes).
  static std::string Encoded(const ControlPlane& core) {
    return ControlPlane::EncodeSnapshot(*core.CopyForSnapshot()).body;
  }
  // Writes the copy as a snapshot; the journal is compacted only when told.
  void Write(const ControlPlane::SnapshotCopy& copy) {
    ASSERT_TRUE(core_->journal().WriteSnapshot(ControlPlane::EncodeSnapshot(copy)).ok());
  }
  std::vector<std::string> SnapshotFiles() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".snap") out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST_F(SnapshotTest, ASnapshotAndItsTailReplayToTheLiveState) {
  ::testing::internal::CaptureStderr();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    // Half the seeds with a short retention window: jobs leave memory between snapshots too.
    if (seed > 2) core_->SetRetention(Duration::Seconds(15));
    std::shared_ptr<const ControlPlane::SnapshotCopy> pending;  // copied, not yet written
    int64_t written = 0;                                       // written, not yet compacted
    std::vector<std::string> steps;
    for (int i = 0; i < 50; ++i) {
      now_ += 1000;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < n; ++k) steps.push_back(Step(rng));
      ASSERT_TRUE(core_->Flush().ok());
      // The loop's order, at random moments: copy after a flush; write while changes go on;
      // compact later.
      if (written > 0 && rng() % 3 == 0) {
        ASSERT_TRUE(core_->SnapshotWritten(written).ok());
        steps.push_back("compact " + std::to_string(written));
        written = 0;
      }
      if (pending && rng() % 2 == 0) {
        Write(*pending);
        written = ControlPlane::SnapshotSeq(*pending);
        steps.push_back("write " + std::to_string(written));
        pending.reset();
      }
      if (!pending && written == 0 && rng() % 4 == 0) {
        pending = core_->CopyForSnapshot();
        steps.push_back("copy at " + std::to_string(ControlPlane::SnapshotSeq(*pending)));
      }
      if (rng() % 3 != 0) continue;
      std::unique_ptr<ControlPlane> fresh = Fresh();
      ASSERT_TRUE(fresh);
      const std::string mine = Encoded(*core_), loaded = Encoded(*fresh);
      if (mine != loaded || Visible(*core_) != Visible(*fresh)) {
        std::string trail;
        for (const std::string& s : steps) trail += "  " + s + "\n";
        size_t at = 0;
        while (at < mine.size() && at < loaded.size() && mine[at] == loaded[at]) ++at;
        const size_t from = at > 300 ? at - 300 : 0;
        FAIL() << "seed " << seed << ": a start from the snapshot and the tail differs from memory after:\n"
               << trail << "memory, from byte " << from << ":\n" << mine.substr(from, 800) << "\nloaded:\n"
               << loaded.substr(from, 800) << "\nshown (memory):\n" << Visible(*core_).substr(0, 1500)
               << "\nshown (loaded):\n" << Visible(*fresh).substr(0, 1500);
      }
    }
    EXPECT_FALSE(SnapshotFiles().empty()) << "seed " << seed << " never wrote a snapshot";
    if (seed > 2) {
      EXPECT_GT(core_->archived(), 0) << "seed " << seed << " archived no job";
    }
  }
  (void)::testing::internal::GetCapturedStderr();
}

TEST_F(SnapshotTest, ACompactedJournalStartsFromItsSnapshotAlone) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 1, "j"), "").status, 201);
  }
  core_->Tick(Time::FromMillis(3000), true);
  ASSERT_TRUE(core_->Flush().ok());
  std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core_->CopyForSnapshot();
  Write(*copy);
  ASSERT_TRUE(core_->SnapshotWritten(ControlPlane::SnapshotSeq(*copy)).ok());
  EXPECT_EQ(core_->records_since_snapshot(), 0);
  const std::string before = Encoded(*core_);
  std::unique_ptr<ControlPlane> fresh = Fresh();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(Encoded(*fresh), before);
  EXPECT_FALSE(fresh->empty());
  // The journal holds no record the snapshot covers.
  Result<std::vector<Record>> records = fresh->journal().ReadAll();
  ASSERT_TRUE(records.ok());
  EXPECT_TRUE(records->empty());
}

TEST_F(SnapshotTest, ADamagedSnapshotIsRefusedOnceTheJournalNoLongerHoldsItsRecords) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core_->CopyForSnapshot();
  const int64_t seq = ControlPlane::SnapshotSeq(*copy);
  Write(*copy);
  const std::string path = SnapshotFiles().back();
  // Not compacted yet: a damaged snapshot is passed over, the journal still has everything.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(path) / 2));
    f.put('#');
  }
  std::unique_ptr<ControlPlane> fresh = Fresh();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(Encoded(*fresh), Encoded(*core_));
  fresh.reset();
  // Compacted: the damaged file is all there is of records 1..seq, so the start is refused.
  ASSERT_TRUE(core_->SnapshotWritten(seq).ok());
  for (const char* how : {"flip", "truncate", "delete"}) {
    Write(*copy);
    ASSERT_TRUE(fs::exists(path));
    if (std::string(how) == "flip") {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(fs::file_size(path) - 3));
      f.put('#');
    } else if (std::string(how) == "truncate") {
      fs::resize_file(path, fs::file_size(path) / 2);
    } else {
      fs::remove(path);
    }
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
    ASSERT_TRUE(j.ok());
    Result<std::unique_ptr<ControlPlane>> opened = ControlPlane::Open(std::move(*j), SchedulerConfig());
    ASSERT_FALSE(opened.ok()) << how;
    EXPECT_EQ(opened.error().code, ErrorCode::kFailedPrecondition) << how;
    EXPECT_NE(opened.error().message.find("after record " + std::to_string(seq)), std::string::npos)
        << how << ": " << opened.error().message;
  }
}

// The loop drops a durable snapshot's records a few at a time (compact_step_records per call),
// so no request waits behind a whole compaction; a start between any two steps has everything.
TEST_F(SnapshotTest, TheLoopDropsTheSnapshotsRecordsAStepAtATime) {
  ::testing::internal::CaptureStderr();
  Snapshotter snapshots({.every_records = 1, .every_bytes = 0, .retry_after = std::chrono::milliseconds(0),
                         .compact_step_records = 3});
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 1, "j"), "").status, 201);
  }
  ASSERT_TRUE(core_->Flush().ok());
  const size_t all = core_->journal().ReadAll()->size();
  ASSERT_GE(all, 10u);
  snapshots.AfterFlush(*core_);
  snapshots.Finish(*core_);
  ASSERT_EQ(snapshots.written(), 1);
  EXPECT_TRUE(snapshots.compacting());
  EXPECT_EQ(core_->journal().ReadAll()->size(), all) << "collecting the snapshot drops nothing yet";
  const std::string live = Encoded(*core_);
  size_t left = all, steps = 0;
  while (snapshots.compacting()) {
    snapshots.AfterFlush(*core_);
    ++steps;
    const size_t now = core_->journal().ReadAll()->size();
    EXPECT_LT(now, left);
    EXPECT_GE(now + 3, left) << "at most a step's records at a time";
    left = now;
    std::unique_ptr<ControlPlane> fresh = Fresh();
    ASSERT_TRUE(fresh);
    EXPECT_EQ(Encoded(*fresh), live) << "a start after step " << steps;
    ASSERT_LT(steps, all) << "the compaction does not end";
  }
  EXPECT_EQ(left, 0u);
  EXPECT_EQ(steps, (all + 2) / 3);
  (void)::testing::internal::GetCapturedStderr();
}

// A snapshot write that fails (a full disk) compacts nothing: the journal keeps every record, a
// start still has everything, and the next try after the back-off writes it.
TEST_F(SnapshotTest, AFailedSnapshotWriteKeepsTheJournalAndIsRetried) {
  ::testing::internal::CaptureStderr();
  Snapshotter snapshots({.every_records = 1, .every_bytes = 0, .retry_after = std::chrono::milliseconds(0)});
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 2, "a"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  auto& flaky = dynamic_cast<FlakyJournal&>(core_->journal());
  flaky.fail_snapshots = 1;
  const int64_t since = core_->records_since_snapshot();
  snapshots.AfterFlush(*core_);
  snapshots.Finish(*core_);
  EXPECT_EQ(snapshots.failed(), 1);
  EXPECT_EQ(snapshots.written(), 0);
  EXPECT_EQ(core_->records_since_snapshot(), since) << "nothing was compacted";
  EXPECT_TRUE(SnapshotFiles().empty()) << "no partial file is left";
  std::unique_ptr<ControlPlane> fresh = Fresh();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(Encoded(*fresh), Encoded(*core_));
  fresh.reset();
  snapshots.AfterFlush(*core_);
  snapshots.Finish(*core_);
  EXPECT_EQ(snapshots.written(), 1);
  EXPECT_EQ(core_->records_since_snapshot(), 0);
  EXPECT_EQ(SnapshotFiles().size(), 1u);
  fresh = Fresh();
  ASSERT_TRUE(fresh);
  EXPECT_EQ(Encoded(*fresh), Encoded(*core_));
  (void)::testing::internal::GetCapturedStderr();
}

TEST_F(SnapshotTest, ASnapshotOfAnotherFormatIsRefusedWithTheReason) {
  ASSERT_TRUE(core_->Flush().ok());
  gpupool::Snapshot s = ControlPlane::EncodeSnapshot(*core_->CopyForSnapshot());
  s.format = ControlPlane::kSnapshotFormat + 1;
  ASSERT_TRUE(core_->journal().WriteSnapshot(s).ok());
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir_ / "journal.db").string());
  ASSERT_TRUE(j.ok());
  Result<std::unique_ptr<ControlPlane>> opened = ControlPlane::Open(std::move(*j), SchedulerConfig());
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.error().message.find("format"), std::string::npos) << opened.error().message;
}

TEST_F(SnapshotTest, AFailedFlushAfterACompactionRebuildsFromTheSnapshot) {
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 2, "a"), "").status, 201);
  ASSERT_TRUE(core_->Flush().ok());
  std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core_->CopyForSnapshot();
  Write(*copy);
  ASSERT_TRUE(core_->SnapshotWritten(ControlPlane::SnapshotSeq(*copy)).ok());
  const std::string durable = Encoded(*core_);
  ASSERT_EQ(core_->SubmitJob(As(members_["research"], 3000), Job("research", 2, "lost"), "").status, 201);
  fail_next_ = 1;
  EXPECT_FALSE(core_->Flush().ok());
  EXPECT_EQ(Encoded(*core_), durable);
}

}  // namespace
}  // namespace gpupool
