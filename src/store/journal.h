// Journal: the durable, append-only log of everything that changed the daemon's state.
//
// A record is (kind, body), body a JSON text (store/codec.h). Append writes a batch in one
// transaction and returns only once it is durable (SQLite WAL, synchronous=FULL): the daemon
// acknowledges a request only after its records are appended, so an acknowledged write survives
// kill -9. Recovery reads every record in order and replays it onto an empty state.
//
// Thread-safety: none; the daemon's event loop is the only user.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool {

struct Record {
  int64_t seq = 0;  // assigned by Append, 1, 2, ...
  std::string kind;
  std::string body;
};

class Journal {
 public:
  virtual ~Journal() = default;
  // Appends the batch atomically and durably; fills in each record's seq.
  virtual Status Append(std::vector<Record>& batch) = 0;
  virtual Result<std::vector<Record>> ReadAll() = 0;
};

// SQLite file at `path` (created if missing).
Result<std::unique_ptr<Journal>> OpenSqliteJournal(const std::string& path);

}  // namespace gpupool
