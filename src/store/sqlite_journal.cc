// The SQLite journal: checks at open, checksummed appends, the high-water mark after each commit
// (store/journal.h; the file format in store/sqlite_db.h).
#include <filesystem>
#include <optional>

#include "store/high_water_mark.h"
#include "store/journal.h"
#include "store/sqlite_db.h"
#include "store/sqlite_history.h"

namespace gpupool {
namespace {

using sqlite_store::Db;

class SqliteJournal final : public Journal {
 public:
  SqliteJournal(std::string path, std::string snapshot_dir, Db db, bool has_crc, std::unique_ptr<HighWaterMark> hwm,
                sqlite_store::Scan read, int64_t history_through)
      : path_(std::move(path)), snapshot_dir_(std::move(snapshot_dir)), db_(std::move(db)), has_crc_(has_crc),
        hwm_(std::move(hwm)), base_(read.base), next_(read.last() + 1), through_(history_through),
        first_read_(std::move(read.intact)) {}
  ~SqliteJournal() override { sqlite3_finalize(insert_); }

  Status Append(std::vector<Record>& batch) override {
    if (batch.empty()) return Ok();
    first_read_.reset();  // no longer all of it
    GP_RETURN_IF_ERROR(sqlite_store::Exec(db_.get(), "BEGIN IMMEDIATE"));
    const bool migrating = !has_crc_;
    Status s = Insert(batch, migrating);
    if (s.ok()) s = sqlite_store::Exec(db_.get(), "COMMIT");
    if (!s.ok()) {
      (void)sqlite_store::Exec(db_.get(), "ROLLBACK");
      if (migrating) {  // the statement names a column the rollback took away again
        sqlite3_finalize(insert_);
        insert_ = nullptr;
      }
      return s;
    }
    has_crc_ = true;
    for (Record& r : batch) r.seq = next_++;
    if (!hwm_) return Ok();
    if (Status w = hwm_->Write(next_ - 1); !w.ok()) {
      return Error{ErrorCode::kUnavailable, "the batch is in the journal, but its high-water mark is not: " +
                                                w.error().message};
    }
    return Ok();
  }

  Result<std::vector<Record>> ReadAll() override {
    if (first_read_) {
      std::vector<Record> out = std::move(*first_read_);
      first_read_.reset();
      return out;
    }
    sqlite_store::Scan scan = sqlite_store::ScanJournal(db_.get(), has_crc_, base_);
    if (!scan.damage.empty()) return sqlite_store::JournalDamaged(path_, scan.damage, scan.last());
    if (hwm_ && scan.last() < hwm_->seq()) return sqlite_store::RecordsMissing(path_, hwm_->path(), scan.last(), hwm_->seq());
    return std::move(scan.intact);
  }

  int64_t last_seq() const override { return next_ - 1; }

  Result<std::optional<std::string>> ArchivedJob(int64_t id) override {
    return sqlite_store::ReadArchivedJob(db_.get(), through_, id);
  }
  Result<std::vector<std::pair<int64_t, std::string>>> ArchivedJobs(const ArchiveQuery& q) override {
    return sqlite_store::ReadArchivedJobs(db_.get(), through_, q);
  }
  Result<std::vector<std::string>> ArchivedUsage(int64_t from_ms, int64_t to_ms) override {
    return sqlite_store::ReadArchivedUsage(db_.get(), through_, from_ms, to_ms);
  }
  Result<std::vector<std::pair<int64_t, std::string>>> AuditLines(int64_t before, const std::string& tenant,
                                                                  int64_t limit) override {
    return sqlite_store::ReadAuditLines(db_.get(), through_, before, tenant, limit);
  }

  Status WriteSnapshot(const Snapshot& s) override { return WriteSnapshotFile(snapshot_dir_, s); }

  Result<Snapshot> ReadSnapshot() override {
    std::string faults;
    const std::vector<int64_t> seqs = ListSnapshots(snapshot_dir_);
    for (auto it = seqs.rbegin(); it != seqs.rend() && *it >= base_; ++it) {
      if (*it > last_seq()) {
        faults += (faults.empty() ? "" : "; ") + SnapshotPath(snapshot_dir_, *it) + " is of record " +
                  std::to_string(*it) + ", past the journal's last (" + std::to_string(last_seq()) + ")";
        continue;
      }
      Result<Snapshot> s = ReadSnapshotFile(SnapshotPath(snapshot_dir_, *it));
      if (s.ok()) return s;
      faults += (faults.empty() ? "" : "; ") + s.error().message;
    }
    if (base_ == 0) return Snapshot{};  // the records from 1 are all there: replay them
    return FailedPrecondition("the journal " + path_ + " starts after record " + std::to_string(base_) +
                              ", which only a snapshot holds, and no intact snapshot of record " +
                              std::to_string(base_) + " or later is in " + snapshot_dir_ +
                              (faults.empty() ? " (none is there)" : ": " + faults) +
                              ". Restore the data directory from a backup");
  }

