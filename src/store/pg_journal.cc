// The PostgreSQL journal (store/pg_journal.h): the schema, the writer's epoch, checked appends.
#include "store/pg_journal.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>

#include "store/crc32c.h"
#include "store/pg_conn.h"
#include "store/pg_tables.h"
#include "store/sqlite_db.h"  // RecordChecksum: the same record checksum in both stores

namespace gpupool {
namespace {

using pg_store::Conn;
using pg_store::JournalDamaged;
using pg_store::kFormat;
using pg_store::kRowsPerInsert;
using pg_store::Meta;
using pg_store::Param;
using pg_store::Read;
using pg_store::ReadJournal;
using pg_store::ReadMeta;
using pg_store::Rows;
using pg_store::Scan;
using pg_store::ScanJournal;
using pg_store::Schema;

class PostgresJournal final : public Journal {
 public:
  PostgresJournal(std::string conninfo, std::unique_ptr<Conn> conn, std::string schema, Meta meta,
                  std::vector<Record> first)
      : conninfo_(std::move(conninfo)), conn_(std::move(conn)), s_(std::move(schema)), epoch_(meta.epoch),
        base_(meta.base), next_(meta.last_seq + 1), first_read_(std::move(first)) {}

  Status Append(std::vector<Record>& batch) override {
    if (batch.empty()) return Ok();
    first_read_.reset();
    const int64_t last = next_ - 1, new_last = last + static_cast<int64_t>(batch.size());
    Status s = conn_->Transaction([&]() -> Status {
      GP_RETURN_IF_ERROR(Claim("UPDATE " + s_ + ".meta SET last_seq = $1 WHERE epoch = $2 AND last_seq = $3 RETURNING 1",
                               {Param::Int(new_last), Param::Int(epoch_), Param::Int(last)}));
      GP_RETURN_IF_ERROR(InsertRecords(batch));
      return InsertHistory(batch);
    });
    if (!s.ok()) return s;
    for (Record& r : batch) r.seq = next_++;
    return Ok();
  }

  Result<std::vector<Record>> ReadAll() override {
    if (first_read_) {
      std::vector<Record> out = std::move(*first_read_);
      first_read_.reset();
      return out;
    }
    // After a failed append the commit may have happened all the same: what is there counts.
    Result<Read> r = ReadJournal(*conn_, s_, -1);
    if (!r.ok()) return r.error().code == ErrorCode::kFailedPrecondition ? Damaged(r.error().message, 0) : r.error();
    if (!r->scan.damage.empty()) {
      return Damaged(r->scan.damage, r->meta.base + static_cast<int64_t>(r->scan.records.size()));
    }
    base_ = r->meta.base;
    next_ = r->meta.last_seq + 1;
    return std::move(r->scan.records);
  }

  int64_t last_seq() const override { return next_ - 1; }

  // The lease is kept in the database's clock (clock_timestamp()), so the replicas' clocks
  // need not agree.
  Result<Leadership> Campaign(const Candidate& c) override {
    Leadership out;
    Status s = conn_->Transaction([&]() -> Status {
      Result<Rows> r = conn_->Exec(
          "SELECT epoch, leader, coalesce(lease_until > clock_timestamp(), false), holder, "
          "coalesce(greatest(0, ceil(extract(epoch from lease_until - clock_timestamp()) * 1000))::bigint, 0) FROM " +
          s_ + ".meta FOR UPDATE");
      if (!r.ok()) return r.error();
      if (PQntuples(r->get()) != 1) return FailedPrecondition("the store's meta row is missing");
      const int64_t epoch = pg_store::Int(r->get(), 0, 0);
      const bool live = PQgetvalue(r->get(), 0, 2)[0] != 0;
      // The data directory's lock keeps one process per replica id: a live lease of this id is
      // one that this replica's previous process held until it died.
      const bool own = !c.id.empty() && pg_store::Bytes(r->get(), 0, 3) == c.id;
      const std::vector<Param> params = {Param::Text(c.url), Param::Int(c.lease_ms), Param::Text(c.id)};
      const std::string lease =
          "leader = $1, lease_until = clock_timestamp() + $2::bigint * interval '1 millisecond', holder = $3";
      if (epoch_ != 0 && epoch == epoch_) {  // ours: renew
        Result<Rows> u = conn_->Exec("UPDATE " + s_ + ".meta SET " + lease, params);
        if (!u.ok()) return u.error();
        out = Leadership{.leader = true, .epoch = epoch, .leader_url = c.url};
      } else if (!live || own) {  // lapsed (or never held, or ours from before a restart): take it
        Result<Rows> u = conn_->Exec("UPDATE " + s_ + ".meta SET epoch = epoch + 1, " + lease + " RETURNING epoch", params);
        if (!u.ok()) return u.error();
        out = Leadership{.leader = true, .promoted = true, .deposed = false, .epoch = pg_store::Int(u->get(), 0, 0),
                         .leader_url = c.url};
      } else {
        out = Leadership{.leader = false, .deposed = epoch_ != 0, .epoch = epoch,
                         .leader_url = pg_store::Bytes(r->get(), 0, 1), .lease_left_ms = pg_store::Int(r->get(), 0, 4)};
      }
      return Ok();
    });
    if (!s.ok()) return s.error();
    if (out.promoted) epoch_ = out.epoch;
    if (out.deposed) epoch_ = 0;
    return out;
  }

