// The journal's contract (store/journal.h), run against both stores: SQLite files and a real
// PostgreSQL 15 (scripts/test-postgres.sh). Then what only the PostgreSQL store has: the
// writer's epoch, a lost connection, an unreachable server.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "store/journal.h"
#include "store/pg_journal.h"
#include "store/test_postgres.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;

// One store under test: how to open it, and how to change its tables behind its back.
class Store {
 public:
  virtual ~Store() = default;
  virtual Result<std::unique_ptr<Journal>> Open() = 0;
  // Runs SQL on the store's tables directly; "{t}" stands for the tables' prefix.
  virtual void Behind(std::string sql) = 0;
  static std::string Tables(std::string sql, const std::string& prefix) {
    for (size_t at; (at = sql.find("{t}")) != std::string::npos;) sql.replace(at, 3, prefix);
    return sql;
  }
};

class SqliteStore final : public Store {
 public:
  SqliteStore() : dir_(fs::temp_directory_path() / ("gpupool-contract-" + std::to_string(std::random_device{}()))) {
    fs::create_directories(dir_);
  }
  ~SqliteStore() override { fs::remove_all(dir_); }
  Result<std::unique_ptr<Journal>> Open() override { return OpenSqliteJournal((dir_ / "journal.db").string()); }
  void Behind(std::string sql) override {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "journal.db").c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db, Tables(sql, "").c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
  }

 private:
  fs::path dir_;
};

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(std::string url) : url_(std::move(url)), schema_(testing::UniqueSchema("contract")) {}
  ~PostgresStore() override { (void)testing::PostgresSql(url_, "DROP SCHEMA IF EXISTS " + schema_ + " CASCADE"); }
  Result<std::unique_ptr<Journal>> Open() override { return OpenPostgresJournal(url_, {.schema = schema_}); }
  void Behind(std::string sql) override { EXPECT_EQ(testing::PostgresSql(url_, Tables(sql, schema_ + ".")), ""); }

 private:
  std::string url_, schema_;
};

class JournalContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      store_ = std::make_unique<SqliteStore>();
      return;
    }
    Result<std::string> url = testing::TestPostgresUrl();
    ASSERT_TRUE(url.ok()) << url.error().message;
    store_ = std::make_unique<PostgresStore>(*url);
  }
  std::unique_ptr<Journal> Open() {
    Result<std::unique_ptr<Journal>> j = store_->Open();
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  }
  std::string OpenError() {
    Result<std::unique_ptr<Journal>> j = store_->Open();
    return j.ok() ? "" : j.error().message;
  }
  // Appends one-record batches k1..kN.
  static void Fill(Journal& j, int from, int to) {
    for (int i = from; i <= to; ++i) {
      std::vector<Record> batch = {{0, "k" + std::to_string(i), "{\"i\":" + std::to_string(i) + "}"}};
      ASSERT_TRUE(j.Append(batch).ok());
      EXPECT_EQ(batch[0].seq, i);
    }
  }
  std::unique_ptr<Store> store_;
};

TEST_P(JournalContract, AppendsInOrderAndSurvivesReopen) {
  {
    std::unique_ptr<Journal> j = Open();
    ASSERT_NE(j, nullptr);
    std::vector<Record> batch = {{0, "a", "{\"x\":1}"}, {0, "b", "{\"x\":2}"}};
    ASSERT_TRUE(j->Append(batch).ok());
    EXPECT_EQ(batch[0].seq, 1);
    EXPECT_EQ(batch[1].seq, 2);
    EXPECT_EQ(j->last_seq(), 2);
  }
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->last_seq(), 2);
  std::vector<Record> more = {{0, "c", "{}"}};
  ASSERT_TRUE(j->Append(more).ok());
  EXPECT_EQ(more[0].seq, 3) << "sequence numbers continue after a reopen";
  Result<std::vector<Record>> all = j->ReadAll();
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].kind, "a");
  EXPECT_EQ((*all)[1].body, "{\"x\":2}");
  EXPECT_EQ((*all)[2].seq, 3);
}

TEST_P(JournalContract, BodiesKeepEveryByte) {
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  const std::string body = std::string("{\"s\":\"caf\xc3\xa9 \\u0000 'q' \\\"dq\\\" \xff\xfe\"}") + std::string(1, '\0') + "tail";
  std::vector<Record> batch = {{0, "k", body}};
  ASSERT_TRUE(j->Append(batch).ok());
  j.reset();
  j = Open();
  ASSERT_NE(j, nullptr);
  EXPECT_EQ((*j->ReadAll())[0].body, body);
}

