// The history file (store/sqlite_history.h): attaching it, creating it, and compaction's move
// of history rows from the journal's file into it.
#include <filesystem>

#include "store/crc32c.h"
#include "store/sqlite_db.h"
#include "store/sqlite_history.h"

namespace gpupool::sqlite_store {
namespace {

Error HistoryDamaged(const std::string& path, const std::string& what) {
  return FailedPrecondition("the history file " + path + " is damaged: " + what +
                            ". Restore the data directory from a backup, or start with `gpupool serve --recover` "
                            "to replace it with an empty one (the archived jobs and audit lines it held are lost)");
}

// The single row of `table` (column `through`), or nullopt if the table does not exist.
Result<std::optional<int64_t>> ReadThrough(sqlite3* db, const std::string& schema, const std::string& table) {
  Stmt has(db, "SELECT COUNT(*) FROM " + schema + ".sqlite_master WHERE type = 'table' AND name = '" + table + "'");
  if (!has.ok() || sqlite3_step(has.get()) != SQLITE_ROW) return has.Fail("read the schema of " + schema);
  if (sqlite3_column_int64(has.get(), 0) == 0) return std::optional<int64_t>();
  Stmt read(db, "SELECT through FROM " + schema + "." + table);
  if (!read.ok()) return read.Fail("read " + table);
  int64_t through = -1;
  int rows = 0;
  int rc;
  while ((rc = sqlite3_step(read.get())) == SQLITE_ROW) {
    ++rows;
    if (sqlite3_column_type(read.get(), 0) == SQLITE_INTEGER) through = sqlite3_column_int64(read.get(), 0);
  }
  if (rc != SQLITE_DONE) return read.Fail("read " + table);
  if (rows != 1 || through < 0) return FailedPrecondition(table + " is malformed");
  return std::optional<int64_t>(through);
}

Status WriteThrough(sqlite3* db, const std::string& schema, const std::string& table, int64_t through) {
  const std::string t = schema + "." + table;
  GP_RETURN_IF_ERROR(Exec(db, "CREATE TABLE IF NOT EXISTS " + t + " (through INTEGER NOT NULL)"));
  GP_RETURN_IF_ERROR(Exec(db, "DELETE FROM " + t));
  return Exec(db, "INSERT INTO " + t + " (through) VALUES (" + std::to_string(through) + ")");
}

// In one transaction: the tables and the mark.
Status InitHistory(sqlite3* db, int64_t through) {
  GP_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status s = CreateHistoryTables(db, "hist");
  if (s.ok()) s = WriteThrough(db, "hist", "history_mark", through);
  if (s.ok()) s = Exec(db, "COMMIT");
  if (!s.ok()) (void)Exec(db, "ROLLBACK");
  return s;
}

// What a start can afford to check of a file that grows with all history (a full quick_check
// reads all of it: about 3 s for 2 GB here): its schema, its mark's table, and its newest rows
// with their checksums. Damage elsewhere is found by the read that meets it, which fails naming
// the file. "" if these pass.
std::string HistoryHeaderCheck(sqlite3* db) {
  Stmt check(db, "PRAGMA hist.quick_check(history_mark)");
  if (check.ok() && sqlite3_step(check.get()) == SQLITE_ROW) {
    const char* finding = reinterpret_cast<const char*>(sqlite3_column_text(check.get(), 0));
    if (finding && std::string(finding) != "ok") return std::string("SQLite finds its structure damaged: ") + finding;
  } else {
    return std::string("SQLite cannot check it: ") + sqlite3_errmsg(db);
  }
  for (const char* sql : {"SELECT id, body, crc FROM hist.archived_jobs ORDER BY id DESC LIMIT 1",
                          "SELECT seq, body, crc FROM hist.audit_log ORDER BY seq DESC LIMIT 1"}) {
    Stmt newest(db, sql);
    if (!newest.ok()) continue;  // a file without the tables yet: InitHistory creates them
    const int rc = sqlite3_step(newest.get());
    if (rc == SQLITE_DONE) continue;
    if (rc != SQLITE_ROW) return std::string("SQLite cannot read its newest rows: ") + sqlite3_errmsg(db);
    const unsigned char* p = sqlite3_column_text(newest.get(), 1);
    const std::string body = p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(newest.get(), 1)) : "";
    if (sqlite3_column_int64(newest.get(), 2) != static_cast<int64_t>(Crc32c(body))) {
      return "row " + std::to_string(sqlite3_column_int64(newest.get(), 0)) + " fails its checksum";
    }
  }
  return "";
}

}  // namespace