  Result<std::vector<Record>> ReadAfter(int64_t seq) override {
    Result<Read> r = ReadJournal(*conn_, s_, seq);
    if (!r.ok()) return r.error();
    if (r->meta.base > seq) {
      return Error{ErrorCode::kNotFound, "records after " + std::to_string(seq) + " were compacted (the journal starts after " +
                                             std::to_string(r->meta.base) + ")"};
    }
    if (!r->scan.damage.empty()) return Damaged(r->scan.damage, seq + static_cast<int64_t>(r->scan.records.size()));
    base_ = r->meta.base;
    next_ = r->meta.last_seq + 1;
    return std::move(r->scan.records);
  }

  Status WriteSnapshot(const Snapshot& snap) override {
    std::lock_guard<std::mutex> lock(snapshot_mu_);
    if (epoch_ == 0) return NotTheWriter();
    if (!snapshot_conn_) {
      Result<std::unique_ptr<Conn>> c = Conn::Open(conninfo_, /*timeout_ms=*/60000);  // a large state takes a while
      if (!c.ok()) return c.error();
      snapshot_conn_ = std::move(*c);
    }
    Result<Rows> r = snapshot_conn_->Exec(
        "INSERT INTO " + s_ + ".snapshots (seq, format, body, crc) SELECT $1::bigint, $2::integer, $3::bytea, $4::bigint FROM " + s_ +
            ".meta WHERE epoch = $5::bigint ON CONFLICT (seq) DO UPDATE SET format = EXCLUDED.format, body = EXCLUDED.body, "
            "crc = EXCLUDED.crc",
        {Param::Int(snap.seq), Param::Int(snap.format), Param::Bytes(snap.body),
         Param::Int(static_cast<int64_t>(Crc32c(snap.body))), Param::Int(epoch_)});
    if (!r.ok()) return r.error();
    if (std::string(PQcmdTuples(r->get())) != "1") return Deposed(*snapshot_conn_);
    return Ok();
  }

  Result<Snapshot> ReadSnapshot() override {
    if (epoch_ == 0) {  // a follower: the leader may have written snapshots and compacted since
      Result<Meta> m = ReadMeta(*conn_, s_);
      if (!m.ok()) return m.error();
      base_ = m->base;
      next_ = m->last_seq + 1;
    }
    Result<Rows> seqs = conn_->Exec("SELECT seq FROM " + s_ + ".snapshots WHERE seq >= $1 ORDER BY seq DESC",
                                    {Param::Int(base_)});
    if (!seqs.ok()) return seqs.error();
    std::string faults;
    for (int i = 0; i < PQntuples(seqs->get()); ++i) {
      const int64_t seq = pg_store::Int(seqs->get(), i, 0);
      const std::string name = "snapshot " + std::to_string(seq);
      if (seq > last_seq()) {
        faults += (faults.empty() ? "" : "; ") + name + " is past the journal's last record (" +
                  std::to_string(last_seq()) + ")";
        continue;
      }
      Result<Rows> r = conn_->Exec("SELECT format, body, crc FROM " + s_ + ".snapshots WHERE seq = $1", {Param::Int(seq)});
      if (!r.ok()) return r.error();
      if (PQntuples(r->get()) != 1) continue;  // compacted meanwhile
      Snapshot out{seq, static_cast<int>(pg_store::Int(r->get(), 0, 0)), pg_store::Bytes(r->get(), 0, 1)};
      if (pg_store::Int(r->get(), 0, 2) == static_cast<int64_t>(Crc32c(out.body))) return out;
      faults += (faults.empty() ? "" : "; ") + name + " fails its checksum";
    }
    if (base_ == 0) return Snapshot{};
    return FailedPrecondition("the journal in " + Where() + " starts after record " + std::to_string(base_) +
                              ", which only a snapshot holds, and no intact snapshot of record " +
                              std::to_string(base_) + " or later is there" +
                              (faults.empty() ? "" : ": " + faults) + ". Restore the database from a backup");
  }