  Status Compact(int64_t seq) override {
    if (seq <= base_) return Ok();
    if (seq > last_seq()) return InvalidArgument("cannot compact past the last record");
    first_read_.reset();
    // First the history of the records to drop goes to the history file (durable on its own),
    // then the records and their rows leave the journal's file; between the two, a row is in
    // both and counts once (store/sqlite_history.h).
    if (seq > through_) {
      GP_RETURN_IF_ERROR(sqlite_store::MoveHistory(db_.get(), seq));
      through_ = seq;
    }
    GP_RETURN_IF_ERROR(sqlite_store::Exec(db_.get(), "BEGIN IMMEDIATE"));
    Status s = sqlite_store::Exec(db_.get(), "DELETE FROM journal WHERE seq <= " + std::to_string(seq));
    if (s.ok()) s = sqlite_store::DropMovedHistory(db_.get(), seq);
    if (s.ok()) s = sqlite_store::WriteBase(db_.get(), seq);
    if (s.ok()) s = sqlite_store::Exec(db_.get(), "COMMIT");
    if (!s.ok()) {
      (void)sqlite_store::Exec(db_.get(), "ROLLBACK");
      return s;
    }
    base_ = seq;
    RemoveSnapshotsBefore(snapshot_dir_, seq);
    sqlite_store::ReleaseFreePages(db_.get());
    return Ok();
  }

 private:
  // Inside the transaction: the old journal's migration, if due, then the records.
  Status Insert(const std::vector<Record>& batch, bool migrating) {
    if (migrating) GP_RETURN_IF_ERROR(sqlite_store::Exec(db_.get(), "ALTER TABLE journal ADD COLUMN crc INTEGER"));
    if (!insert_ && sqlite3_prepare_v2(db_.get(), "INSERT INTO journal (seq, kind, body, crc) VALUES (?, ?, ?, ?)", -1,
                                       &insert_, nullptr) != SQLITE_OK) {
      return Fail("prepare insert");
    }
    int64_t seq = next_;
    for (const Record& r : batch) {
      sqlite3_reset(insert_);
      sqlite3_bind_int64(insert_, 1, seq);
      sqlite3_bind_text(insert_, 2, r.kind.data(), static_cast<int>(r.kind.size()), SQLITE_STATIC);
      sqlite3_bind_text(insert_, 3, r.body.data(), static_cast<int>(r.body.size()), SQLITE_STATIC);
      sqlite3_bind_int64(insert_, 4, sqlite_store::RecordChecksum(seq, r.kind, r.body));
      if (sqlite3_step(insert_) != SQLITE_DONE) return Fail("insert");
      GP_RETURN_IF_ERROR(sqlite_store::InsertHistory(db_.get(), seq, r));
      ++seq;
    }
    return Ok();
  }

  Status Fail(const char* what) {
    return Error{ErrorCode::kUnavailable, std::string("journal ") + what + ": " + sqlite3_errmsg(db_.get())};
  }