TEST_P(JournalContract, ABigBatchIsOneAppend) {
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  std::vector<Record> batch;
  for (int i = 0; i < 2500; ++i) batch.push_back({0, "k", std::to_string(i)});
  ASSERT_TRUE(j->Append(batch).ok());
  EXPECT_EQ(batch.back().seq, 2500);
  j = Open();
  ASSERT_NE(j, nullptr);
  Result<std::vector<Record>> all = j->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2500u);
  EXPECT_EQ((*all)[1234].body, "1234");
}

TEST_P(JournalContract, AStartResumesAfterTheSnapshotItsCompactionKept) {
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  Fill(*j, 1, 5);
  Result<Snapshot> none = j->ReadSnapshot();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->seq, 0);
  ASSERT_TRUE(j->WriteSnapshot({2, 7, "state at 2"}).ok());
  ASSERT_TRUE(j->WriteSnapshot({3, 7, std::string("state at 3\0!", 12)}).ok());
  ASSERT_TRUE(j->Compact(3).ok());
  EXPECT_FALSE(j->Compact(9).ok()) << "past the last record";
  j = Open();
  ASSERT_NE(j, nullptr);
  Result<Snapshot> s = j->ReadSnapshot();
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->seq, 3);
  EXPECT_EQ(s->format, 7);
  EXPECT_EQ(s->body, std::string("state at 3\0!", 12));
  Result<std::vector<Record>> tail = j->ReadAll();
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].seq, 4);
  Fill(*j, 6, 6);
}

TEST_P(JournalContract, TheHistoryIsServedAndOutlivesCompaction) {
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  std::vector<Record> batch;
  for (int id = 1; id <= 5; ++id) {
    Record r{0, "job_end", "job " + std::to_string(id)};
    r.history = {HistoryKey::Kind::kJob, id, id % 2 ? "a" : "b", id == 3 ? "failed" : "succeeded", id * 100, id * 100 + 50};
    batch.push_back(r);
  }
  for (int i = 1; i <= 3; ++i) {
    Record r{0, "audit", "line " + std::to_string(i)};
    r.history = {HistoryKey::Kind::kAudit, 0, i == 2 ? "b" : "a"};
    batch.push_back(r);
  }
  ASSERT_TRUE(j->Append(batch).ok());
  ASSERT_TRUE(j->WriteSnapshot({8, 1, "all"}).ok());
  ASSERT_TRUE(j->Compact(8).ok());
  j = Open();
  ASSERT_NE(j, nullptr);
  Result<std::optional<std::string>> three = j->ArchivedJob(3);
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->value_or(""), "job 3");
  EXPECT_FALSE(j->ArchivedJob(42)->has_value());
  using Rows = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(*j->ArchivedJobs({}), (Rows{{5, "job 5"}, {4, "job 4"}, {3, "job 3"}, {2, "job 2"}, {1, "job 1"}}));
  EXPECT_EQ(*j->ArchivedJobs({.before = 5, .tenant = "a", .limit = 1}), (Rows{{3, "job 3"}}));
  EXPECT_EQ(*j->ArchivedJobs({.state = "failed"}), (Rows{{3, "job 3"}}));
  EXPECT_EQ(*j->ArchivedUsage(220, 360), (std::vector<std::string>{"job 2", "job 3"}));
  EXPECT_EQ(*j->AuditLines(0, "", 0), (Rows{{8, "line 3"}, {7, "line 2"}, {6, "line 1"}}));
  EXPECT_EQ(*j->AuditLines(8, "a", 1), (Rows{{6, "line 1"}}));
}

TEST_P(JournalContract, ARecordChangedBehindItsBackIsRefused) {
  Fill(*Open(), 1, 3);
  store_->Behind("UPDATE {t}journal SET kind = 'changed' WHERE seq = 2");
  const std::string error = OpenError();
  EXPECT_NE(error.find("record 2"), std::string::npos) << error;
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
}

