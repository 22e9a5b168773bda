#include "store/sqlite_db.h"

#include <algorithm>

#include "store/crc32c.h"

namespace gpupool::sqlite_store {
namespace {

// Advances past the damage to find the highest seq still readable (for recovery's count).
int64_t LastReadable(sqlite3_stmt* st, int64_t seen) {
  while (sqlite3_step(st) == SQLITE_ROW) seen = std::max<int64_t>(seen, sqlite3_column_int64(st, 0));
  return seen;
}

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* p = sqlite3_column_text(st, col);
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st, col)));
}

// Why the row in `st` (expected to be record `want`) fails the checks; "" if it passes.
std::string Check(sqlite3_stmt* st, int64_t want, int64_t first, bool has_crc, bool after_checksummed, Record* out) {
  const int64_t seq = sqlite3_column_int64(st, 0);
  const std::string at = "record " + std::to_string(want);
  if (seq < want) return at + " is followed by record " + std::to_string(seq) + " (out of order)";
  if (seq > want) {
    return want == first ? "the first record is " + std::to_string(seq) + ", not " + std::to_string(first)
                     : "the records jump from " + std::to_string(want - 1) + " to " + std::to_string(seq) +
                           ": " + at + (seq - want > 1 ? ".." + std::to_string(seq - 1) : "") + " missing";
  }
  if (sqlite3_column_type(st, 1) != SQLITE_TEXT || sqlite3_column_type(st, 2) != SQLITE_TEXT) {
    return at + " is malformed (its kind or body is not text)";
  }
  out->seq = seq;
  out->kind = Text(st, 1);
  out->body = Text(st, 2);
  const int crc_type = has_crc ? sqlite3_column_type(st, 3) : SQLITE_NULL;
  if (crc_type == SQLITE_NULL) {
    return after_checksummed ? at + " has no checksum, but the records before it have one" : "";
  }
  if (crc_type != SQLITE_INTEGER) return at + " is malformed (its checksum is not an integer)";
  if (sqlite3_column_int64(st, 3) != RecordChecksum(seq, out->kind, out->body)) {
    return at + " fails its checksum (kind '" + out->kind.substr(0, 32) + "')";
  }
  return "";
}

}  // namespace

uint32_t RecordChecksum(int64_t seq, std::string_view kind, std::string_view body) {
  char head[12];
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>(static_cast<uint64_t>(seq) >> (8 * i));
  for (int i = 0; i < 4; ++i) head[8 + i] = static_cast<char>(static_cast<uint32_t>(kind.size()) >> (8 * i));
  return Crc32c(body, Crc32c(kind, Crc32c(std::string_view(head, sizeof(head)))));
}

Result<Db> OpenDb(const std::string& path, bool create) {
  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return Error{ErrorCode::kUnavailable, "cannot open journal " + path + ": " +
                                              (raw ? sqlite3_errmsg(raw) : "out of memory")};
  }
  sqlite3_db_config(raw, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  return db;
}

void CheckpointOnClose(sqlite3* db) { sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr); }

Status Exec(sqlite3* db, const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    const std::string m = msg ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    return Error{ErrorCode::kUnavailable, "journal: " + sql + ": " + m};
  }
  return Ok();
}

namespace {
Result<bool> Exists(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    return Error{ErrorCode::kFailedPrecondition, sqlite3_errmsg(db)};
  }
  const int rc = sqlite3_step(st);
  const bool found = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
  const std::string msg = sqlite3_errmsg(db);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return Error{ErrorCode::kFailedPrecondition, msg};
  return found;
}
}  // namespace