  const std::string path_;
  const std::string snapshot_dir_;
  Db db_;
  bool has_crc_;                        // the table has the crc column
  std::unique_ptr<HighWaterMark> hwm_;  // null without one (options.high_water_mark)
  sqlite3_stmt* insert_ = nullptr;
  int64_t base_;  // records 1..base_ were compacted away
  int64_t next_;
  int64_t through_;  // the history file holds the history of records 1..through_
  std::optional<std::vector<Record>> first_read_;  // read and checked by the open
};

// Attaches the history file and checks it against the journal: it must hold at least what the
// journal moved into it (sqlite_store::ReadMoved), and nothing of records the journal lacks.
// Returns its `through`.
Result<int64_t> OpenHistory(sqlite3* raw, const std::string& path, const SqliteJournalOptions& options, int64_t last) {
  Result<int64_t> moved = sqlite_store::ReadMoved(raw);
  if (!moved.ok()) return sqlite_store::JournalDamaged(path, "SQLite cannot read its history mark: " + moved.error().message, 0);
  const std::string history = HistoryPath(path, options);
  Result<int64_t> through = sqlite_store::AttachHistory(raw, history, *moved == 0);
  if (!through.ok()) return through.error();
  if (*through < *moved || *through > last) {
    return sqlite_store::HistoryBehind(history, path, *through, *moved, last);
  }
  return through;
}

// The checks of a journal being opened; `mark` is the high-water mark, if there is one.
Result<std::unique_ptr<Journal>> Check(const std::string& path, Db db, std::optional<int64_t> mark,
                                       const SqliteJournalOptions& options) {
  sqlite3* raw = db.get();
  const auto damaged = [&](const std::string& what) { return sqlite_store::JournalDamaged(path, what, 0); };
  for (const char* sql : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL"}) {
    if (Status s = sqlite_store::Exec(raw, sql); !s.ok()) return damaged("SQLite cannot read it: " + std::string(sqlite3_errmsg(raw)));
  }
  Result<bool> has_table = sqlite_store::HasTable(raw);
  if (!has_table.ok()) return damaged("SQLite cannot read its schema: " + has_table.error().message);
  if (!*has_table) {
    if (mark.value_or(0) > 0) return sqlite_store::RecordsMissing(path, HighWaterMarkPath(path, options), 0, *mark);
    // Before the first table: pages that compaction frees go back to the file system.
    GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, "PRAGMA auto_vacuum=INCREMENTAL"));
    GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, "CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
                                               "body TEXT NOT NULL, crc INTEGER)"));
  }
  Result<bool> has_crc = sqlite_store::HasChecksums(raw);
  if (!has_crc.ok()) return damaged("SQLite cannot read its schema: " + has_crc.error().message);
  Result<int64_t> base = sqlite_store::ReadBase(raw);
  if (!base.ok()) return damaged("SQLite cannot read its compaction point: " + base.error().message);
  sqlite_store::Scan scan = sqlite_store::ScanJournal(raw, *has_crc, *base);
  if (!scan.damage.empty()) return sqlite_store::JournalDamaged(path, scan.damage, scan.last());
  if (const std::string finding = sqlite_store::QuickCheck(raw); !finding.empty()) {
    return sqlite_store::JournalDamaged(path, "SQLite finds its structure damaged: " + finding, scan.last());
  }
  const std::string hwm_path = HighWaterMarkPath(path, options);
  if (mark && scan.last() < *mark) return sqlite_store::RecordsMissing(path, hwm_path, scan.last(), *mark);
  if (options.high_water_mark && !mark && scan.checksummed) return sqlite_store::MarkMissing(path, hwm_path, scan.last());
  if (Status h = sqlite_store::EnsureHistory(raw); !h.ok()) return damaged("its history tables: " + h.error().message);
  Result<int64_t> through = OpenHistory(raw, path, options, scan.last());
  if (!through.ok()) return through.error();
  sqlite_store::CheckpointOnClose(raw);
  std::unique_ptr<HighWaterMark> hwm;
  if (options.high_water_mark) {
    Result<std::unique_ptr<HighWaterMark>> opened = HighWaterMark::Open(hwm_path, scan.last());
    if (!opened.ok()) return opened.error();
    hwm = std::move(*opened);
    // Records past the mark were durable but not yet marked when the process stopped; from now
    // on they are part of the state, so the mark covers them.
    if (hwm->seq() < scan.last()) GP_RETURN_IF_ERROR(hwm->Write(scan.last()));
  }
  std::string snapshot_dir = options.snapshot_dir;
  if (snapshot_dir.empty()) snapshot_dir = std::filesystem::path(path).parent_path().string();
  if (snapshot_dir.empty()) snapshot_dir = ".";
  return std::unique_ptr<Journal>(
      new SqliteJournal(path, std::move(snapshot_dir), std::move(db), *has_crc, std::move(hwm), std::move(scan), *through));
}

}  // namespace

std::string HistoryPath(const std::string& path, const SqliteJournalOptions& options) {
  if (!options.history_path.empty()) return options.history_path;
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-history.db")).string();
}

std::string HighWaterMarkPath(const std::string& path, const SqliteJournalOptions& options) {
  if (!options.hwm_path.empty()) return options.hwm_path;
  return std::filesystem::path(path).replace_extension(".hwm").string();
}

Result<std::unique_ptr<Journal>> OpenSqliteJournal(const std::string& path, const SqliteJournalOptions& options) {
  std::optional<int64_t> mark;
  if (options.high_water_mark) {
    Result<std::optional<int64_t>> read = HighWaterMark::Read(HighWaterMarkPath(path, options));
    if (!read.ok()) return sqlite_store::MarkDamaged(path, read.error().message);
    mark = *read;
  }
  // Acknowledged records make a missing file damage, never a new journal.
  const bool acknowledged = mark.value_or(0) > 0;
  if (acknowledged && !std::filesystem::exists(path)) {
    return sqlite_store::RecordsMissing(path, HighWaterMarkPath(path, options), 0, *mark);
  }
  Result<Db> db = sqlite_store::OpenDb(path, !acknowledged);
  if (!db.ok()) return db.error();
  return Check(path, std::move(*db), mark, options);
}

}  // namespace gpupool
