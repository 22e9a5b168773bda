// Internal to src/store: the SQLite journal's file format and the checks made on it, shared by
// the journal (sqlite_journal.cc) and its recovery (sqlite_recover.cc).
//
// The table is journal(seq INTEGER PRIMARY KEY, kind TEXT, body TEXT, crc INTEGER). `crc` is
// RecordChecksum of the record; a journal from before checksums has no such column (it is added
// by the first append) and its records carry none ("legacy"). Once a record has a checksum,
// every later one must have one too.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "store/journal.h"

namespace gpupool::sqlite_store {

// CRC-32C over seq (8 bytes, little-endian), the kind's length (4 bytes), the kind and the body:
// a record moved to another seq, or bytes moved between kind and body, fail it too.
uint32_t RecordChecksum(int64_t seq, std::string_view kind, std::string_view body);

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using Db = std::unique_ptr<sqlite3, CloseDb>;

// Opens PATH (creating it only if `create`). The connection does not checkpoint when it closes
// until CheckpointOnClose(db): a journal found damaged keeps its WAL as it was, for whoever
// restores it.
Result<Db> OpenDb(const std::string& path, bool create);
void CheckpointOnClose(sqlite3* db);

// Runs SQL; the error names the statement and SQLite's message.
Status Exec(sqlite3* db, const std::string& sql);

// A prepared statement, finalized when it goes; errors say `what` and SQLite's message.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    ok_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &st_, nullptr) == SQLITE_OK;
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return ok_; }
  sqlite3_stmt* get() { return st_; }
  void Bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void Bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  Error Fail(const std::string& what) const {
    return Error{ErrorCode::kUnavailable, "history: " + what + ": " + sqlite3_errmsg(db_)};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  bool ok_ = false;
};
// Whether the journal table exists, and whether it has the crc column.
Result<bool> HasTable(sqlite3* db);
Result<bool> HasChecksums(sqlite3* db);

// "" if SQLite's PRAGMA quick_check finds the file's structure sound, else its first finding.
std::string QuickCheck(sqlite3* db);

// The compaction point: records 1..base were dropped after a snapshot covered them (table
// journal_base, one row; no table: 0). Compact writes it in the transaction that drops them.
Result<int64_t> ReadBase(sqlite3* db);
Status WriteBase(sqlite3* db, int64_t base);

// Every record in seq order, checked: each seq one more than the last from base + 1, each
// checksum matching, no record without a checksum after one with.
struct Scan {
  int64_t base = 0;            // the compaction point
  std::vector<Record> intact;  // records base+1..N, each passing the checks
  std::string damage;          // what stopped the scan at N + 1; empty if it read to the end
  int64_t last_seen = 0;       // the highest seq read at all, past the damage too
  bool checksummed = false;    // the last intact record has a checksum
  int64_t last() const { return intact.empty() ? base : intact.back().seq; }
};
Scan ScanJournal(sqlite3* db, bool has_crc, int64_t base = 0);

// After a compaction: the pages it freed go back to the file system (incremental vacuum). A
// journal created before auto_vacuum was set (all of its history once lived in it) is vacuumed
// once, when most of it is free, and gains the setting.
void ReleaseFreePages(sqlite3* db);

// The refusals (kFailedPrecondition). Each says what is damaged and where, and what an operator
// can do: restore a backup, or accept the loss with `gpupool serve --recover`.
// A record or the file's structure, with records 1..kept intact.
Error JournalDamaged(const std::string& path, const std::string& what, int64_t kept);
// The journal ends at `last` (0: missing or empty) but the mark says `mark` were acknowledged.
Error RecordsMissing(const std::string& path, const std::string& hwm_path, int64_t last, int64_t mark);
// A journal written with a mark (its last record has a checksum) whose mark is gone.
Error MarkMissing(const std::string& path, const std::string& hwm_path, int64_t last);
// The history file at `history` holds the history of records 1..through, which is less than the
// journal `path` moved into it (`moved`) or more than the journal has (`last`).
Error HistoryBehind(const std::string& history, const std::string& path, int64_t through, int64_t moved, int64_t last);
// The mark's file exists but no slot of it is valid (`why` from HighWaterMark::Read).
Error MarkDamaged(const std::string& path, const std::string& why);

}  // namespace gpupool::sqlite_store
