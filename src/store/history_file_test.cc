// The history file (store/sqlite_history.h): compaction moves archived jobs and audit lines out of
// the journal's file, which stays bounded; the reads see each row once wherever it is, across a
// compaction cut between its two transactions; a lost, older or damaged history file is refused
// at open, and --recover replaces it, saying what was lost.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "store/journal.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

class HistoryFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpupool-hist-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string JournalPath() const { return (dir_ / "journal.db").string(); }
  std::string HistPath() const { return (dir_ / "journal-history.db").string(); }
  std::unique_ptr<Journal> Open() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(JournalPath());
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  }
  std::string Refusal() {
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(JournalPath());
    EXPECT_FALSE(j.ok());
    return j.ok() ? "" : j.error().message;
  }
  // Appends `n` jobs archived (ids next_job_..) and, with each, one audit line; `pad` bytes each.
  void ArchiveJobs(Journal& j, int n, size_t pad = 10) {
    for (int i = 0; i < n; ++i, ++next_job_) {
      Record job{0, "job_archived", "{\"id\":" + std::to_string(next_job_) + ",\"pad\":\"" + std::string(pad, 'x') + "\"}"};
      job.history = {HistoryKey::Kind::kJob, next_job_, next_job_ % 2 ? "a" : "b", "succeeded", next_job_ * 10,
                     next_job_ * 10 + 5};
      Record audit{0, "audit", "{\"action\":\"cancel\",\"job\":" + std::to_string(next_job_) + "}"};
      audit.history = {HistoryKey::Kind::kAudit, 0, "a", "", 0, 0};
      std::vector<Record> batch = {job, audit};
      ASSERT_TRUE(j.Append(batch).ok());
    }
  }
  static void Compact(Journal& j) {
    ASSERT_TRUE(j.WriteSnapshot({j.last_seq(), 1, "state"}).ok());
    Status s = j.Compact(j.last_seq());
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  // Every archived job and audit line, checked: each once, newest first, pages that join up.
  static void ExpectAll(Journal& j, int64_t jobs) {
    Result<std::vector<std::pair<int64_t, std::string>>> all = j.ArchivedJobs({});
    ASSERT_TRUE(all.ok()) << all.error().message;
    ASSERT_EQ(static_cast<int64_t>(all->size()), jobs);
    for (int64_t i = 0; i < jobs; ++i) EXPECT_EQ((*all)[i].first, jobs - i);
    ArchiveQuery page{0, "a", "", 7};
    int64_t seen = 0;
    for (;;) {
      Result<std::vector<std::pair<int64_t, std::string>>> p = j.ArchivedJobs(page);
      ASSERT_TRUE(p.ok());
      for (const auto& [id, body] : *p) EXPECT_EQ(id % 2, 1) << id;
      seen += static_cast<int64_t>(p->size());
      if (p->size() < 7) break;
      page.before = p->back().first;
    }
    EXPECT_EQ(seen, (jobs + 1) / 2);
    Result<std::optional<std::string>> one = j.ArchivedJob(1);
    ASSERT_TRUE(one.ok() && one->has_value());
    EXPECT_NE((*one)->find("\"id\":1,"), std::string::npos);
    Result<std::vector<std::pair<int64_t, std::string>>> audit = j.AuditLines(0, "a", 0);
    ASSERT_TRUE(audit.ok());
    EXPECT_EQ(static_cast<int64_t>(audit->size()), jobs);
    Result<std::vector<std::string>> usage = j.ArchivedUsage(0, jobs * 10 + 100);
    ASSERT_TRUE(usage.ok());
    EXPECT_EQ(static_cast<int64_t>(usage->size()), jobs);
  }
  // Rows of `table` in the file at `path` (a connection of its own).
  static int64_t Rows(const std::string& path, const std::string& table) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
  }
  static void Sql(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  static uintmax_t Size(const std::string& path) {
    uintmax_t n = 0;
    for (const char* s : {"", "-wal"}) n += fs::exists(path + s) ? fs::file_size(path + s) : 0;
    return n;
  }
  fs::path dir_;
  int64_t next_job_ = 1;
};

TEST_F(HistoryFileTest, CompactionMovesTheHistoryOutOfTheJournalsFile) {
  std::unique_ptr<Journal> j = Open();
  ArchiveJobs(*j, 30);
  ExpectAll(*j, 30);
  Compact(*j);
  ArchiveJobs(*j, 20);  // these stay in the journal's file until the next compaction
  ExpectAll(*j, 50);
  j.reset();
  EXPECT_EQ(Rows(JournalPath(), "archived_jobs"), 20);
  EXPECT_EQ(Rows(JournalPath(), "audit_log"), 20);
  EXPECT_EQ(Rows(HistPath(), "archived_jobs"), 30);
  EXPECT_EQ(Rows(HistPath(), "audit_log"), 30);
  j = Open();
  ASSERT_TRUE(j);
  ExpectAll(*j, 50);
  Compact(*j);
  ExpectAll(*j, 50);
  j.reset();
  EXPECT_EQ(Rows(JournalPath(), "archived_jobs"), 0);
  EXPECT_EQ(Rows(HistPath(), "archived_jobs"), 50);
}

