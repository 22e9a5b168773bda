#include "store/pg_conn.h"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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

Result<std::unique_ptr<Conn>> Conn::Open(const std::string& conninfo, int timeout_ms) {
  // A server that accepts the connection and never answers (stopped, or a network that drops
  // packets) would hold the connect for ever: connect_timeout bounds it, unless the string
  // gives its own (what the string says comes after, and wins).
  const std::string connect_s = std::to_string(std::max(2, timeout_ms / 2500));  // libpq takes 2 s at least
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {connect_s.c_str(), conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) return Error{ErrorCode::kUnavailable, "cannot connect to PostgreSQL: out of memory"};
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = Message(PQerrorMessage(c));
    PQfinish(c);
    return Error{ErrorCode::kUnavailable, "cannot connect to PostgreSQL: " + why};
  }
  // Quiet: a CREATE ... IF NOT EXISTS that finds its object would print a NOTICE on stderr.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Conn>(new Conn(c, timeout_ms));
}

Conn::Conn(PGconn* c, int timeout_ms) : conn_(c), name_(Describe(c)), timeout_ms_(timeout_ms) {}
Conn::~Conn() { PQfinish(conn_); }

Status Conn::Reconnect() {
  if (PQstatus(conn_) == CONNECTION_OK && !broken_) return Ok();
  PQreset(conn_);  // bounded by connect_timeout
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Error{ErrorCode::kUnavailable, "cannot reach " + name_ + ": " + Message(PQerrorMessage(conn_))};
  }
  broken_ = false;
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
  if (PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(), lengths.data(),
                        formats.data(), /*resultFormat=binary*/ 1) != 1) {
    return Check(nullptr);
  }
  return Await();
}

// The result of the statement just sent, waiting at most timeout_ms_ for the server. On a
// timeout the connection is given up (the next statement connects again); the server rolls
// back what the statement's transaction had not committed once it notices.
Result<Rows> Conn::Await() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  auto wait = [&](short events) -> Status {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      broken_ = true;
      return Error{ErrorCode::kUnavailable, name_ + " did not answer within " + std::to_string(timeout_ms_) + " ms"};
    }
    pollfd p{PQsocket(conn_), events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      broken_ = true;
      return Error{ErrorCode::kUnavailable, name_ + ": " + std::strerror(errno)};
    }
    return Ok();
  };
  for (int f; (f = PQflush(conn_)) != 0;) {  // the statement's bytes, when they do not fit at once
    if (f < 0) return Check(nullptr);
    GP_RETURN_IF_ERROR(wait(POLLIN | POLLOUT));
    if (PQconsumeInput(conn_) != 1) return Check(nullptr);
  }
  Rows last;
  while (true) {
    while (PQisBusy(conn_)) {
      GP_RETURN_IF_ERROR(wait(POLLIN));
      if (PQconsumeInput(conn_) != 1) return Check(nullptr);
    }
    PGresult* r = PQgetResult(conn_);
    if (r == nullptr) break;
    last.reset(r);  // one statement, one result; any earlier one is dropped
  }
  return Check(last.release());
}

Status Conn::Script(const std::string& sql) {
  GP_RETURN_IF_ERROR(Reconnect());
  if (PQsendQuery(conn_, sql.c_str()) != 1) return Check(nullptr).error();
  Result<Rows> r = Await();
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

Status Conn::Transaction(const std::function<Status()>& body) { return Run("BEGIN", body); }

Status Conn::ReadSnapshot(const std::function<Status()>& body) {
  return Run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body);
}

Status Conn::Run(const char* begin_sql, const std::function<Status()>& body) {
  Result<Rows> begin = Exec(begin_sql);
  if (!begin.ok()) return begin.error();
  Status s = body();
  if (s.ok()) {
    Result<Rows> commit = Exec("COMMIT");
    if (commit.ok()) return Ok();
    s = commit.error();
  }
  if (PQstatus(conn_) == CONNECTION_OK && !broken_) (void)Exec("ROLLBACK");
  return s;
}

std::string Conn::Quote(const std::string& identifier) {
  char* q = PQescapeIdentifier(conn_, identifier.data(), identifier.size());
  std::string out = q ? q : "\"\"";
  PQfreemem(q);
  return out;
}

}  // namespace gpupool::pg_store
