// RecoverSqliteJournal (store/journal.h): a new journal from the intact records, the old files
// moved aside, the high-water mark reset.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "store/high_water_mark.h"
#include "store/journal.h"
#include "store/sqlite_db.h"
#include "store/sqlite_history.h"

namespace gpupool {
namespace {

namespace fs = std::filesystem;
using sqlite_store::Db;

struct Found {
  sqlite_store::Scan scan;
  std::string structure;  // QuickCheck's finding
  int64_t moved = 0;      // records whose history the journal moved to the history file
};

Found Read(const std::string& path) {
  Found f;
  if (!fs::exists(path)) {
    f.scan.damage = "the file is missing";
    return f;
  }
  Result<Db> db = sqlite_store::OpenDb(path, false);
  if (!db.ok()) {
    f.scan.damage = db.error().message;
    return f;
  }
  Result<bool> has_table = sqlite_store::HasTable(db->get());
  Result<bool> has_crc = has_table.ok() && *has_table ? sqlite_store::HasChecksums(db->get()) : Result<bool>(false);
  if (!has_table.ok() || !has_crc.ok()) {
    f.scan.damage = "SQLite cannot read its schema: " + (has_table.ok() ? has_crc : has_table).error().message;
  } else if (*has_table) {
    Result<int64_t> base = sqlite_store::ReadBase(db->get());
    if (!base.ok()) {
      f.scan.damage = "SQLite cannot read its compaction point: " + base.error().message;
      return f;
    }
    f.scan = sqlite_store::ScanJournal(db->get(), *has_crc, *base);
    f.structure = sqlite_store::QuickCheck(db->get());
    Result<int64_t> moved = sqlite_store::ReadMoved(db->get());
    // Unreadable: the compaction point bounds it (a compaction moves before it drops).
    f.moved = moved.ok() ? *moved : *base;
  }
  return f;
}

// A new journal at `staging` holding `records` after the compaction point `base`, each with its
// checksum, and the history rows of records 1..kept from `source`; complete and durable when this
// returns Ok.
Status Build(const std::string& staging, const Found& found, const std::string& source, std::string* history_lost) {
  const int64_t base = found.scan.base, kept = found.scan.last();
  const std::vector<Record>& records = found.scan.intact;
  (void)fs::remove(staging);
  Result<Db> db = sqlite_store::OpenDb(staging, true);
  if (!db.ok()) return db.error();
  sqlite3* raw = db->get();
  for (const char* sql : {"PRAGMA synchronous=FULL",
                          "CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, crc INTEGER)",
                          "BEGIN"}) {
    GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, sql));
  }
  if (base > 0) GP_RETURN_IF_ERROR(sqlite_store::WriteBase(raw, base));
  sqlite3_stmt* insert = nullptr;
  if (sqlite3_prepare_v2(raw, "INSERT INTO journal (seq, kind, body, crc) VALUES (?, ?, ?, ?)", -1, &insert, nullptr) !=
      SQLITE_OK) {
    return Error{ErrorCode::kUnavailable, std::string("recovery: prepare insert: ") + sqlite3_errmsg(raw)};
  }
  for (const Record& r : records) {
    sqlite3_reset(insert);
    sqlite3_bind_int64(insert, 1, r.seq);
    sqlite3_bind_text(insert, 2, r.kind.data(), static_cast<int>(r.kind.size()), SQLITE_STATIC);
    sqlite3_bind_text(insert, 3, r.body.data(), static_cast<int>(r.body.size()), SQLITE_STATIC);
    sqlite3_bind_int64(insert, 4, sqlite_store::RecordChecksum(r.seq, r.kind, r.body));
    if (sqlite3_step(insert) != SQLITE_DONE) {
      const std::string m = sqlite3_errmsg(raw);
      sqlite3_finalize(insert);
      return Error{ErrorCode::kUnavailable, "recovery: insert into " + staging + ": " + m};
    }
  }
  sqlite3_finalize(insert);
  GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, "COMMIT"));
  // The history of the records kept (archived jobs, audit lines) comes along; if the old file's
  // history cannot be read, the journal is still recovered and the loss is said.
  if (Status h = sqlite_store::CopyHistory(raw, source, kept); !h.ok()) *history_lost = h.error().message;
  GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, "BEGIN"));
  Status moved = sqlite_store::DropMovedHistory(raw, found.moved);
  GP_RETURN_IF_ERROR(sqlite_store::Exec(raw, moved.ok() ? "COMMIT" : "ROLLBACK"));
  GP_RETURN_IF_ERROR(moved);
  sqlite_store::CheckpointOnClose(raw);
  return Ok();
}

