// history_bench: a daemon's restart and memory after a long history (docs/benchmarks.md,
// "Restart and memory after 1,000,000 jobs"; issue 16 items 2 and 3).
//
//   history_bench fill DIR JOBS [SNAPSHOT_EVERY_RECORDS [RETENTION_S]]   a data directory with JOBS jobs
//       submitted, run and finished (simulated executor, two ticks per 20 submits, time
//       advancing 1 s per tick), through ControlPlane and its journal (no HTTP); snapshots as the
//       daemon takes them (copy on this thread, encode and write, compact), 0: none; finished
//       jobs leave memory RETENTION_S simulated seconds after they finished (60). Prints RSS,
//       journal and snapshot sizes every 100,000 jobs, and the time each snapshot took.
//       DIR is a data directory `gpupool serve --data-dir DIR` can serve (bench/restart_serve.sh).
//   history_bench open DIR                                  opens DIR as a start does (newest
//       snapshot, then the journal's tail) and prints the time and the RSS after it.
// Passes or fails on nothing.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/control_plane.h"
#include "model/demo_cluster.h"

namespace gpupool {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// VmRSS in MiB, to a tenth (whole MiB hide a 15% change at 15 MiB).
double RssMib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) / 1024.0;
  }
  return -1;
}

uint64_t Bytes(const fs::path& dir, const std::string& prefix) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) total += e.file_size();
  }
  return total;
}

std::unique_ptr<ControlPlane> Open(const fs::path& dir) {
  Result<std::unique_ptr<Journal>> journal = OpenSqliteJournal((dir / "journal.db").string());
  GP_CHECK(journal.ok()) << journal.error().message;
  Result<std::unique_ptr<ControlPlane>> core = ControlPlane::Open(std::move(*journal), SchedulerConfig());
  GP_CHECK(core.ok()) << core.error().message;
  return std::move(*core);
}

int Fill(const fs::path& dir, int64_t jobs, int64_t every, int64_t retention_s) {
  fs::create_directories(dir);
  std::unique_ptr<ControlPlane> core = Open(dir);
  core->SetRetention(Duration::Seconds(retention_s));
  Result<std::string> admin = core->Bootstrap(DemoCluster(), Time::FromMillis(1000));
  GP_CHECK(admin.ok());
  GP_CHECK(core->Flush().ok());
  // What `gpupool serve` writes after a bootstrap, so that it can serve this directory
  // (bench/restart_serve.sh): the admin's token, and the mark that the cluster exists.
  std::ofstream(dir / "admin.token") << *admin << "\n";
  std::ofstream(dir / "bootstrapped") << "1\n";
  const TenantId research = *core->state().FindTenant("research");
  const Principal member{"research-bob", Role::kMember, research, "research-bob-token"};
  int64_t now = 2000;
  const auto start = Clock::now();
  for (int64_t i = 0; i < jobs; ++i) {
    const std::string body =
        Json({{"tenant", "research"}, {"name", "job-" + std::to_string(i)}, {"priority_class", "batch"}, {"replicas", 1},
              {"resources", {{"flavor", "h100-80gb"}, {"gpus", 1}}}, {"duration_estimate_s", 1},
              {"command", {"python", "train.py", "--seed", std::to_string(i)}}})
            .dump();
    GP_CHECK(core->SubmitJob({&member, "127.0.0.1", Time::FromMillis(now)}, body, "").status == 201);
    if (i % 20 != 19) continue;
    // Two ticks a simulated second apart: the first admits and starts, the second finishes.
    for (int k = 0; k < 2; ++k) {
      now += 1000;
      core->Tick(Time::FromMillis(now), true);
    }
    GP_CHECK(core->Flush().ok());
    if (every > 0 && core->records_since_snapshot() >= every) {
      const auto t0 = Clock::now();
      std::shared_ptr<const ControlPlane::SnapshotCopy> copy = core->CopyForSnapshot();
      const double copy_s = Since(t0);
      const auto t1 = Clock::now();
      const Snapshot s = ControlPlane::EncodeSnapshot(*copy);
      const double encode_s = Since(t1);
      const auto t2 = Clock::now();
      GP_CHECK(core->journal().WriteSnapshot(s).ok());
      GP_CHECK(core->SnapshotWritten(s.seq).ok());
      std::printf("  snapshot at record %lld: %.1f MB, copy %.3f s, encode %.3f s, write+compact %.3f s\n",
                  static_cast<long long>(s.seq), s.body.size() / 1e6, copy_s, encode_s, Since(t2));
    }
    if ((i + 1) % 100000 == 0) {
      std::printf("%lld jobs: %lld in memory, RSS %.1f MiB, journal %.1f MB, snapshots %.1f MB, %.0f jobs/s\n",
                  static_cast<long long>(i + 1), static_cast<long long>(core->state().jobs().size()), RssMib(),
                  Bytes(dir, "journal.db") / 1e6, Bytes(dir, "snapshot-") / 1e6, (i + 1) / Since(start));
      std::fflush(stdout);
    }
  }
  return 0;
}

int OpenOnly(const fs::path& dir) {
  const auto t0 = Clock::now();
  std::unique_ptr<ControlPlane> core = Open(dir);
  const double s = Since(t0);
  std::printf("open: %.3f s, %zu jobs in memory, RSS %.1f MiB, max RSS %ld MiB\n", s, core->state().jobs().size(),
              RssMib(), [] { rusage ru{}; getrusage(RUSAGE_SELF, &ru); return ru.ru_maxrss / 1024; }());
  return 0;
}

}  // namespace
}  // namespace gpupool

int main(int argc, char** argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  if (mode == "fill" && argc >= 4) {
    return gpupool::Fill(argv[2], std::atoll(argv[3]), argc > 4 ? std::atoll(argv[4]) : 100000,
                         argc > 5 ? std::atoll(argv[5]) : 60);
  }
  if (mode == "open") return gpupool::OpenOnly(argv[2]);
  std::fprintf(stderr, "usage: history_bench fill DIR JOBS [SNAPSHOT_EVERY_RECORDS [RETENTION_S]] | history_bench open DIR\n");
  return 2;
}
