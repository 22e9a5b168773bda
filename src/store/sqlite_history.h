// Internal to src/store: the history tables of the SQLite journal (Journal's history reads):
//   archived_jobs(id PRIMARY KEY, seq, tenant, state, usage_from, usage_to, body, crc)
//   audit_log(seq PRIMARY KEY, tenant, body, crc)
// Rows are written in the transaction that appends their record and never compacted; `crc` is
// the CRC-32C of the body, checked on every read.
#pragma once

#include <sqlite3.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "store/journal.h"

namespace gpupool::sqlite_store {

// Creates the tables if missing. A journal from before them gets its audit records copied into
// audit_log (in one transaction), so that the audit log reads the same.
Status EnsureHistory(sqlite3* db);
// Inside the append's transaction: the history row of record `r` (at `seq`), if it has one.
Status InsertHistory(sqlite3* db, int64_t seq, const Record& r);
// Copies the history rows of records 1..kept from the attached database `from` (recovery).
Status CopyHistory(sqlite3* db, const std::string& from, int64_t kept);

Result<std::optional<std::string>> ReadArchivedJob(sqlite3* db, int64_t id);
Result<std::vector<std::pair<int64_t, std::string>>> ReadArchivedJobs(sqlite3* db, const ArchiveQuery& q);
Result<std::vector<std::string>> ReadArchivedUsage(sqlite3* db, int64_t from_ms, int64_t to_ms);
Result<std::vector<std::pair<int64_t, std::string>>> ReadAuditLines(sqlite3* db, int64_t before,
                                                                    const std::string& tenant, int64_t limit);

}  // namespace gpupool::sqlite_store
