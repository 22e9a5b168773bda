// Internal to src/store: a libpq connection as the PostgreSQL journal uses it (pg_journal.cc).
// Every statement goes with its parameters apart from its text (PQexecParams), numbers as text
// and bodies as binary bytea; every result comes back in binary, so a body keeps every byte and
// is not hex-decoded.
//
// A lost connection (a restarted server, a network cut) is reset before the next statement;
// the statement that met the loss fails with kUnavailable, and so does any statement while the
// server cannot be reached. Messages name the store by host, port and database, never by the
// connection string (it may hold a password).
//
// Thread-safety: one thread at a time per Conn (libpq's rule); two Conns are independent.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpupool::pg_store {

struct ClearResult {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Rows = std::unique_ptr<PGresult, ClearResult>;

// A statement parameter: a number or text (sent as text), or bytes (sent as binary bytea).
struct Param {
  static Param Int(int64_t v) { return {std::to_string(v), false}; }
  static Param Text(std::string_view v) { return {std::string(v), false}; }
  static Param Bytes(std::string_view v) { return {std::string(v), true}; }
  std::string value;
  bool binary = false;
};

// Column `col` of row `row` of a binary result: an int8 (bigint) or int4, and text or bytea.
int64_t Int(const PGresult* r, int row, int col);
std::string Bytes(const PGresult* r, int row, int col);

class Conn {
 public:
  // Connects; kUnavailable (with libpq's reason) when it cannot. `conninfo` is a libpq
  // connection string or URI. No statement waits longer than `timeout_ms` for the server (nor
  // a connect, unless the string sets connect_timeout): a stopped or unreachable server makes
  // it fail with kUnavailable, and the next one connects again.
  static Result<std::unique_ptr<Conn>> Open(const std::string& conninfo, int timeout_ms = 5000);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Runs one statement; its rows, in binary.
  Result<Rows> Exec(const std::string& sql, const std::vector<Param>& params = {});
  // Runs statements separated by ';' (no parameters; schema changes).
  Status Script(const std::string& sql);
  // "BEGIN" ... "COMMIT" around `body`; "ROLLBACK" when it fails (or the COMMIT does).
  Status Transaction(const std::function<Status()>& body);
  // The same in one snapshot of the database (REPEATABLE READ, READ ONLY): reads that must agree
  // with each other while another process writes.
  Status ReadSnapshot(const std::function<Status()>& body);
  // An identifier quoted for SQL ("gpupool" -> "\"gpupool\"").
  std::string Quote(const std::string& identifier);
  // "PostgreSQL at HOST:PORT, database DB" for messages.
  const std::string& name() const { return name_; }

 private:
  Conn(PGconn* c, int timeout_ms);
  Status Reconnect();
  Result<Rows> Await();
  Status Run(const char* begin_sql, const std::function<Status()>& body);
  Result<Rows> Check(PGresult* raw);
  PGconn* conn_;
  std::string name_;
  int timeout_ms_;
  bool broken_ = false;  // a statement timed out: connect again before the next
};

}  // namespace gpupool::pg_store
