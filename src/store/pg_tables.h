// Internal to src/store: the PostgreSQL journal's tables (pg_journal.h lists them) and the
// reads that check them, shared by the open and the journal's own reads (pg_journal.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/journal.h"
#include "store/pg_conn.h"

namespace gpupool::pg_store {

constexpr int kFormat = 1;
// Rows per INSERT: 4-8 parameters each, well under PostgreSQL's 65,535.
constexpr size_t kRowsPerInsert = 1000;

// The statements that create schema `s` (quoted) and its tables if missing.
std::string Schema(const std::string& s);

// What S.meta holds.
struct Meta {
  int64_t format = 0, base = 0, last_seq = 0, epoch = 0;
};
Result<Meta> ReadMeta(Conn& c, const std::string& s);

// Records base+1.. in order, each checked; `damage` says the first fault.
struct Scan {
  std::vector<Record> records;
  std::string damage;
};
Result<Scan> ScanJournal(Conn& c, const std::string& s, const Meta& m);

// The meta row and the records after `after` (-1: after the compaction point), read in one
// snapshot, so that a writer appending meanwhile cannot make them disagree.
struct Read {
  Meta meta;
  Scan scan;
};
Result<Read> ReadJournal(Conn& c, const std::string& s, int64_t after);

Error JournalDamaged(const std::string& where, const std::string& what, int64_t intact);

}  // namespace gpupool::pg_store