Status CreateHistoryTables(sqlite3* db, const std::string& schema) {
  Status s = Exec(db, "CREATE TABLE IF NOT EXISTS " + schema +
                          ".archived_jobs (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, tenant TEXT NOT NULL, "
                          "state TEXT NOT NULL, usage_from INTEGER NOT NULL, usage_to INTEGER NOT NULL, "
                          "body TEXT NOT NULL, crc INTEGER NOT NULL)");
  if (s.ok()) s = Exec(db, "CREATE INDEX IF NOT EXISTS " + schema + ".archived_jobs_usage ON archived_jobs (usage_to)");
  if (s.ok()) {
    s = Exec(db, "CREATE TABLE IF NOT EXISTS " + schema +
                     ".audit_log (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, body TEXT NOT NULL, "
                     "crc INTEGER NOT NULL)");
  }
  return s;
}

Result<int64_t> ReadMoved(sqlite3* db) {
  Result<std::optional<int64_t>> moved = ReadThrough(db, "main", "history_moved");
  if (!moved.ok()) return moved.error();
  return moved->value_or(0);
}

Result<int64_t> AttachHistory(sqlite3* db, const std::string& path, bool create) {
  const bool existed = std::filesystem::exists(path);
  if (!existed && !create) return HistoryDamaged(path, "the file is missing");
  // Created on its own first: a journal opened without SQLITE_OPEN_CREATE cannot attach a new file.
  if (!existed) {
    if (Status c = CreateHistory(path, 0); !c.ok()) return HistoryDamaged(path, "cannot create it: " + c.error().message);
  }
  Stmt attach(db, "ATTACH DATABASE ? AS hist");
  if (!attach.ok()) return attach.Fail("prepare attach");
  attach.Bind(1, path);
  if (sqlite3_step(attach.get()) != SQLITE_DONE) return HistoryDamaged(path, std::string("SQLite cannot open it: ") + sqlite3_errmsg(db));
  for (const char* sql : {"PRAGMA hist.journal_mode=WAL", "PRAGMA hist.synchronous=FULL"}) {
    if (!Exec(db, sql).ok()) return HistoryDamaged(path, std::string("SQLite cannot read it: ") + sqlite3_errmsg(db));
  }
  if (std::string finding = HistoryHeaderCheck(db); !finding.empty()) return HistoryDamaged(path, finding);
  Result<std::optional<int64_t>> mark = ReadThrough(db, "hist", "history_mark");
  if (!mark.ok()) return HistoryDamaged(path, mark.error().message);
  // A file without a mark is new (or its creation was interrupted): nothing a compaction moved
  // is in it, and the journal's own account (ReadMoved) says whether something should be.
  // The tables come with the mark (one transaction), so a marked file needs no write at open.
  if (!*mark) {
    if (Status s = InitHistory(db, 0); !s.ok()) return HistoryDamaged(path, s.error().message);
  }
  return mark->value_or(0);
}

Status CreateHistory(const std::string& path, int64_t through) {
  for (const char* suffix : {"", "-wal", "-shm"}) (void)std::filesystem::remove(path + suffix);
  Result<Db> db = OpenDb(path, true);
  if (!db.ok()) return db.error();
  sqlite3* raw = db->get();
  GP_RETURN_IF_ERROR(Exec(raw, "PRAGMA journal_mode=WAL"));
  GP_RETURN_IF_ERROR(Exec(raw, "PRAGMA synchronous=FULL"));
  GP_RETURN_IF_ERROR(Exec(raw, "BEGIN IMMEDIATE"));
  Status s = CreateHistoryTables(raw, "main");
  if (s.ok()) s = WriteThrough(raw, "main", "history_mark", through);
  if (s.ok()) s = Exec(raw, "COMMIT");
  if (!s.ok()) (void)Exec(raw, "ROLLBACK");
  CheckpointOnClose(raw);
  return s;
}

