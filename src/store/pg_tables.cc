#include "store/pg_tables.h"

#include "store/sqlite_db.h"  // RecordChecksum: the same record checksum in both stores

namespace gpupool::pg_store {

std::string Schema(const std::string& s) {
  return "CREATE SCHEMA IF NOT EXISTS " + s + ";" +
         "CREATE TABLE IF NOT EXISTS " + s +
         ".meta (id integer PRIMARY KEY CHECK (id = 1), format integer NOT NULL, base bigint NOT NULL, "
         "last_seq bigint NOT NULL, epoch bigint NOT NULL, leader text NOT NULL DEFAULT '', lease_until timestamptz);" +
         "CREATE TABLE IF NOT EXISTS " + s +
         ".journal (seq bigint PRIMARY KEY, kind text NOT NULL, body bytea NOT NULL, crc bigint NOT NULL);" +
         "CREATE TABLE IF NOT EXISTS " + s +
         ".snapshots (seq bigint PRIMARY KEY, format integer NOT NULL, body bytea NOT NULL, crc bigint NOT NULL);" +
         "CREATE TABLE IF NOT EXISTS " + s +
         ".archived_jobs (id bigint PRIMARY KEY, seq bigint NOT NULL, tenant text NOT NULL, state text NOT NULL, "
         "usage_from bigint NOT NULL, usage_to bigint NOT NULL, body bytea NOT NULL, crc bigint NOT NULL);" +
         "CREATE INDEX IF NOT EXISTS archived_jobs_tenant ON " + s + ".archived_jobs (tenant, id);" +
         "CREATE INDEX IF NOT EXISTS archived_jobs_usage ON " + s + ".archived_jobs (usage_to);" +
         "CREATE TABLE IF NOT EXISTS " + s +
         ".audit_log (seq bigint PRIMARY KEY, tenant text NOT NULL, body bytea NOT NULL, crc bigint NOT NULL);" +
         "ALTER TABLE " + s + ".meta ADD COLUMN IF NOT EXISTS holder text NOT NULL DEFAULT '';" +
         "CREATE INDEX IF NOT EXISTS audit_log_tenant ON " + s + ".audit_log (tenant, seq);" +
         "ALTER TABLE " + s + ".meta ADD COLUMN IF NOT EXISTS leader text NOT NULL DEFAULT '';" +
         "ALTER TABLE " + s + ".meta ADD COLUMN IF NOT EXISTS lease_until timestamptz";
}

Result<Meta> ReadMeta(Conn& c, const std::string& s) {
  Result<Rows> r = c.Exec("SELECT format, base, last_seq, epoch FROM " + s + ".meta");
  if (!r.ok()) return r.error();
  if (PQntuples(r->get()) != 1) return FailedPrecondition("its meta row is missing");
  const PGresult* p = r->get();
  return Meta{Int(p, 0, 0), Int(p, 0, 1), Int(p, 0, 2), Int(p, 0, 3)};
}

Result<Scan> ScanJournal(Conn& c, const std::string& s, const Meta& m) {
  Result<Rows> r = c.Exec("SELECT seq, kind, body, crc FROM " + s + ".journal WHERE seq > $1 ORDER BY seq",
                          {Param::Int(m.base)});
  if (!r.ok()) return r.error();
  Scan out;
  const PGresult* p = r->get();
  const int n = PQntuples(p);
  out.records.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Record rec;
    rec.seq = Int(p, i, 0);
    rec.kind = Bytes(p, i, 1);
    rec.body = Bytes(p, i, 2);
    const int64_t want = m.base + 1 + i;
    if (rec.seq != want) {
      out.damage = "record " + std::to_string(want) + " is missing (the next is " + std::to_string(rec.seq) + ")";
      return out;
    }
    if (Int(p, i, 3) != static_cast<int64_t>(sqlite_store::RecordChecksum(rec.seq, rec.kind, rec.body))) {
      out.damage = "record " + std::to_string(rec.seq) + " fails its checksum (kind '" + rec.kind.substr(0, 32) + "')";
      return out;
    }
    out.records.push_back(std::move(rec));
  }
  const int64_t last = m.base + n;
  if (last < m.last_seq) {
    out.damage = "records " + std::to_string(last + 1) + ".." + std::to_string(m.last_seq) +
                 " were acknowledged and are missing";
  } else if (last > m.last_seq) {
    out.damage = "records past the last acknowledged one (" + std::to_string(m.last_seq) + ") are there";
  }
  return out;
}

Result<Read> ReadJournal(Conn& c, const std::string& s, int64_t after) {
  Read out;
  Status st = c.ReadSnapshot([&]() -> Status {
    Result<Meta> m = ReadMeta(c, s);
    if (!m.ok()) return m.error();
    out.meta = *m;
    if (after >= 0 && m->base > after) return Ok();  // compacted past it: the caller says so
    Meta from = *m;
    if (after >= 0) from.base = after;  // the scan checks after+1..last_seq
    Result<Scan> scan = ScanJournal(c, s, from);
    if (!scan.ok()) return scan.error();
    out.scan = std::move(*scan);
    return Ok();
  });
  if (!st.ok()) return st.error();
  return out;
}

Error JournalDamaged(const std::string& where, const std::string& what, int64_t intact) {
  return FailedPrecondition("the journal in " + where + " is damaged: " + what + " (records up to " +
                            std::to_string(intact) + " are intact). Restore the database from a backup");
}

}  // namespace gpupool::pg_store
