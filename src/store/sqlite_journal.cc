#include <sqlite3.h>

#include "store/journal.h"

namespace gpupool {
namespace {

class SqliteJournal final : public Journal {
 public:
  explicit SqliteJournal(sqlite3* db) : db_(db) {}
  ~SqliteJournal() override {
    sqlite3_finalize(insert_);
    sqlite3_close(db_);
  }

  Status Init() {
    for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                            "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, "
                            "kind TEXT NOT NULL, body TEXT NOT NULL)"}) {
      GP_RETURN_IF_ERROR(Exec(sql));
    }
    if (sqlite3_prepare_v2(db_, "INSERT INTO journal (seq, kind, body) VALUES (?, ?, ?)", -1,
                           &insert_, nullptr) != SQLITE_OK) {
      return Fail("prepare insert");
    }
    sqlite3_stmt* max = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT COALESCE(MAX(seq), 0) FROM journal", -1, &max, nullptr) !=
        SQLITE_OK) {
      return Fail("prepare max");
    }
    if (sqlite3_step(max) == SQLITE_ROW) next_ = sqlite3_column_int64(max, 0) + 1;
    sqlite3_finalize(max);
    return Ok();
  }

  Status Append(std::vector<Record>& batch) override {
    if (batch.empty()) return Ok();
    GP_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    int64_t seq = next_;
    for (Record& r : batch) {
      sqlite3_reset(insert_);
      sqlite3_bind_int64(insert_, 1, seq);
      sqlite3_bind_text(insert_, 2, r.kind.data(), static_cast<int>(r.kind.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert_, 3, r.body.data(), static_cast<int>(r.body.size()), SQLITE_STATIC);
      if (sqlite3_step(insert_) != SQLITE_DONE) {
        const Status err = Fail("insert");
        (void)Exec("ROLLBACK");
        return err;
      }
      r.seq = seq++;
    }
    if (Status s = Exec("COMMIT"); !s.ok()) {
      (void)Exec("ROLLBACK");
      return s;
    }
    next_ = seq;
    return Ok();
  }

  Result<std::vector<Record>> ReadAll() override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT seq, kind, body FROM journal ORDER BY seq", -1, &st,
                           nullptr) != SQLITE_OK) {
      return Fail("prepare read").error();
    }
    std::vector<Record> out;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      Record r;
      r.seq = sqlite3_column_int64(st, 0);
      r.kind = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
      r.body = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
      out.push_back(std::move(r));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return Fail("read").error();
    return out;
  }

 private:
  Status Exec(const char* sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      const std::string m = msg ? msg : "unknown";
      sqlite3_free(msg);
      return Error{ErrorCode::kUnavailable, std::string("journal: ") + sql + ": " + m};
    }
    return Ok();
  }
  Status Fail(const char* what) {
    return Error{ErrorCode::kUnavailable, std::string("journal ") + what + ": " + sqlite3_errmsg(db_)};
  }

  sqlite3* db_;
  sqlite3_stmt* insert_ = nullptr;
  int64_t next_ = 1;
};

}  // namespace

Result<std::unique_ptr<Journal>> OpenSqliteJournal(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    const std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{ErrorCode::kUnavailable, "cannot open journal " + path + ": " + m};
  }
  auto j = std::make_unique<SqliteJournal>(db);
  GP_RETURN_IF_ERROR(j->Init());
  return std::unique_ptr<Journal>(std::move(j));
}

}  // namespace gpupool
