// Where the daemon keeps its journal: `gpupool serve --store URL` or `store:` in the
// configuration (docs/design/daemon.md, "The PostgreSQL store").
//   sqlite:          SQLite files in the data directory (the default, also for "")
//   sqlite:DIR       SQLite files in DIR
//   postgresql://... (or postgres://...) a libpq connection URI, multi-host lists and
//                    target_session_attrs=read-write included. One parameter is gpupool's and
//                    is taken out before libpq sees the URI: gpupool_schema=NAME, the schema of
//                    the tables (default "gpupool"; [a-z_][a-z0-9_]*, at most 63 characters).
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "store/journal.h"

namespace gpupool {

struct StoreUrl {
  enum class Kind { kSqlite, kPostgres };
  Kind kind = Kind::kSqlite;
  std::string sqlite_dir;  // kSqlite: "" for the data directory
  std::string conninfo;    // kPostgres: the URI for libpq
  std::string schema = "gpupool";
  std::string shown;       // for logs and messages: the URL without its password
};

Result<StoreUrl> ParseStoreUrl(const std::string& url);

// Opens the journal the URL names; `data_dir` is where sqlite: without a directory keeps it.
// `follower`: a shared store's journal opens without taking the writer's epoch (a replica
// campaigns for it: Journal::Campaign); else the opener is its one writer at once.
Result<std::unique_ptr<Journal>> OpenStore(const StoreUrl& url, const std::string& data_dir, bool follower = false);

}  // namespace gpupool