  Status Compact(int64_t seq) override {
    if (seq <= base_) return Ok();
    if (seq > last_seq()) return InvalidArgument("cannot compact past the last record");
    first_read_.reset();
    const Status done = conn_->Transaction([&]() -> Status {
      GP_RETURN_IF_ERROR(Claim("UPDATE " + s_ + ".meta SET base = $1 WHERE epoch = $2 RETURNING 1",
                               {Param::Int(seq), Param::Int(epoch_)}));
      Result<Rows> d = conn_->Exec("DELETE FROM " + s_ + ".journal WHERE seq <= $1", {Param::Int(seq)});
      if (!d.ok()) return d.error();
      Result<Rows> o = conn_->Exec("DELETE FROM " + s_ + ".snapshots WHERE seq < $1", {Param::Int(seq)});
      return o.ok() ? Ok() : Status(o.error());
    });
    if (!done.ok()) return done;
    base_ = seq;
    return Ok();
  }

  Result<std::optional<std::string>> ArchivedJob(int64_t id) override {
    Result<std::vector<std::pair<int64_t, std::string>>> rows =
        Bodies("SELECT id, body, crc FROM " + s_ + ".archived_jobs WHERE id = $1", {Param::Int(id)}, "archived job");
    if (!rows.ok()) return rows.error();
    if (rows->empty()) return std::optional<std::string>();
    return std::optional<std::string>(std::move(rows->front().second));
  }

  Result<std::vector<std::pair<int64_t, std::string>>> ArchivedJobs(const ArchiveQuery& q) override {
    return Bodies("SELECT id, body, crc FROM " + s_ +
                      ".archived_jobs WHERE ($1::bigint = 0 OR id < $1::bigint) AND ($2::text = '' OR tenant = $2::text) AND "
                      "($3::text = '' OR state = $3::text) ORDER BY id DESC LIMIT $4::bigint",
                  {Param::Int(q.before), Param::Text(q.tenant), Param::Text(q.state), Limit(q.limit)}, "archived job");
  }

  Result<std::vector<std::string>> ArchivedUsage(int64_t from_ms, int64_t to_ms) override {
    Result<std::vector<std::pair<int64_t, std::string>>> rows =
        Bodies("SELECT id, body, crc FROM " + s_ + ".archived_jobs WHERE usage_to > $1 AND usage_from < $2 ORDER BY id",
               {Param::Int(from_ms), Param::Int(to_ms)}, "archived job");
    if (!rows.ok()) return rows.error();
    std::vector<std::string> out;
    out.reserve(rows->size());
    for (auto& [id, body] : *rows) out.push_back(std::move(body));
    return out;
  }

  Result<std::vector<std::pair<int64_t, std::string>>> AuditLines(int64_t before, const std::string& tenant,
                                                                  int64_t limit) override {
    return Bodies("SELECT seq, body, crc FROM " + s_ +
                      ".audit_log WHERE ($1::bigint = 0 OR seq < $1::bigint) AND ($2::text = '' OR tenant = $2::text) "
                      "ORDER BY seq DESC LIMIT $3::bigint",
                  {Param::Int(before), Param::Text(tenant), Limit(limit)}, "audit line");
  }

 private:
  static Param Limit(int64_t limit) { return Param::Int(limit > 0 ? limit : INT64_MAX); }

  std::string Where() const { return conn_->name() + ", schema " + s_; }

  Error Damaged(const std::string& what, int64_t intact) const { return JournalDamaged(Where(), what, intact); }

  Error NotTheWriter() const {
    return Error{ErrorCode::kUnavailable, "this gpupool serve is a follower of the store in " + Where() +
                                              ": the leader writes"};
  }

  // Why a write conditional on this writer's epoch (and, for an append, on `last`) changed no row.
  Error Deposed(Conn& c) const {
    Result<Meta> m = ReadMeta(c, s_);
    if (m.ok() && m->epoch != epoch_) {
      return Error{ErrorCode::kUnavailable, "another gpupool serve took over the store in " + Where() +
                                                " (its epoch is " + std::to_string(m->epoch) + ", this one's " +
                                                std::to_string(epoch_) + "): this process may no longer write"};
    }
    if (m.ok()) {
      return Error{ErrorCode::kUnavailable, "the journal in " + Where() + " ends at record " +
                                                std::to_string(m->last_seq) + ", not where this process left it (" +
                                                std::to_string(next_ - 1) + ")"};
    }
    return Error{ErrorCode::kUnavailable, "the store in " + Where() + " refused the write: " + m.error().message};
  }