TEST_P(JournalContract, ALostRecordIsRefusedNotReadAsAShorterJournal) {
  Fill(*Open(), 1, 3);
  store_->Behind("DELETE FROM {t}journal WHERE seq = 3");
  std::string error = OpenError();
  EXPECT_NE(error.find("3"), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  store_->Behind("DELETE FROM {t}journal WHERE seq = 2");
  EXPECT_NE(OpenError(), "");
}

INSTANTIATE_TEST_SUITE_P(Stores, JournalContract, ::testing::Values("sqlite", "postgres"),
                         [](const auto& p) { return p.param; });

// ---- PostgreSQL only ----

class PostgresJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::string> url = testing::TestPostgresUrl();
    ASSERT_TRUE(url.ok()) << url.error().message;
    // Its own application name: the connection test ends only this test's connections.
    url_ = *url + "&application_name=" + schema_;
  }
  void TearDown() override { (void)testing::PostgresSql(url_, "DROP SCHEMA IF EXISTS " + schema_ + " CASCADE"); }
  std::unique_ptr<Journal> Open() {
    Result<std::unique_ptr<Journal>> j = OpenPostgresJournal(url_, {.schema = schema_});
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  }
  const std::string schema_ = testing::UniqueSchema("pgonly");
  std::string url_;
};

// Opening the store takes the next epoch; the writer it deposed can no longer append, snapshot
// or compact, even though nothing told it. Its reads still work.
TEST_F(PostgresJournalTest, ASecondWriterDeposesTheFirst) {
  std::unique_ptr<Journal> first = Open();
  ASSERT_NE(first, nullptr);
  std::vector<Record> a = {{0, "a", "1"}};
  ASSERT_TRUE(first->Append(a).ok());
  ASSERT_TRUE(first->WriteSnapshot({1, 1, "s1"}).ok());
  std::unique_ptr<Journal> second = Open();
  ASSERT_NE(second, nullptr);

  std::vector<Record> b = {{0, "b", "2"}};
  const Status refused = first->Append(b);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("took over"), std::string::npos) << refused.error().message;
  EXPECT_FALSE(first->WriteSnapshot({1, 1, "stale"}).ok());
  EXPECT_FALSE(first->Compact(1).ok());
  EXPECT_EQ(first->ReadAll()->size(), 1u);

  std::vector<Record> c = {{0, "c", "3"}};
  ASSERT_TRUE(second->Append(c).ok());
  EXPECT_EQ(c[0].seq, 2);
  EXPECT_EQ(second->ReadSnapshot()->body, "s1");
  Result<std::vector<Record>> all = Open()->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].kind, "c");
}

// A connection the server ends (a restart, a failover, an administrator) fails the append that
// meets it; the next one reconnects and goes on from what is durable.
TEST_F(PostgresJournalTest, ALostConnectionFailsOneAppendAndTheNextReconnects) {
  std::unique_ptr<Journal> j = Open();
  ASSERT_NE(j, nullptr);
  std::vector<Record> a = {{0, "a", "1"}};
  ASSERT_TRUE(j->Append(a).ok());
  ASSERT_EQ(testing::PostgresSql(url_, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                       "application_name = '" + schema_ + "' AND pid <> pg_backend_pid()"),
            "");
  std::vector<Record> b = {{0, "b", "2"}};
  EXPECT_FALSE(j->Append(b).ok());
  Result<std::vector<Record>> durable = j->ReadAll();
  ASSERT_TRUE(durable.ok()) << durable.error().message;
  EXPECT_EQ(durable->size(), 1u);
  std::vector<Record> c = {{0, "c", "3"}};
  ASSERT_TRUE(j->Append(c).ok());
  EXPECT_EQ(c[0].seq, 2);
}