Result<bool> HasTable(sqlite3* db) {
  return Exists(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'journal'");
}

Result<bool> HasChecksums(sqlite3* db) {
  return Exists(db, "SELECT COUNT(*) FROM pragma_table_info('journal') WHERE name = 'crc'");
}

Result<int64_t> ReadBase(sqlite3* db) {
  Result<bool> has = Exists(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'journal_base'");
  if (!has.ok()) return has.error();
  if (!*has) return int64_t{0};
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT through FROM journal_base", -1, &st, nullptr) != SQLITE_OK) {
    return Error{ErrorCode::kFailedPrecondition, sqlite3_errmsg(db)};
  }
  int64_t base = -1;
  int rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ++rows;
    if (sqlite3_column_type(st, 0) == SQLITE_INTEGER) base = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  if (rows != 1 || base < 0) return Error{ErrorCode::kFailedPrecondition, "its compaction point is malformed"};
  return base;
}

Status WriteBase(sqlite3* db, int64_t base) {
  GP_RETURN_IF_ERROR(Exec(db, "CREATE TABLE IF NOT EXISTS journal_base (through INTEGER NOT NULL)"));
  GP_RETURN_IF_ERROR(Exec(db, "DELETE FROM journal_base"));
  return Exec(db, "INSERT INTO journal_base (through) VALUES (" + std::to_string(base) + ")");
}

namespace {
int64_t PragmaInt(sqlite3* db, const char* pragma) {
  sqlite3_stmt* st = nullptr;
  int64_t v = -1;
  if (sqlite3_prepare_v2(db, pragma, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    v = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return v;
}
}  // namespace

void ReleaseFreePages(sqlite3* db) {
  const int64_t mode = PragmaInt(db, "PRAGMA main.auto_vacuum");
  if (mode == 2) {
    (void)Exec(db, "PRAGMA main.incremental_vacuum");
    return;
  }
  const int64_t free_pages = PragmaInt(db, "PRAGMA main.freelist_count");
  const int64_t pages = PragmaInt(db, "PRAGMA main.page_count");
  const int64_t page_size = PragmaInt(db, "PRAGMA main.page_size");
  if (mode != 0 || free_pages * 2 < pages || free_pages * page_size < (int64_t{64} << 20)) return;
  // Failing is harmless: the file only stays as large as it was.
  if (Exec(db, "PRAGMA main.auto_vacuum=INCREMENTAL").ok()) (void)Exec(db, "VACUUM main");
}

std::string QuickCheck(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check(journal)", -1, &st, nullptr) != SQLITE_OK) {
    return std::string("quick_check: ") + sqlite3_errmsg(db);
  }
  std::string finding;
  const int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    finding = Text(st, 0);
    if (finding == "ok") finding.clear();
  } else {
    finding = sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  return finding;
}

Scan ScanJournal(sqlite3* db, bool has_crc, int64_t base) {
  Scan scan;
  scan.base = base;
  sqlite3_stmt* st = nullptr;
  const char* sql = has_crc ? "SELECT seq, kind, body, crc FROM journal ORDER BY seq"
                            : "SELECT seq, kind, body FROM journal ORDER BY seq";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    scan.damage = std::string("SQLite cannot read the journal table: ") + sqlite3_errmsg(db);
    return scan;
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const int64_t want = scan.last() + 1;
    scan.last_seen = std::max<int64_t>(scan.last_seen, sqlite3_column_int64(st, 0));
    Record r;
    scan.damage = Check(st, want, base + 1, has_crc, scan.checksummed, &r);
    if (!scan.damage.empty()) {
      scan.last_seen = LastReadable(st, scan.last_seen);
      break;
    }
    scan.checksummed = has_crc && sqlite3_column_type(st, 3) == SQLITE_INTEGER;
    scan.intact.push_back(std::move(r));
  }
  if (scan.damage.empty() && rc != SQLITE_DONE) {
    scan.damage = "SQLite cannot read past record " + std::to_string(scan.last()) + ": " + sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  return scan;
}

}  // namespace gpupool::sqlite_store

namespace gpupool::sqlite_store {
namespace {

std::string Advice(int64_t kept) {
  if (kept == 0) return "Restore the data directory from a backup (no record is intact, so --recover would keep nothing)";
  return "Restore the data directory from a backup, or start with `gpupool serve --recover` to keep records 1.." +
         std::to_string(kept) + " and drop the rest";
}

}  // namespace

Error JournalDamaged(const std::string& path, const std::string& what, int64_t kept) {
  return FailedPrecondition("the journal " + path + " is damaged: " + what + ". " + Advice(kept));
}

Error RecordsMissing(const std::string& path, const std::string& hwm_path, int64_t last, int64_t mark) {
  const std::string missing = "records " + std::to_string(last + 1) + ".." + std::to_string(mark) + " are missing";
  const std::string start = last == 0 ? "the journal " + path + " is missing or has no records"
                                      : "the journal " + path + " ends at record " + std::to_string(last);
  return FailedPrecondition(start + ", but its high-water mark " + hwm_path + " says " + std::to_string(mark) +
                            " records were acknowledged: " + missing + " (the file or its WAL " + path +
                            "-wal may have been deleted, truncated or damaged). " + Advice(last));
}

Error HistoryBehind(const std::string& history, const std::string& path, int64_t through, int64_t moved, int64_t last) {
  const std::string holds = "the history file " + history + " holds the history of records 1.." + std::to_string(through);
  if (through > last) {
    return FailedPrecondition(holds + ", past the last record of the journal " + path + " (" + std::to_string(last) +
                              "): the journal is older than its history (restored from another backup?). Restore "
                              "both from the same backup, or start with `gpupool serve --recover`");
  }
  return FailedPrecondition(holds + ", but the journal " + path + " moved that of records 1.." + std::to_string(moved) +
                            " into it: the archived jobs and audit lines of records " + std::to_string(through + 1) +
                            ".." + std::to_string(moved) + " are missing (an older copy of the file, or its WAL " +
                            history + "-wal lost). Restore the data directory from a backup, or start with "
                            "`gpupool serve --recover` to accept the loss");
}

Error MarkMissing(const std::string& path, const std::string& hwm_path, int64_t last) {
  return FailedPrecondition(
      "the journal's high-water mark " + hwm_path + " is missing, but the journal " + path +
      " was written with one (its records carry checksums): without it, a journal that lost its last records "
      "cannot be told from an intact one. Restore the data directory from a backup, or start with "
      "`gpupool serve --recover` to accept the journal as it is (records 1.." + std::to_string(last) +
      ") and write a new mark");
}

Error MarkDamaged(const std::string& path, const std::string& why) {
  return FailedPrecondition(why + ". Restore the data directory from a backup, or start with `gpupool serve "
                                  "--recover` to check the journal " + path +
                            " record by record and write a new mark at its last intact record");
}

}  // namespace gpupool::sqlite_store