Status SyncDir(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Error{ErrorCode::kUnavailable, "cannot open " + dir};
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Ok() : Status(Error{ErrorCode::kUnavailable, "cannot fsync " + dir});
}

// Renames the journal's files (and the mark's) to PATH.damaged-K, K the first number free for
// all of them, so the old journal and its WAL stay together and can still be opened.
Result<std::vector<std::string>> MoveAside(const std::string& path, const std::string& hwm_path) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {path, ""}, {path + "-wal", "-wal"}, {path + "-shm", "-shm"}, {hwm_path, ""}};
  int k = 1;
  const auto target = [&](size_t i) {
    return i == 3 ? hwm_path + ".damaged-" + std::to_string(k) : path + ".damaged-" + std::to_string(k) + files[i].second;
  };
  for (bool free = false; !free; ++k) {
    free = true;
    for (size_t i = 0; i < files.size(); ++i) free = free && (files[i].first.empty() || !fs::exists(target(i)));
    if (free) break;
  }
  std::vector<std::string> moved;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].first.empty() || !fs::exists(files[i].first)) continue;
    std::error_code ec;
    fs::rename(files[i].first, target(i), ec);
    if (ec) return Error{ErrorCode::kUnavailable, "cannot move " + files[i].first + " aside: " + ec.message()};
    moved.push_back(target(i));
  }
  return moved;
}

// The history file against the journal's account (records 1..moved moved there, 1..kept kept):
// a damaged, missing or older file is moved aside and replaced by an empty one that says `moved`;
// rows of records past `kept` are dropped. What was lost is said in `said`; nothing if nothing was.
Status RecoverHistory(const std::string& history, int64_t moved, int64_t kept, std::string* said,
                      std::vector<std::string>* moved_aside) {
  Result<Db> scratch = sqlite_store::OpenDb(":memory:", true);
  if (!scratch.ok()) return scratch.error();
  Result<int64_t> through = sqlite_store::AttachHistory(scratch->get(), history, moved == 0);
  if (through.ok() && *through >= moved && *through <= kept) return Ok();
  if (through.ok() && *through > kept) {
    const std::string k = std::to_string(kept);
    for (const std::string& sql : std::vector<std::string>{"BEGIN IMMEDIATE", "DELETE FROM hist.archived_jobs WHERE seq > " + k,
                                  "DELETE FROM hist.audit_log WHERE seq > " + k,
                                  "UPDATE hist.history_mark SET through = " + k, "COMMIT"}) {
      GP_RETURN_IF_ERROR(sqlite_store::Exec(scratch->get(), sql));
    }
    *said = "the history of records past " + k + " was dropped from " + history;
    return Ok();
  }
  scratch->reset();  // detaches the file before it moves
  *said = (through.ok() ? "the history file " + history + " holds the history of records 1.." +
                              std::to_string(*through) + " only"
                        : through.error().message.substr(0, through.error().message.find(". Restore"))) +
          "; it was replaced by an empty one: the archived jobs and audit lines of records 1.." + std::to_string(moved) +
          " are lost";
  Result<std::vector<std::string>> aside = MoveAside(history, "");
  if (!aside.ok()) return aside.error();
  moved_aside->insert(moved_aside->end(), aside->begin(), aside->end());
  return sqlite_store::CreateHistory(history, moved);
}