Status MoveHistory(sqlite3* db, int64_t seq) {
  const std::string k = std::to_string(seq);
  GP_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status s = Exec(db, "INSERT OR REPLACE INTO hist.archived_jobs SELECT * FROM main.archived_jobs WHERE seq <= " + k);
  if (s.ok()) s = Exec(db, "INSERT OR REPLACE INTO hist.audit_log SELECT * FROM main.audit_log WHERE seq <= " + k);
  if (s.ok()) s = WriteThrough(db, "hist", "history_mark", seq);
  if (s.ok()) s = Exec(db, "COMMIT");
  if (!s.ok()) (void)Exec(db, "ROLLBACK");
  return s;
}

Status DropMovedHistory(sqlite3* db, int64_t seq) {
  const std::string k = std::to_string(seq);
  GP_RETURN_IF_ERROR(Exec(db, "DELETE FROM main.archived_jobs WHERE seq <= " + k));
  GP_RETURN_IF_ERROR(Exec(db, "DELETE FROM main.audit_log WHERE seq <= " + k));
  return WriteThrough(db, "main", "history_moved", seq);
}

}  // namespace gpupool::sqlite_store

namespace gpupool {

Result<HistoryScrub> ScrubHistoryFile(const std::string& path, const std::atomic<bool>* stop) {
  using sqlite_store::Stmt;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  sqlite_store::Db db(raw);
  if (rc != SQLITE_OK) {
    return Error{ErrorCode::kUnavailable, "cannot open the history file " + path + ": " +
                                              (raw ? sqlite3_errmsg(raw) : "out of memory")};
  }
  if (stop != nullptr) {
    sqlite3_progress_handler(
        db.get(), 10000, [](void* flag) { return static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0; },
        const_cast<std::atomic<bool>*>(stop));
  }
  const auto stopped = [stop] { return stop != nullptr && stop->load(); };
  const Error interrupted{ErrorCode::kUnavailable, "the scrub of " + path + " was stopped"};
  HistoryScrub out;
  // Every row of both tables against its checksum (SQLite does not know of it), which walks their
  // b-trees, then the one index, whose entries must be as many. Not PRAGMA quick_check: in this
  // SQLite it cannot be interrupted, and a stop would wait for all of it (14 s for 1.5 GB).
  const auto rows = [&](const char* table, const char* key, int64_t& count) -> Status {
    Stmt read(db.get(), std::string("SELECT ") + key + ", body, crc FROM " + table);
    if (!read.ok()) return read.Fail(std::string("read ") + table + " of " + path);
    int step;
    while ((step = sqlite3_step(read.get())) == SQLITE_ROW) {
      ++count;
      const unsigned char* p = sqlite3_column_text(read.get(), 1);
      const std::string_view body = p ? std::string_view(reinterpret_cast<const char*>(p), sqlite3_column_bytes(read.get(), 1))
                                      : std::string_view();
      if (sqlite3_column_int64(read.get(), 2) != static_cast<int64_t>(Crc32c(body)) && out.damage.empty()) {
        out.damage = std::string(table) + " row " + std::to_string(sqlite3_column_int64(read.get(), 0)) +
                     " fails its checksum";
      }
    }
    if (step != SQLITE_DONE && stopped()) return interrupted;
    if (step != SQLITE_DONE && out.damage.empty()) {
      out.damage = std::string("SQLite cannot read ") + table + ": " + sqlite3_errmsg(db.get());
    }
    return Ok();
  };
  GP_RETURN_IF_ERROR(rows("archived_jobs", "id", out.archived_jobs));
  GP_RETURN_IF_ERROR(rows("audit_log", "seq", out.audit_lines));
  if (!out.damage.empty()) return out;
  Stmt index(db.get(), "SELECT COUNT(*) FROM archived_jobs INDEXED BY archived_jobs_usage WHERE usage_to >= -9223372036854775807 - 1");
  if (!index.ok()) return index.Fail("read the usage index of " + path);
  const int step = sqlite3_step(index.get());
  if (step != SQLITE_ROW) {
    if (stopped()) return interrupted;
    out.damage = std::string("SQLite cannot read the usage index: ") + sqlite3_errmsg(db.get());
  } else if (sqlite3_column_int64(index.get(), 0) != out.archived_jobs) {
    out.damage = "the usage index holds " + std::to_string(sqlite3_column_int64(index.get(), 0)) + " entries for " +
                 std::to_string(out.archived_jobs) + " archived jobs";
  }
  return out;
}

}  // namespace gpupool