  // Runs an UPDATE ... RETURNING on S.meta that must change its row; Deposed when it did not.
  Status Claim(const std::string& sql, const std::vector<Param>& params) {
    if (epoch_ == 0) return NotTheWriter();
    Result<Rows> r = conn_->Exec(sql, params);
    if (!r.ok()) return r.error();
    if (PQntuples(r->get()) != 1) return Deposed(*conn_);
    return Ok();
  }

  Status InsertRecords(const std::vector<Record>& batch) {
    for (size_t from = 0; from < batch.size(); from += kRowsPerInsert) {
      const size_t to = std::min(batch.size(), from + kRowsPerInsert);
      std::string sql = "INSERT INTO " + s_ + ".journal (seq, kind, body, crc) VALUES ";
      std::vector<Param> params;
      params.reserve((to - from) * 4);
      for (size_t i = from; i < to; ++i) {
        const int64_t seq = next_ + static_cast<int64_t>(i);
        const size_t k = params.size();
        sql += (i == from ? "" : ",") + Placeholders(k, 4);
        params.push_back(Param::Int(seq));
        params.push_back(Param::Text(batch[i].kind));
        params.push_back(Param::Bytes(batch[i].body));
        params.push_back(Param::Int(sqlite_store::RecordChecksum(seq, batch[i].kind, batch[i].body)));
      }
      Result<Rows> r = conn_->Exec(sql, params);
      if (!r.ok()) return r.error();
    }
    return Ok();
  }

  Status InsertHistory(const std::vector<Record>& batch) {
    std::string jobs, audit;
    std::vector<Param> job_params, audit_params;
    for (size_t i = 0; i < batch.size(); ++i) {
      const HistoryKey& h = batch[i].history;
      const int64_t seq = next_ + static_cast<int64_t>(i);
      const Param crc = Param::Int(Crc32c(batch[i].body));
      if (h.kind == HistoryKey::Kind::kJob) {
        jobs += (jobs.empty() ? "" : ",") + Placeholders(job_params.size(), 8);
        for (Param p : {Param::Int(h.job), Param::Int(seq), Param::Text(h.tenant), Param::Text(h.state),
                        Param::Int(h.usage_from_ms), Param::Int(h.usage_to_ms), Param::Bytes(batch[i].body), crc}) {
          job_params.push_back(std::move(p));
        }
      } else if (h.kind == HistoryKey::Kind::kAudit) {
        audit += (audit.empty() ? "" : ",") + Placeholders(audit_params.size(), 4);
        for (Param p : {Param::Int(seq), Param::Text(h.tenant), Param::Bytes(batch[i].body), crc}) {
          audit_params.push_back(std::move(p));
        }
      }
      if (job_params.size() >= kRowsPerInsert * 8 || audit_params.size() >= kRowsPerInsert * 4 || i + 1 == batch.size()) {
        GP_RETURN_IF_ERROR(Flush(".archived_jobs (id, seq, tenant, state, usage_from, usage_to, body, crc)", jobs, job_params));
        GP_RETURN_IF_ERROR(Flush(".audit_log (seq, tenant, body, crc)", audit, audit_params));
      }
    }
    return Ok();
  }

  Status Flush(const std::string& table, std::string& values, std::vector<Param>& params) {
    if (values.empty()) return Ok();
    Result<Rows> r = conn_->Exec("INSERT INTO " + s_ + table + " VALUES " + values, params);
    values.clear();
    params.clear();
    return r.ok() ? Ok() : Status(r.error());
  }

  // "($k+1,...,$k+n)".
  static std::string Placeholders(size_t k, size_t n) {
    std::string out = "(";
    for (size_t j = 1; j <= n; ++j) out += (j == 1 ? "$" : ",$") + std::to_string(k + j);
    return out + ")";
  }

