// The journal in PostgreSQL (store/journal.h's interface; docs/design/daemon.md, "The PostgreSQL
// store"): records, snapshots and history in tables of one schema, so that the daemon's state
// lives in a database that is backed up, replicated and failed over like any other.
//
// Tables of schema S (created at the first open):
//   S.meta          one row: the format, the compaction point (base), the last acknowledged
//                   record (last_seq) and the writer's epoch
//   S.journal       (seq, kind, body bytea, crc): the records after the compaction point
//   S.snapshots     (seq, format, body bytea, crc)
//   S.archived_jobs (id, seq, tenant, state, usage_from, usage_to, body, crc) and
//   S.audit_log     (seq, tenant, body, crc): the history, written with its record, never compacted
//
// The writer: every write (append, snapshot, compaction) is conditional on the writer's epoch in
// the same transaction, so a writer that another deposed cannot write, even before it learns of
// it (kUnavailable, "another gpupool serve took over this store"). The epoch is taken at open
// (take_over) or by Campaign, which also keeps a lease in S.meta (leader URL, lease_until in the
// database's clock): replicas renew it, and take it over, with a new epoch, once it lapsed.
// An append is also conditional on last_seq, so a writer whose view of the journal is stale
// cannot append over records it has not read.
//
// Integrity: every record carries the same checksum as in SQLite (sqlite_store::RecordChecksum);
// the records after the compaction point must run base+1..last_seq without a gap, and
// last_seq is updated in the append's own transaction, so a deleted record is damage, never a
// shorter journal. Open and ReadAll refuse a damaged journal naming the store, the record and
// the fault. PostgreSQL itself keeps the data durable (fsync, WAL, replication); no file of the
// data directory takes part.
//
// Thread-safety: as Journal: the loop's calls on one thread; WriteSnapshot may run on another
// (it has a connection of its own).
#pragma once

#include <memory>
#include <string>

#include "store/journal.h"

namespace gpupool {

struct PostgresJournalOptions {
  std::string schema = "gpupool";  // the tables' schema; several clusters can share a database
  // Take the next epoch at open, deposing any writer at once (one process per store). Without
  // it the journal opens as a follower: it reads, and writes only once a Campaign made it the
  // leader (gpupool serve's replicas).
  bool take_over = true;
};

// Connects to `conninfo` (a libpq connection string or postgresql:// URI), creates the schema
// and tables if missing, takes the writer's epoch and reads every record (kFailedPrecondition
// if the journal is damaged; kUnavailable if PostgreSQL cannot be reached).
Result<std::unique_ptr<Journal>> OpenPostgresJournal(const std::string& conninfo,
                                                     const PostgresJournalOptions& options = {});

}  // namespace gpupool
