// Journal: the durable, append-only log of everything that changed the daemon's state.
//
// A record is (seq, kind, body), body a JSON text (store/codec.h). Append writes a batch in one
// transaction and returns only once it is durable (SQLite WAL, synchronous=FULL): the daemon
// acknowledges a request only after its records are appended, so an acknowledged write survives
// kill -9. Recovery reads every record in order and replays it onto an empty state.
//
// Integrity (docs/design/daemon.md, "Journal integrity"): every record carries a checksum over
// its seq, kind and body; the seqs run 1..N without a gap; and a high-water mark kept in a file
// of its own (store/high_water_mark.h) holds the last acknowledged seq, so that a journal which
// lost its tail (a deleted or truncated WAL) is told apart from a shorter, intact one. ReadAll
// returns every record or an error that says what is damaged and where, never fewer records.
//
// Thread-safety: none; the daemon's event loop is the only user.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool {

struct Record {
  int64_t seq = 0;  // assigned by Append, 1, 2, ...
  std::string kind;
  std::string body;
};

class Journal {
 public:
  virtual ~Journal() = default;
  // Appends the batch atomically and durably; fills in each record's seq. An error may come
  // after the records are durable (the high-water mark could not be written): ReadAll then
  // returns them.
  virtual Status Append(std::vector<Record>& batch) = 0;
  // Every record, in seq order; kFailedPrecondition if the journal is damaged.
  virtual Result<std::vector<Record>> ReadAll() = 0;
};

struct SqliteJournalOptions {
  // The high-water mark's file; empty: the journal's path with its extension replaced by ".hwm"
  // (DATA_DIR/journal.hwm beside DATA_DIR/journal.db).
  std::string hwm_path;
  // Without one, a lost tail is not detected. For measuring what the mark costs only.
  bool high_water_mark = true;
};

// SQLite file at `path`, created if missing (unless the high-water mark says records were
// acknowledged: then a missing file is damage). Opening reads and checks every record and
// fails with kFailedPrecondition, naming the file, the record and the fault, if the journal
// is damaged; the first ReadAll returns what was read then. An old journal without checksums
// opens (its records are accepted as they are) and gains them from its first Append on.
Result<std::unique_ptr<Journal>> OpenSqliteJournal(const std::string& path, const SqliteJournalOptions& options = {});

// What RecoverSqliteJournal did.
struct JournalRecovery {
  int64_t kept = 0;     // records 1..kept are intact and stay
  int64_t dropped = 0;  // records past `kept` that were acknowledged or still readable, now gone
  std::string damage;   // what was wrong; empty if nothing was
  std::vector<std::string> moved_aside;  // the damaged files, renamed PATH.damaged-K
};

// For `gpupool serve --recover`, after an operator decided to accept the loss: keeps the records
// up to the last intact one, in a new journal file; moves the old files aside (never deletes
// them); resets the high-water mark to the last kept record. A journal with nothing wrong is
// left as it is. Running it again after an interruption finishes the job.
Result<JournalRecovery> RecoverSqliteJournal(const std::string& path, const SqliteJournalOptions& options = {});

// The high-water mark's path for a journal at `path` under `options`.
std::string HighWaterMarkPath(const std::string& path, const SqliteJournalOptions& options);

}  // namespace gpupool