// Replicas: each opens the store as a follower; the lease goes to the first that campaigns, the
// others read what it writes; when it stops renewing, the next campaign after the lease takes
// over with a new epoch, and the old writer can no longer write.
TEST_F(PostgresJournalTest, TheLeaseGoesToOneReplicaAndOverToAnotherWhenItLapses) {
  auto open_follower = [&] {
    Result<std::unique_ptr<Journal>> j = OpenPostgresJournal(url_, {.schema = schema_, .take_over = false});
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  };
  std::unique_ptr<Journal> a = open_follower(), b = open_follower();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<Record> early = {{0, "x", "1"}};
  EXPECT_FALSE(a->Append(early).ok()) << "no replica writes before it holds the lease";

  Result<Leadership> la = a->Campaign({.url = "http://a", .lease_ms = 400});
  ASSERT_TRUE(la.ok()) << la.error().message;
  EXPECT_TRUE(la->leader);
  EXPECT_TRUE(la->promoted);
  Result<Leadership> lb = b->Campaign({.url = "http://b", .lease_ms = 400});
  ASSERT_TRUE(lb.ok());
  EXPECT_FALSE(lb->leader);
  EXPECT_EQ(lb->leader_url, "http://a");
  EXPECT_EQ(lb->epoch, la->epoch);

  std::vector<Record> one = {{0, "a1", "1"}, {0, "a2", "2"}};
  ASSERT_TRUE(a->Append(one).ok());
  EXPECT_FALSE(b->Append(one).ok()) << "a follower never writes";
  Result<std::vector<Record>> tail = b->ReadAfter(0);
  ASSERT_TRUE(tail.ok()) << tail.error().message;
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ(b->last_seq(), 2);
  EXPECT_TRUE(b->ReadAfter(2)->empty());

  Result<Leadership> renewed = a->Campaign({.url = "http://a", .lease_ms = 400});
  ASSERT_TRUE(renewed.ok());
  EXPECT_TRUE(renewed->leader);
  EXPECT_FALSE(renewed->promoted);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // a stops renewing
  Result<Leadership> taken = b->Campaign({.url = "http://b", .lease_ms = 400});
  ASSERT_TRUE(taken.ok());
  EXPECT_TRUE(taken->promoted);
  EXPECT_EQ(taken->epoch, la->epoch + 1);
  std::vector<Record> stale = {{0, "a3", "3"}};
  EXPECT_FALSE(a->Append(stale).ok()) << "the deposed writer is fenced before it knows";
  std::vector<Record> two = {{0, "b3", "3"}};
  ASSERT_TRUE(b->Append(two).ok());
  EXPECT_EQ(two[0].seq, 3);
  Result<Leadership> told = a->Campaign({.url = "http://a", .lease_ms = 400});
  ASSERT_TRUE(told.ok());
  EXPECT_FALSE(told->leader);
  EXPECT_TRUE(told->deposed);
  EXPECT_EQ(told->leader_url, "http://b");

  // A follower that fell behind a compaction is told to load the snapshot again.
  ASSERT_TRUE(b->WriteSnapshot({3, 1, "s3"}).ok());
  ASSERT_TRUE(b->Compact(3).ok());
  Result<std::vector<Record>> gone = a->ReadAfter(1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kNotFound);
}

// A replica that restarts (same id: its data directory's lock holds one process per id) takes
// its live lease back at once; another id waits for the lease to lapse.
TEST_F(PostgresJournalTest, AReplicaThatRestartsTakesItsOwnLeaseBackAtOnce) {
  auto open_follower = [&] {
    Result<std::unique_ptr<Journal>> j = OpenPostgresJournal(url_, {.schema = schema_, .take_over = false});
    EXPECT_TRUE(j.ok()) << j.error().message;
    return j.ok() ? std::move(*j) : nullptr;
  };
  std::unique_ptr<Journal> first = open_follower();
  ASSERT_NE(first, nullptr);
  Result<Leadership> held = first->Campaign({.url = "http://a", .id = "replica-a", .lease_ms = 60000});
  ASSERT_TRUE(held.ok() && held->promoted);
  std::unique_ptr<Journal> other = open_follower(), again = open_follower();
  Result<Leadership> waits = other->Campaign({.url = "http://b", .id = "replica-b", .lease_ms = 60000});
  ASSERT_TRUE(waits.ok());
  EXPECT_FALSE(waits->leader) << "another replica waits for the lease to lapse";
  Result<Leadership> back = again->Campaign({.url = "http://a", .id = "replica-a", .lease_ms = 60000});
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->promoted);
  EXPECT_EQ(back->epoch, held->epoch + 1);
  std::vector<Record> stale = {{0, "x", "1"}};
  EXPECT_FALSE(first->Append(stale).ok()) << "the previous process of the replica is fenced";
  std::vector<Record> fresh = {{0, "y", "1"}};
  EXPECT_TRUE(again->Append(fresh).ok());
}

TEST_F(PostgresJournalTest, AnUnreachableServerIsUnavailable) {
  Result<std::unique_ptr<Journal>> j = OpenPostgresJournal("postgresql:///postgres?host=/nonexistent&user=postgres");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(j.error().message.find("cannot connect to PostgreSQL"), std::string::npos) << j.error().message;
}

TEST_F(PostgresJournalTest, ABadSchemaNameIsQuotedNotRun) {
  Result<std::unique_ptr<Journal>> j = OpenPostgresJournal(url_, {.schema = schema_ + "\"; DROP TABLE x; --"});
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(testing::PostgresSql(url_, "DROP SCHEMA \"" + schema_ + "\"\"; DROP TABLE x; --\" CASCADE"), "");
}

}  // namespace
}  // namespace gpupool
