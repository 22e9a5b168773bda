// What the journal's high-water mark costs per flush (docs/design/daemon.md, "Journal
// integrity"): Append of one batch (one to 64 records of 350 bytes, the size of a submitted
// job's event) to a SQLite journal in a directory on the disk under test, with and without the
// mark, which adds a pwrite + fdatasync of 32 bytes after each commit. Run it on the disk the
// data directory lives on: journal_bench [--benchmark_...] with GPUPOOL_BENCH_DIR=DIR (default
// the current directory); it reports, it does not pass or fail. BM_Open: what the checks at
// open cost (every record's checksum, the sequence, SQLite's quick_check) against a plain read.
#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/check.h"
#include "store/journal.h"

namespace gpupool {
namespace {

void BM_Append(benchmark::State& state) {
  const bool mark = state.range(0) != 0;
  const int records = static_cast<int>(state.range(1));
  const char* base = std::getenv("GPUPOOL_BENCH_DIR");
  const std::filesystem::path dir =
      std::filesystem::path(base ? base : ".") / ("journal-bench-" + std::to_string(mark) + "-" + std::to_string(records));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SqliteJournalOptions options;
  options.high_water_mark = mark;
  Result<std::unique_ptr<Journal>> j = OpenSqliteJournal((dir / "journal.db").string(), options);
  GP_CHECK(j.ok()) << j.error().message;
  const std::string body(350, 'x');
  for (auto _ : state) {
    std::vector<Record> batch(records, Record{0, "event", body});
    GP_CHECK((*j)->Append(batch).ok());
  }
  state.SetItemsProcessed(state.iterations() * records);
  j->reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Append)->ArgNames({"mark", "records"})->ArgsProduct({{0, 1}, {1, 64}})->UseRealTime()->MinTime(2.0);

// Opens a journal of 150,000 records of 350 bytes (about 56 MB) and reads it all: with the
// checks of OpenSqliteJournal (checked = 1), and with a bare SELECT of every row for comparison.
void BM_Open(benchmark::State& state) {
  const char* base = std::getenv("GPUPOOL_BENCH_DIR");
  const std::filesystem::path dir = std::filesystem::path(base ? base : ".") / "journal-bench-open";
  const std::string path = (dir / "journal.db").string();
  if (!std::filesystem::exists(path)) {
    std::filesystem::create_directories(dir);
    Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
    GP_CHECK(j.ok()) << j.error().message;
    for (int b = 0; b < 150; ++b) {
      std::vector<Record> batch(1000, Record{0, "event", std::string(350, 'x')});
      GP_CHECK((*j)->Append(batch).ok());
    }
  }
  for (auto _ : state) {
    if (state.range(0)) {
      Result<std::unique_ptr<Journal>> j = OpenSqliteJournal(path);
      GP_CHECK(j.ok()) << j.error().message;
      benchmark::DoNotOptimize((*j)->ReadAll()->size());
    } else {
      sqlite3* db = nullptr;
      GP_CHECK(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, "SELECT seq, kind, body FROM journal ORDER BY seq", -1, &st, nullptr);
      std::vector<Record> out;
      while (sqlite3_step(st) == SQLITE_ROW) {
        out.push_back({sqlite3_column_int64(st, 0), reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
                       reinterpret_cast<const char*>(sqlite3_column_text(st, 2))});
      }
      sqlite3_finalize(st);
      sqlite3_close(db);
      benchmark::DoNotOptimize(out.size());
    }
  }
}
BENCHMARK(BM_Open)->ArgName("checked")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gpupool

BENCHMARK_MAIN();