std::string Describe(const Found& f, int64_t mark, const std::string& mark_fault) {
  std::vector<std::string> parts;
  if (!f.scan.damage.empty()) parts.push_back(f.scan.damage);
  if (!f.structure.empty()) parts.push_back("SQLite finds its structure damaged: " + f.structure);
  if (mark > f.scan.last()) {
    parts.push_back("the high-water mark says " + std::to_string(mark) + " records were acknowledged");
  }
  if (!mark_fault.empty()) parts.push_back(mark_fault);
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

Result<JournalRecovery> RecoverSqliteJournal(const std::string& path, const SqliteJournalOptions& options) {
  const std::string hwm_path = HighWaterMarkPath(path, options);
  const std::string staging = path + ".recovering";
  // Interrupted after the old files went aside: the new journal is complete, put it in place.
  if (!fs::exists(path) && fs::exists(staging)) {
    std::error_code ec;
    fs::rename(staging, path, ec);
    if (ec) return Error{ErrorCode::kUnavailable, "cannot rename " + staging + ": " + ec.message()};
  }
  int64_t mark = 0;
  std::string mark_fault;
  if (options.high_water_mark) {
    Result<std::optional<int64_t>> read = HighWaterMark::Read(hwm_path);
    if (!read.ok()) mark_fault = read.error().message;
    if (read.ok() && *read) mark = **read;
    if (read.ok() && !*read) mark_fault = "the high-water mark " + hwm_path + " is missing";
  }
  const Found found = Read(path);
  const sqlite_store::Scan& scan = found.scan;
  JournalRecovery out;
  out.kept = scan.last();
  out.dropped = std::max<int64_t>(0, std::max(mark, scan.last_seen) - out.kept);
  const bool records_lost = !scan.damage.empty() || !found.structure.empty() || mark > scan.last();
  // A legacy journal without a mark has nothing wrong with it.
  if (mark_fault.find("is missing") != std::string::npos && !scan.checksummed && !records_lost) mark_fault.clear();
  out.damage = Describe(found, mark, mark_fault);
  if (out.damage.empty()) {
    // The records are whole; the history file may still be lost or damaged.
    std::string history_lost;
    GP_RETURN_IF_ERROR(RecoverHistory(HistoryPath(path, options), found.moved, out.kept, &history_lost, &out.moved_aside));
    out.damage = history_lost;
    return out;
  }
  if (out.kept == 0) {
    return FailedPrecondition("--recover found no intact record in the journal " + path + " (" + out.damage +
                              "): restore the data directory from a backup, or move it away to start afresh");
  }
  if (records_lost) {
    std::string history_lost;
    GP_RETURN_IF_ERROR(Build(staging, found, path, &history_lost));
    if (!history_lost.empty()) out.damage += "; the history (archived jobs, audit log) was not copied: " + history_lost;
    Result<std::vector<std::string>> moved = MoveAside(path, hwm_path);
    if (!moved.ok()) return moved.error();
    out.moved_aside = std::move(*moved);
    std::error_code ec;
    fs::rename(staging, path, ec);
    if (ec) return Error{ErrorCode::kUnavailable, "cannot rename " + staging + " to " + path + ": " + ec.message()};
    GP_RETURN_IF_ERROR(SyncDir(path));
  }
  std::string history_lost;
  GP_RETURN_IF_ERROR(RecoverHistory(HistoryPath(path, options), found.moved, out.kept, &history_lost, &out.moved_aside));
  if (!history_lost.empty()) out.damage += "; " + history_lost;
  if (options.high_water_mark) GP_RETURN_IF_ERROR(HighWaterMark::Reset(hwm_path, out.kept));
  return out;
}

}  // namespace gpupool
