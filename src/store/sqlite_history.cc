#include "store/sqlite_history.h"

#include "store/crc32c.h"
#include "store/sqlite_db.h"

namespace gpupool::sqlite_store {
namespace {

std::string Text(sqlite3_stmt* st, int col) {
  const unsigned char* p = sqlite3_column_text(st, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st, col))) : "";
}

// Column `col` of the row, checked against the crc in column `crc_col`.
Result<std::string> Body(sqlite3_stmt* st, int col, int crc_col, const std::string& what) {
  std::string body = Text(st, col);
  if (sqlite3_column_int64(st, crc_col) != static_cast<int64_t>(Crc32c(body))) {
    return FailedPrecondition("the history is damaged: " + what + " fails its checksum");
  }
  return body;
}

// Runs the statement to its end, collecting (column 0, checked column 1) per row.
Result<std::vector<std::pair<int64_t, std::string>>> Rows(Stmt& s, const char* what) {
  std::vector<std::pair<int64_t, std::string>> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    const int64_t key = sqlite3_column_int64(s.get(), 0);
    Result<std::string> body = Body(s.get(), 1, 2, std::string(what) + " " + std::to_string(key));
    if (!body.ok()) return body.error();
    out.emplace_back(key, std::move(body).value());
  }
  if (rc != SQLITE_DONE) return s.Fail(std::string("read ") + what);
  return out;
}

}  // namespace

