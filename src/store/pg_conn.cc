#include "store/pg_conn.h"

#include <arpa/inet.h>

#include <cstring>
#include <functional>

namespace gpupool::pg_store {
namespace {

std::string Describe(PGconn* c) {
  const char* host = PQhost(c);
  const char* port = PQport(c);
  const char* db = PQdb(c);
  return std::string("PostgreSQL at ") + (host && *host ? host : "(default host)") + ":" + (port && *port ? port : "5432") +
         ", database " + (db ? db : "?");
}

// libpq's messages end in a newline; one line is enough.
std::string Message(const char* m) {
  std::string s = m ? m : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int64_t Int(const PGresult* r, int row, int col) {
  const char* v = PQgetvalue(r, row, col);
  const int n = PQgetlength(r, row, col);
  if (n == 8) {
    uint32_t hi, lo;
    std::memcpy(&hi, v, 4);
    std::memcpy(&lo, v + 4, 4);
    return static_cast<int64_t>((static_cast<uint64_t>(ntohl(hi)) << 32) | ntohl(lo));
  }
  if (n == 4) {
    uint32_t x;
    std::memcpy(&x, v, 4);
    return static_cast<int32_t>(ntohl(x));
  }
  return 0;
}

std::string Bytes(const PGresult* r, int row, int col) {
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

Result<std::unique_ptr<Conn>> Conn::Open(const std::string& conninfo) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (c == nullptr) return Error{ErrorCode::kUnavailable, "cannot connect to PostgreSQL: out of memory"};
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = Message(PQerrorMessage(c));
    PQfinish(c);
    return Error{ErrorCode::kUnavailable, "cannot connect to PostgreSQL: " + why};
  }
  // Quiet: a CREATE ... IF NOT EXISTS that finds its object would print a NOTICE on stderr.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Conn>(new Conn(c));
}

Conn::Conn(PGconn* c) : conn_(c), name_(Describe(c)) {}
Conn::~Conn() { PQfinish(conn_); }

Status Conn::Reconnect() {
  if (PQstatus(conn_) == CONNECTION_OK) return Ok();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Error{ErrorCode::kUnavailable, "cannot reach " + name_ + ": " + Message(PQerrorMessage(conn_))};
  }
  return Ok();
}

Result<Rows> Conn::Exec(const std::string& sql, const std::vector<Param>& params) {
  GP_RETURN_IF_ERROR(Reconnect());
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size()), formats(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i].value.data();
    lengths[i] = static_cast<int>(params[i].value.size());
    formats[i] = params[i].binary ? 1 : 0;
  }
  return Check(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                            lengths.data(), formats.data(), /*resultFormat=binary*/ 1));
}

Status Conn::Script(const std::string& sql) {
  GP_RETURN_IF_ERROR(Reconnect());
  Result<Rows> r = Check(PQexec(conn_, sql.c_str()));
  return r.ok() ? Ok() : Status(r.error());
}

Result<Rows> Conn::Check(PGresult* raw) {
  Rows rows(raw);
  const ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return rows;
  std::string why = Message(raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_));
  if (why.empty()) why = Message(PQerrorMessage(conn_));
  return Error{ErrorCode::kUnavailable, name_ + ": " + why};
}

Status Conn::Transaction(const std::function<Status()>& body) {
  Result<Rows> begin = Exec("BEGIN");
  if (!begin.ok()) return begin.error();
  Status s = body();
  if (s.ok()) {
    Result<Rows> commit = Exec("COMMIT");
    if (commit.ok()) return Ok();
    s = commit.error();
  }
  if (PQstatus(conn_) == CONNECTION_OK) (void)Exec("ROLLBACK");
  return s;
}

std::string Conn::Quote(const std::string& identifier) {
  char* q = PQescapeIdentifier(conn_, identifier.data(), identifier.size());
  std::string out = q ? q : "\"\"";
  PQfreemem(q);
  return out;
}

}  // namespace gpupool::pg_store