TEST_F(HistoryFileTest, TheJournalsFileStaysBoundedWhileTheHistoryGrows) {
  std::unique_ptr<Journal> j = Open();
  uintmax_t journal_early = 0, history_early = 0;
  for (int round = 0; round < 12; ++round) {
    ArchiveJobs(*j, 200, 4000);  // about 0.8 MB of history a round
    Compact(*j);
    if (round == 2) journal_early = Size(JournalPath()), history_early = Size(HistPath());
  }
  ExpectAll(*j, 12 * 200);
  j.reset();
  // From the third round to the twelfth the history grows fourfold; the journal's file (and its
  // WAL) does not grow.
  EXPECT_GT(Size(HistPath()), 3 * history_early);
  EXPECT_LT(2 * Size(JournalPath()), Size(HistPath()));
  EXPECT_LE(Size(JournalPath()), journal_early + journal_early / 4)
      << "journal " << Size(JournalPath()) << " (" << journal_early << " after round 3), history " << Size(HistPath());
}

TEST_F(HistoryFileTest, ACompactionCutBetweenItsTransactionsCountsEachRowOnce) {
  std::unique_ptr<Journal> j = Open();
  ArchiveJobs(*j, 10);
  const int64_t last = j->last_seq();
  j.reset();
  // What Compact's first transaction leaves when the process dies before its second: the rows
  // copied into the history file with its mark, and still in the journal's file.
  Sql(JournalPath(), "ATTACH '" + HistPath() + "' AS hist; "
                     "INSERT INTO hist.archived_jobs SELECT * FROM main.archived_jobs; "
                     "INSERT INTO hist.audit_log SELECT * FROM main.audit_log; "
                     "UPDATE hist.history_mark SET through = " + std::to_string(last) + ";");
  j = Open();
  ASSERT_TRUE(j);
  ExpectAll(*j, 10);
  ArchiveJobs(*j, 5);
  ExpectAll(*j, 15);
  Compact(*j);
  ExpectAll(*j, 15);
}

TEST_F(HistoryFileTest, AFailedMoveDropsNothingAndTheNextCompactionMovesIt) {
  std::unique_ptr<Journal> j = Open();
  ArchiveJobs(*j, 6);
  // Another writer holds the history file: the move fails as a failed write would.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(HistPath().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_TRUE(j->WriteSnapshot({j->last_seq(), 1, "state"}).ok());
  EXPECT_FALSE(j->Compact(j->last_seq()).ok());
  Result<std::vector<Record>> all = j->ReadAll();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 12u);  // no record dropped
  ExpectAll(*j, 6);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  Compact(*j);
  ExpectAll(*j, 6);
  j.reset();
  EXPECT_EQ(Rows(JournalPath(), "archived_jobs"), 0);
}

TEST_F(HistoryFileTest, ALostOrOlderHistoryFileIsRefusedAndRecoverReplacesIt) {
  std::unique_ptr<Journal> j = Open();
  ArchiveJobs(*j, 10);
  Compact(*j);
  const int64_t first = j->last_seq();
  j.reset();
  const std::string older = (dir_ / "older.db").string();
  fs::copy_file(HistPath(), older);
  j = Open();
  ArchiveJobs(*j, 10);
  Compact(*j);
  const int64_t second = j->last_seq();
  j.reset();

  // An older copy: the journal moved more into it than it holds.
  fs::copy_file(HistPath(), older + ".newer");
  fs::copy_file(older, HistPath(), fs::copy_options::overwrite_existing);
  std::string why = Refusal();
  EXPECT_NE(why.find(HistPath()), std::string::npos) << why;
  EXPECT_NE(why.find("records " + std::to_string(first + 1) + ".." + std::to_string(second) + " are missing"),
            std::string::npos) << why;
  // Gone.
  fs::remove(HistPath());
  why = Refusal();
  EXPECT_NE(why.find(HistPath()), std::string::npos) << why;
  EXPECT_NE(why.find("missing"), std::string::npos) << why;
  // Half of it.
  fs::copy_file(older + ".newer", HistPath());
  fs::resize_file(HistPath(), fs::file_size(HistPath()) / 2);
  why = Refusal();
  EXPECT_NE(why.find(HistPath()), std::string::npos) << why;

  // --recover: the journal's records are whole; the history file is set aside and replaced.
  Result<JournalRecovery> r = RecoverSqliteJournal(JournalPath());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->dropped, 0);
  EXPECT_NE(r->damage.find("records 1.." + std::to_string(second) + " are lost"), std::string::npos) << r->damage;
  ASSERT_FALSE(r->moved_aside.empty());
  EXPECT_TRUE(fs::exists(r->moved_aside.front()));
  j = Open();
  ASSERT_TRUE(j);
  Result<std::vector<std::pair<int64_t, std::string>>> left = j->ArchivedJobs({});
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
  ArchiveJobs(*j, 3);
  Result<std::vector<std::pair<int64_t, std::string>>> now = j->ArchivedJobs({});
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->size(), 3u);
}

TEST_F(HistoryFileTest, AJournalFromBeforeTheHistoryFileOpensAndMovesItsHistoryAtTheNextCompaction) {
  {
    std::unique_ptr<Journal> j = Open();
    ArchiveJobs(*j, 8);
  }
  // Before this version the history file did not exist and every row lived in the journal's file.
  fs::remove(HistPath());
  std::unique_ptr<Journal> j = Open();
  ASSERT_TRUE(j);
  ExpectAll(*j, 8);
  Compact(*j);
  ExpectAll(*j, 8);
  j.reset();
  EXPECT_EQ(Rows(JournalPath(), "archived_jobs"), 0);
  EXPECT_EQ(Rows(HistPath(), "archived_jobs"), 8);
}

}  // namespace
}  // namespace gpupool
