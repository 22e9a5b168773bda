// For tests: the private PostgreSQL 15 of scripts/test-postgres.sh (one server for the whole
// test run, started by whichever test needs it first) and a schema of the test's own, so that
// tests running at once never see each other's tables.
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include "core/result.h"

#ifndef GPUPOOL_TEST_POSTGRES_SCRIPT
#error "define GPUPOOL_TEST_POSTGRES_SCRIPT (the path of scripts/test-postgres.sh)"
#endif

namespace gpupool::testing {

// The server's URL, starting it if it is not running; an error says why it cannot start
// (scripts/setup.sh --test installs PostgreSQL 15).
inline Result<std::string> TestPostgresUrl() {
  static Result<std::string> url = []() -> Result<std::string> {
    FILE* p = popen(GPUPOOL_TEST_POSTGRES_SCRIPT " start 2>&1", "r");
    if (p == nullptr) return Error{ErrorCode::kUnavailable, "cannot run " GPUPOOL_TEST_POSTGRES_SCRIPT};
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
    const int rc = pclose(p);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    if (rc != 0) return Error{ErrorCode::kUnavailable, GPUPOOL_TEST_POSTGRES_SCRIPT " start failed: " + out};
    return out.substr(out.rfind('\n') + 1);
  }();
  return url;
}

// A schema name no other test uses.
inline std::string UniqueSchema(const std::string& prefix) {
  return prefix + "_" + std::to_string(getpid()) + "_" + std::to_string(std::random_device{}() % 1000000);
}

// Runs SQL on the server on a connection of its own (behind a journal's back); the error text,
// or "" when it worked.
inline std::string PostgresSql(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string err;
  if (PQstatus(c) != CONNECTION_OK) {
    err = PQerrorMessage(c);
  } else {
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) err = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return err;
}

}  // namespace gpupool::testing