  Result<std::vector<std::pair<int64_t, std::string>>> Bodies(const std::string& sql, const std::vector<Param>& params,
                                                              const char* what) {
    Result<Rows> r = conn_->Exec(sql, params);
    if (!r.ok()) return r.error();
    std::vector<std::pair<int64_t, std::string>> out;
    const PGresult* p = r->get();
    for (int i = 0; i < PQntuples(p); ++i) {
      const int64_t key = pg_store::Int(p, i, 0);
      std::string body = pg_store::Bytes(p, i, 1);
      if (pg_store::Int(p, i, 2) != static_cast<int64_t>(Crc32c(body))) {
        return FailedPrecondition("the history in " + Where() + " is damaged: " + what + " " + std::to_string(key) +
                                  " fails its checksum");
      }
      out.emplace_back(key, std::move(body));
    }
    return out;
  }

  const std::string conninfo_;
  std::unique_ptr<Conn> conn_;
  const std::string s_;  // the schema, quoted
  std::atomic<int64_t> epoch_;  // this process's epoch as the writer; 0: not the writer (read by WriteSnapshot's thread)
  int64_t base_;
  int64_t next_;
  std::optional<std::vector<Record>> first_read_;
  std::mutex snapshot_mu_;
  std::unique_ptr<Conn> snapshot_conn_;  // WriteSnapshot's (another thread)
};

}  // namespace

Result<std::unique_ptr<Journal>> OpenPostgresJournal(const std::string& conninfo, const PostgresJournalOptions& options) {
  if (options.schema.empty()) return InvalidArgument("the PostgreSQL store needs a schema name");
  Result<std::unique_ptr<Conn>> opened = Conn::Open(conninfo);
  if (!opened.ok()) return opened.error();
  Conn& c = **opened;
  const std::string s = c.Quote(options.schema);
  const std::string where = c.name() + ", schema " + s;
  Meta meta;
  Status taken = c.Transaction([&]() -> Status {
    // Two processes creating the tables at once would collide in the catalogue.
    Result<Rows> lock = c.Exec("SELECT pg_advisory_xact_lock(hashtext($1))", {Param::Text(options.schema)});
    if (!lock.ok()) return lock.error();
    GP_RETURN_IF_ERROR(c.Script(Schema(s)));
    Result<Rows> rows = c.Exec("SELECT (SELECT count(*) FROM " + s + ".meta), EXISTS (SELECT 1 FROM " + s + ".journal)");
    if (!rows.ok()) return rows.error();
    if (pg_store::Int(rows->get(), 0, 0) == 0) {
      if (PQgetvalue(rows->get(), 0, 1)[0] != 0) {
        return JournalDamaged(where, "its meta row is missing and it has records", 0);
      }
      Result<Rows> init = c.Exec("INSERT INTO " + s + ".meta (id, format, base, last_seq, epoch) VALUES (1, $1, 0, 0, 0)",
                                 {Param::Int(kFormat)});
      if (!init.ok()) return init.error();
    }
    if (!options.take_over) {
      Result<Meta> m = ReadMeta(c, s);
      if (!m.ok()) return m.error();
      meta = *m;
      meta.epoch = 0;  // not the writer until a Campaign says so
      return Ok();
    }
    Result<Rows> bumped = c.Exec("UPDATE " + s + ".meta SET epoch = epoch + 1, leader = '', lease_until = NULL "
                                 "RETURNING format, base, last_seq, epoch");
    if (!bumped.ok()) return bumped.error();
    const PGresult* p = bumped->get();
    meta = Meta{pg_store::Int(p, 0, 0), pg_store::Int(p, 0, 1), pg_store::Int(p, 0, 2), pg_store::Int(p, 0, 3)};
    return Ok();
  });
  if (!taken.ok()) return taken.error();
  if (meta.format != kFormat) {
    return FailedPrecondition("the journal in " + where + " has format " + std::to_string(meta.format) +
                              "; this gpupool reads format " + std::to_string(kFormat));
  }
  // A follower reads while the leader may append: the meta row and the records in one snapshot.
  // (A writer's epoch, taken above, stops every other writer, so its own read agrees already.)
  Result<Read> read = options.take_over ? Result<Read>(Read{meta, {}}) : ReadJournal(c, s, -1);
  if (!read.ok()) return read.error();
  if (!options.take_over) {
    meta = read->meta;
    meta.epoch = 0;  // not the writer until a Campaign says so
  } else {
    Result<Scan> scan = ScanJournal(c, s, meta);
    if (!scan.ok()) return scan.error();
    read->scan = std::move(*scan);
  }
  if (!read->scan.damage.empty()) {
    return JournalDamaged(where, read->scan.damage, meta.base + static_cast<int64_t>(read->scan.records.size()));
  }
  return std::unique_ptr<Journal>(
      new PostgresJournal(conninfo, std::move(*opened), s, meta, std::move(read->scan.records)));
}

}  // namespace gpupool
