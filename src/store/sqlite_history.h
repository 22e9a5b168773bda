// Internal to src/store: the history of the SQLite journal (Journal's history reads), in two
// places with the same two tables:
//   archived_jobs(id PRIMARY KEY, seq, tenant, state, usage_from, usage_to, body, crc)
//   audit_log(seq PRIMARY KEY, tenant, body, crc)
// - the journal's file (schema "main") holds the rows of the records still in the journal,
//   written in the transaction that appends their record;
// - the history file (schema "hist", DATA_DIR/journal-history.db) holds the rows of records
//   1..through, `through` in its table history_mark. Compaction moves rows there before it drops
//   their records, so that the journal's file stays bounded by the snapshot interval while the
//   history grows (docs/design/daemon.md, "History").
// A row counts where it belongs: in hist, or in main with seq > through (a row of main at or
// below `through` is a copy left by a compaction interrupted between its two transactions).
// `crc` is the CRC-32C of the body, checked on every read.
#pragma once

#include <sqlite3.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "store/journal.h"

namespace gpupool::sqlite_store {

// Creates the two tables in `schema` ("main" or "hist") if missing, inside the caller's
// transaction.
Status CreateHistoryTables(sqlite3* db, const std::string& schema);
// Creates the journal file's tables if missing. A journal from before them gets its audit
// records copied into audit_log (in one transaction), so that the audit log reads the same.
Status EnsureHistory(sqlite3* db);
// Inside the append's transaction: the history row of record `r` (at `seq`), if it has one.
Status InsertHistory(sqlite3* db, int64_t seq, const Record& r);
// Copies the history rows of records 1..kept from the attached database `from` (recovery).
Status CopyHistory(sqlite3* db, const std::string& from, int64_t kept);

// The journal's own account of what it moved (table history_moved; 0 if none): records 1..moved
// have their rows in the history file, which must therefore say at least that much.
Result<int64_t> ReadMoved(sqlite3* db);

// Attaches the history file at `path` as "hist" (creating it, with `through` = 0, only if
// `create`), checks its structure, and returns its `through`. kFailedPrecondition, naming the
// file, if it is unreadable, damaged or malformed.
Result<int64_t> AttachHistory(sqlite3* db, const std::string& path, bool create);
// Creates a history file at `path` that says `through` and holds no rows (recovery, when the old
// one is lost). Durable when it returns Ok.
Status CreateHistory(const std::string& path, int64_t through);

// The two transactions of a compaction at `seq` (in this order; each durable on its own):
// rows of records 1..seq copied from main into hist (idempotent), hist's `through` set to seq;
// then, in main, those rows deleted and `moved` set to seq (with the caller's other changes:
// call inside its transaction).
Status MoveHistory(sqlite3* db, int64_t seq);
Status DropMovedHistory(sqlite3* db, int64_t seq);

// The reads, over both places; `through` is hist's.
Result<std::optional<std::string>> ReadArchivedJob(sqlite3* db, int64_t through, int64_t id);
Result<std::vector<std::pair<int64_t, std::string>>> ReadArchivedJobs(sqlite3* db, int64_t through,
                                                                      const ArchiveQuery& q);
Result<std::vector<std::string>> ReadArchivedUsage(sqlite3* db, int64_t through, int64_t from_ms, int64_t to_ms);
Result<std::vector<std::pair<int64_t, std::string>>> ReadAuditLines(sqlite3* db, int64_t through, int64_t before,
                                                                    const std::string& tenant, int64_t limit);

}  // namespace gpupool::sqlite_store