Status EnsureHistory(sqlite3* db) {
  Stmt has(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_log'");
  if (!has.ok() || sqlite3_step(has.get()) != SQLITE_ROW) return has.Fail("read the schema");
  const bool had_audit = sqlite3_column_int64(has.get(), 0) > 0;
  GP_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE"));
  Status s = CreateHistoryTables(db, "main");
  if (s.ok() && !had_audit) {
    // An older journal: its audit records become the audit log's rows.
    Stmt read(db, "SELECT seq, body FROM journal WHERE kind = 'audit' ORDER BY seq");
    Stmt write(db, "INSERT INTO audit_log (seq, tenant, body, crc) VALUES (?, COALESCE(json_extract(?, '$.tenant'), ''), ?, ?)");
    if (!read.ok() || !write.ok()) s = read.ok() ? write.Fail("prepare") : read.Fail("prepare");
    while (s.ok() && sqlite3_step(read.get()) == SQLITE_ROW) {
      const std::string body = Text(read.get(), 1);
      sqlite3_reset(write.get());
      write.Bind(1, sqlite3_column_int64(read.get(), 0));
      write.Bind(2, body);
      write.Bind(3, body);
      write.Bind(4, static_cast<int64_t>(Crc32c(body)));
      if (sqlite3_step(write.get()) != SQLITE_DONE) s = write.Fail("copy the audit records");
    }
  }
  if (s.ok()) s = Exec(db, "COMMIT");
  if (!s.ok()) (void)Exec(db, "ROLLBACK");
  return s;
}

Status InsertHistory(sqlite3* db, int64_t seq, const Record& r) {
  const HistoryKey& h = r.history;
  if (h.kind == HistoryKey::Kind::kNone) return Ok();
  const int64_t crc = Crc32c(r.body);
  if (h.kind == HistoryKey::Kind::kAudit) {
    Stmt s(db, "INSERT INTO audit_log (seq, tenant, body, crc) VALUES (?, ?, ?, ?)");
    if (!s.ok()) return s.Fail("prepare");
    s.Bind(1, seq);
    s.Bind(2, h.tenant);
    s.Bind(3, r.body);
    s.Bind(4, crc);
    return sqlite3_step(s.get()) == SQLITE_DONE ? Ok() : Status(s.Fail("insert an audit line"));
  }
  Stmt s(db, "INSERT INTO archived_jobs (id, seq, tenant, state, usage_from, usage_to, body, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  if (!s.ok()) return s.Fail("prepare");
  s.Bind(1, h.job);
  s.Bind(2, seq);
  s.Bind(3, h.tenant);
  s.Bind(4, h.state);
  s.Bind(5, h.usage_from_ms);
  s.Bind(6, h.usage_to_ms);
  s.Bind(7, r.body);
  s.Bind(8, crc);
  return sqlite3_step(s.get()) == SQLITE_DONE ? Ok() : Status(s.Fail("archive job " + std::to_string(h.job)));
}

Status CopyHistory(sqlite3* db, const std::string& from, int64_t kept) {
  Stmt attach(db, "ATTACH DATABASE ? AS old");
  if (!attach.ok()) return attach.Fail("prepare attach");
  attach.Bind(1, from);
  if (sqlite3_step(attach.get()) != SQLITE_DONE) return attach.Fail("attach " + from);
  const std::string k = std::to_string(kept);
  Status s = EnsureHistory(db);
  if (s.ok()) s = Exec(db, "BEGIN");
  for (const char* table : {"archived_jobs", "audit_log"}) {
    if (!s.ok()) break;
    const std::string t(table);
    s = Exec(db, "INSERT INTO main." + t + " SELECT * FROM old." + t + " WHERE seq <= " + k);
  }
  if (s.ok()) s = Exec(db, "COMMIT");
  if (!s.ok()) (void)Exec(db, "ROLLBACK");
  (void)Exec(db, "DETACH DATABASE old");
  return s;
}

Result<std::optional<std::string>> ReadArchivedJob(sqlite3* db, int64_t through, int64_t id) {
  Stmt s(db,
         "SELECT id, body, crc FROM hist.archived_jobs WHERE id = ?1 UNION ALL "
         "SELECT id, body, crc FROM main.archived_jobs WHERE id = ?1 AND seq > ?2 LIMIT 1");
  if (!s.ok()) return s.Fail("prepare");
  s.Bind(1, id);
  s.Bind(2, through);
  Result<std::vector<std::pair<int64_t, std::string>>> rows = Rows(s, "archived job");
  if (!rows.ok()) return rows.error();
  if (rows->empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(rows->front().second));
}

// Both places' rows, merged by the compound ORDER BY (each part is read in its key's order, so a
// page reads about as many rows as it returns).
Result<std::vector<std::pair<int64_t, std::string>>> ReadArchivedJobs(sqlite3* db, int64_t through,
                                                                      const ArchiveQuery& q) {
  const std::string where = "(?1 = 0 OR id < ?1) AND (?2 = '' OR tenant = ?2) AND (?3 = '' OR state = ?3)";
  Stmt s(db, "SELECT id, body, crc FROM hist.archived_jobs WHERE " + where +
                 " UNION ALL SELECT id, body, crc FROM main.archived_jobs WHERE seq > ?5 AND " + where +
                 " ORDER BY 1 DESC LIMIT ?4");
  if (!s.ok()) return s.Fail("prepare");
  s.Bind(1, q.before);
  s.Bind(2, q.tenant);
  s.Bind(3, q.state);
  s.Bind(4, q.limit > 0 ? q.limit : int64_t{-1});
  s.Bind(5, through);
  return Rows(s, "archived job");
}

Result<std::vector<std::string>> ReadArchivedUsage(sqlite3* db, int64_t through, int64_t from_ms, int64_t to_ms) {
  Stmt s(db,
         "SELECT id, body, crc FROM hist.archived_jobs WHERE usage_to > ?1 AND usage_from < ?2 UNION ALL "
         "SELECT id, body, crc FROM main.archived_jobs WHERE seq > ?3 AND usage_to > ?1 AND usage_from < ?2 "
         "ORDER BY 1");
  if (!s.ok()) return s.Fail("prepare");
  s.Bind(1, from_ms);
  s.Bind(2, to_ms);
  s.Bind(3, through);
  Result<std::vector<std::pair<int64_t, std::string>>> rows = Rows(s, "archived job");
  if (!rows.ok()) return rows.error();
  std::vector<std::string> out;
  out.reserve(rows->size());
  for (auto& [id, body] : *rows) out.push_back(std::move(body));
  return out;
}

Result<std::vector<std::pair<int64_t, std::string>>> ReadAuditLines(sqlite3* db, int64_t through, int64_t before,
                                                                    const std::string& tenant, int64_t limit) {
  const std::string where = "(?1 = 0 OR seq < ?1) AND (?2 = '' OR tenant = ?2)";
  Stmt s(db, "SELECT seq, body, crc FROM hist.audit_log WHERE " + where +
                 " UNION ALL SELECT seq, body, crc FROM main.audit_log WHERE seq > ?4 AND " + where +
                 " ORDER BY 1 DESC LIMIT ?3");
  if (!s.ok()) return s.Fail("prepare");
  s.Bind(1, before);
  s.Bind(2, tenant);
  s.Bind(3, limit > 0 ? limit : int64_t{-1});
  s.Bind(4, through);
  return Rows(s, "audit line");
}

}  // namespace gpupool::sqlite_store
