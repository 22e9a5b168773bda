// The SQLite journal: checks at open, checksummed appends, the high-water mark after each commit
// (store/journal.h; the file format in store/sqlite_db.h).
#include <filesystem>
#include <optional>

#include "store/high_water_mark.h"
#include "store/journal.h"
#include "store/sqlite_db.h"

namespace gpupool {
namespace {

using sqlite_store::Db;

class SqliteJournal final : public Journal {
 public:
  SqliteJournal(std::string path, Db db, bool has_crc, std::unique_ptr<HighWaterMark> hwm, std::vector<Record> read)
      : path_(std::move(path)), db_(std::move(db)), has_crc_(has_crc), hwm_(std::move(hwm)),
        next_(read.empty() ? 1 : read.back().seq + 1), first_read_(std::move(read)) {}
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
    sqlite_store::Scan scan = sqlite_store::ScanJournal(db_.get(), has_crc_);
    if (!scan.damage.empty()) return sqlite_store::JournalDamaged(path_, scan.damage, scan.last());
    if (hwm_ && scan.last() < hwm_->seq()) return sqlite_store::RecordsMissing(path_, hwm_->path(), scan.last(), hwm_->seq());
    return std::move(scan.intact);
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
      ++seq;
    }
    return Ok();
  }

  Status Fail(const char* what) {
    return Error{ErrorCode::kUnavailable, std::string("journal ") + what + ": " + sqlite3_errmsg(db_.get())};
  }

  const std::string path_;
  Db db_;
  bool has_crc_;                        // the table has the crc column
  std::unique_ptr<HighWaterMark> hwm_;  // null without one (options.high_water_mark)
  sqlite3_stmt* insert_ = nullptr;
  int64_t next_;
  std::optional<std::vector<Record>> first_read_;  // read and checked by the open
};

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
    GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, "CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
                                               "body TEXT NOT NULL, crc INTEGER)"));
  }
  Result<bool> has_crc = sqlite_store::HasChecksums(raw);
  if (!has_crc.ok()) return damaged("SQLite cannot read its schema: " + has_crc.error().message);
  sqlite_store::Scan scan = sqlite_store::ScanJournal(raw, *has_crc);
  if (!scan.damage.empty()) return sqlite_store::JournalDamaged(path, scan.damage, scan.last());
  if (const std::string finding = sqlite_store::QuickCheck(raw); !finding.empty()) {
    return sqlite_store::JournalDamaged(path, "SQLite finds its structure damaged: " + finding, scan.last());
  }
  const std::string hwm_path = HighWaterMarkPath(path, options);
  if (mark && scan.last() < *mark) return sqlite_store::RecordsMissing(path, hwm_path, scan.last(), *mark);
  if (options.high_water_mark && !mark && scan.checksummed) return sqlite_store::MarkMissing(path, hwm_path, scan.last());
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
  return std::unique_ptr<Journal>(new SqliteJournal(path, std::move(db), *has_crc, std::move(hwm), std::move(scan.intact)));
}

}  // namespace

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
