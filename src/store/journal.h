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
// History (the rows of records with a HistoryKey) is written with its record into the journal's
// file, and moved by Compact into a history file of its own before the record is dropped, so the
// journal's file stays bounded by the snapshot interval however long the history grows. The
// journal keeps its own count of what it moved there, so a lost or older history file is refused
// at open like a lost tail of the journal (store/sqlite_history.h).
//
// Thread-safety: none; the daemon's event loop is the only user.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "store/snapshot_file.h"

namespace gpupool {

// What the store keeps of a record after compaction drops it from the journal: its history,
// served by the Journal's history reads (finished jobs that left memory, audit lines), with what
// those reads filter on.
struct HistoryKey {
  enum class Kind : uint8_t { kNone, kJob, kAudit };
  Kind kind = Kind::kNone;
  int64_t job = 0;     // kJob: the job's id
  std::string tenant;  // the tenant's name; "" for none
  std::string state;   // kJob: its final state ("succeeded", "failed", "cancelled")
  // kJob: the span [from, to) of its usage intervals, for usage reports; 0, 0 if it has none.
  int64_t usage_from_ms = 0, usage_to_ms = 0;
};

struct Record {
  int64_t seq = 0;  // assigned by Append, 1, 2, ...
  std::string kind;
  std::string body;
  HistoryKey history;  // kNone: the record is the journal's only
};

// A read of the archived jobs: newest first, ids below `before` (0: from the newest), of
// `tenant` ("" any) and in `state` ("" any), at most `limit` (0: all).
struct ArchiveQuery {
  int64_t before = 0;
  std::string tenant, state;
  int64_t limit = 0;
};

// Who writes a store that several processes share (docs/design/daemon.md, "Replicas").
struct Leadership {
  bool leader = true;     // this process is the store's writer
  bool promoted = false;  // it became the writer by this call (a new epoch: read the state again)
  bool deposed = false;   // it was the writer and another process is now
  int64_t epoch = 0;      // the store's epoch
  std::string leader_url; // the writer's advertised URL ("" if none)
  int64_t lease_left_ms = 0;  // a follower: how long the writer's lease still runs (the store's clock)
};

// A replica that campaigns for a shared store's lease.
struct Candidate {
  std::string url;       // what followers send writes to (its advertised URL)
  std::string id;        // stable across its restarts, unique among replicas ("" for none): a
                         // holder that restarted takes its own lease back without waiting
  int64_t lease_ms = 3000;
};

class Journal {
 public:
  virtual ~Journal() = default;
  // Appends the batch atomically and durably; fills in each record's seq. An error may come
  // after the records are durable (the high-water mark could not be written): ReadAll then
  // returns them.
  virtual Status Append(std::vector<Record>& batch) = 0;
  // Every record after the compaction point (see Compact), in seq order; kFailedPrecondition if
  // the journal is damaged.
  virtual Result<std::vector<Record>> ReadAll() = 0;
  // The last record appended, or read when the journal was opened; 0 if none ever was.
  virtual int64_t last_seq() const = 0;

  // --- snapshots (store/snapshot_file.h; docs/design/daemon.md, "Snapshots") ---
  // Writes `s`, the state after records 1..s.seq, durably. Safe to call from a thread other than
  // the one making the calls above (it does not touch the records), one call at a time.
  virtual Status WriteSnapshot(const Snapshot& s) = 0;
  // What a start loads before the records ReadAll returns: the newest intact snapshot at or after
  // the compaction point, or one with seq 0 (the empty state) if there is none and nothing was
  // compacted. kFailedPrecondition, naming the files and their faults, if records were compacted
  // and no intact snapshot covers them.
  virtual Result<Snapshot> ReadSnapshot() = 0;
  // Drops records 1..seq from the journal, and the snapshots older than seq; their history stays.
  // REQUIRES: WriteSnapshot of a snapshot at `seq` returned Ok.
  virtual Status Compact(int64_t seq) = 0;

  // --- replicas: a store that several processes share (PostgreSQL); one process owns the others ---
  // Renews this process's lease on the store, or takes the lease when it has lapsed (a new
  // epoch), or says who holds it. A store that one process owns says leader.
  virtual Result<Leadership> Campaign(const Candidate& c) { return Leadership{.leader_url = c.url}; }
  // The records after `seq`, for a follower (which then has them: last_seq() is the last of
  // them); kNotFound if records after `seq` were compacted (load the snapshot again).
  virtual Result<std::vector<Record>> ReadAfter(int64_t seq) {
    (void)seq;
    return Error{ErrorCode::kFailedPrecondition, "this store has no followers"};
  }

  // --- history: what records with a HistoryKey left, appended with them, never compacted ---
  // The body of the record that archived job `id`; nullopt if none did.
  virtual Result<std::optional<std::string>> ArchivedJob(int64_t id) = 0;
  // (id, body) of archived jobs, as the query asks.
  virtual Result<std::vector<std::pair<int64_t, std::string>>> ArchivedJobs(const ArchiveQuery& q) = 0;
  // The bodies of archived jobs whose usage span overlaps [from_ms, to_ms).
  virtual Result<std::vector<std::string>> ArchivedUsage(int64_t from_ms, int64_t to_ms) = 0;
  // (seq, body) of audit records, newest first, seqs below `before` (0: from the newest), of
  // `tenant` ("" any), at most `limit` (0: all).
  virtual Result<std::vector<std::pair<int64_t, std::string>>> AuditLines(int64_t before, const std::string& tenant,
                                                                          int64_t limit) = 0;
};

struct SqliteJournalOptions {
  // The high-water mark's file; empty: the journal's path with its extension replaced by ".hwm"
  // (DATA_DIR/journal.hwm beside DATA_DIR/journal.db).
  std::string hwm_path;
  // Without one, a lost tail is not detected. For measuring what the mark costs only.
  bool high_water_mark = true;
  // Where the snapshot files are; empty: the journal's directory.
  std::string snapshot_dir;
  // The history file (what compaction keeps of the records it drops: archived jobs, audit
  // lines); empty: beside the journal, its stem + "-history.db" (DATA_DIR/journal-history.db).
  std::string history_path;
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

// What ScrubHistoryFile found.
struct HistoryScrub {
  int64_t archived_jobs = 0, audit_lines = 0;  // rows read
  std::string damage;                           // the first fault; empty: none
};
// Reads the whole history file at `path` on a connection of its own (read-only; the file is in
// WAL mode, so the journal's writes go on meanwhile): every row of its tables against its
// checksum, and its index against the table. A start checks only the file's header (a full read is about
// 3 s for 2 GB); this is the rest, for a background scrub. An error: the file cannot be read at
// all, or `stop` was set (checked as it reads: it returns within milliseconds). Thread-safe (its
// own connection).
Result<HistoryScrub> ScrubHistoryFile(const std::string& path, const std::atomic<bool>* stop = nullptr);

// The history file's path for a journal at `path` under `options`.
std::string HistoryPath(const std::string& path, const SqliteJournalOptions& options);
// The high-water mark's path for a journal at `path` under `options`.
std::string HighWaterMarkPath(const std::string& path, const SqliteJournalOptions& options);

}  // namespace gpupool
