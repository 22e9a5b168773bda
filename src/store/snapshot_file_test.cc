// Snapshot files and journal compaction (store/snapshot_file.h; Journal::WriteSnapshot,
// ReadSnapshot, Compact): a snapshot is whole or refused; a compacted journal starts after its
// snapshot, keeps checking its records from there, and never starts on less than was compacted.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "store/journal.h"
#include "store/snapshot_file.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

class SnapshotFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpupool-snap-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Journal() const { return (dir_ / "journal.db").string(); }
  std::unique_ptr<gpupool::Journal> Open() {
    Result<std::unique_ptr<gpupool::Journal>> j = OpenSqliteJournal(Journal());
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  }
  static void Append(gpupool::Journal& j, int n) {
    for (int i = 0; i < n; ++i) {
      std::vector<Record> batch = {{0, "k", "{\"i\":" + std::to_string(i) + "}"}};
      ASSERT_TRUE(j.Append(batch).ok());
    }
  }
  fs::path dir_;
};

TEST_F(SnapshotFileTest, AWrittenSnapshotReadsBackWhole) {
  const Snapshot s{42, 3, std::string("{\"state\": \"\xff\x00 binary is fine\"}", 31)};
  ASSERT_TRUE(WriteSnapshotFile(dir_.string(), s).ok());
  Result<Snapshot> r = ReadSnapshotFile(SnapshotPath(dir_.string(), 42));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->seq, 42);
  EXPECT_EQ(r->format, 3);
  EXPECT_EQ(r->body, s.body);
  EXPECT_EQ(ListSnapshots(dir_.string()), std::vector<int64_t>{42});
}

TEST_F(SnapshotFileTest, DamageOfAnyKindIsRefusedNamingTheFile) {
  const std::string body(10'000, 'x');
  const std::string path = SnapshotPath(dir_.string(), 7);
  const std::vector<std::pair<std::string, std::function<void()>>> damage = {
      {"a byte flipped in the body", [&] { std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary); f.seekp(5000); f.put('y'); }},
      {"a byte flipped in the header", [&] { std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary); f.seekp(2); f.put('Q'); }},
      {"truncated", [&] { fs::resize_file(path, 4000); }},
      {"empty", [&] { fs::resize_file(path, 0); }},
      {"bytes appended", [&] { std::ofstream(path, std::ios::app) << "more"; }},
  };
  for (const auto& [what, harm] : damage) {
    ASSERT_TRUE(WriteSnapshotFile(dir_.string(), {7, 1, body}).ok());
    harm();
    Result<Snapshot> r = ReadSnapshotFile(path);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition) << what;
    EXPECT_NE(r.error().message.find(path), std::string::npos) << what << ": " << r.error().message;
  }
}

TEST_F(SnapshotFileTest, AWriteCutShortByACrashLeavesNoSnapshot) {
  // What a kill -9 during the write leaves: the .tmp, never the final name.
  std::ofstream(SnapshotPath(dir_.string(), 9) + ".tmp") << "gpupool-snapshot 1 9 1000 00000000\npartial";
  EXPECT_TRUE(ListSnapshots(dir_.string()).empty());
  RemoveSnapshotsBefore(dir_.string(), 10);
  EXPECT_FALSE(fs::exists(SnapshotPath(dir_.string(), 9) + ".tmp"));
}

TEST_F(SnapshotFileTest, ACompactedJournalResumesAfterItsSnapshot) {
  {
    std::unique_ptr<gpupool::Journal> j = Open();
    Append(*j, 10);
    ASSERT_TRUE(j->WriteSnapshot({6, 1, "six"}).ok());
    ASSERT_TRUE(j->Compact(6).ok());
    Result<std::vector<Record>> rest = j->ReadAll();
    ASSERT_TRUE(rest.ok());
    ASSERT_EQ(rest->size(), 4u);
    EXPECT_EQ(rest->front().seq, 7);
  }
  std::unique_ptr<gpupool::Journal> j = Open();
  ASSERT_TRUE(j);
  Result<Snapshot> s = j->ReadSnapshot();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->seq, 6);
  EXPECT_EQ(s->body, "six");
  Result<std::vector<Record>> rest = j->ReadAll();
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 4u);
  EXPECT_EQ(rest->front().seq, 7);
  EXPECT_EQ(j->last_seq(), 10);
  std::vector<Record> more = {{0, "k", "{}"}};
  ASSERT_TRUE(j->Append(more).ok());
  EXPECT_EQ(more[0].seq, 11);
  // A later snapshot and compaction drop the older snapshot file.
  ASSERT_TRUE(j->WriteSnapshot({11, 1, "eleven"}).ok());
  ASSERT_TRUE(j->Compact(11).ok());
  EXPECT_EQ(ListSnapshots(dir_.string()), std::vector<int64_t>{11});
}

TEST_F(SnapshotFileTest, TheNewestIntactSnapshotIsLoadedAndAMissingOneIsRefused) {
  std::unique_ptr<gpupool::Journal> j = Open();
  Append(*j, 10);
  ASSERT_TRUE(j->WriteSnapshot({4, 1, "four"}).ok());
  ASSERT_TRUE(j->Compact(4).ok());
  ASSERT_TRUE(j->WriteSnapshot({8, 1, "eight"}).ok());
  // Not compacted to 8 yet: a damaged 8 falls back to 4, whose records after it are all there.
  fs::resize_file(SnapshotPath(dir_.string(), 8), 10);
  j.reset();
  j = Open();
  Result<Snapshot> s = j->ReadSnapshot();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->seq, 4);
  // Without the snapshot of record 4 nothing covers records 1..4: refused, naming both files.
  fs::remove(SnapshotPath(dir_.string(), 4));
  s = j->ReadSnapshot();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("after record 4"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find(SnapshotPath(dir_.string(), 8)), std::string::npos) << s.error().message;
}

TEST_F(SnapshotFileTest, ARecordLostAfterTheCompactionPointIsDamage) {
  {
    std::unique_ptr<gpupool::Journal> j = Open();
    Append(*j, 10);
    ASSERT_TRUE(j->WriteSnapshot({5, 1, "five"}).ok());
    ASSERT_TRUE(j->Compact(5).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(Journal().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM journal WHERE seq = 6", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<gpupool::Journal>> j = OpenSqliteJournal(Journal());
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("the first record is 7, not 6"), std::string::npos) << j.error().message;
  // --recover keeps the compaction point: the records after the gap go, the snapshot stays valid.
  Result<JournalRecovery> rec = RecoverSqliteJournal(Journal());
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  EXPECT_EQ(rec->kept, 5);
  std::unique_ptr<gpupool::Journal> reopened = Open();
  ASSERT_TRUE(reopened);
  Result<Snapshot> s = reopened->ReadSnapshot();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->seq, 5);
  EXPECT_EQ(reopened->last_seq(), 5);
}

}  // namespace
}  // namespace gpupool
