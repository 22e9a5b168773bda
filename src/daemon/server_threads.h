// The daemon's background threads (server.cc starts them): the demo's traffic, the history
// scrub and the TLS reloader. Each runs until `stop` and joins in its destructor; none touches
// the core except through the loop's queue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "daemon/demo.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "daemon/metrics.h"
#include "http/server.h"
#include "store/journal.h"

namespace gpupool {

// Waits `ms`, waking every 100 ms for `stop` (the background threads' pause); false once stopped.
inline bool SleepUnlessStopped(int64_t ms, const std::atomic<bool>& stop) {
  for (int64_t waited = 0; waited < ms; waited += 100) {
    if (stop) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return !stop;
}

// When `reload` is set (SIGHUP), re-reads the TLS certificate and key (a renewed certificate takes effect without a
// restart): new connections get the new ones, open ones keep theirs; a reload that fails keeps
// the old ones and says why.
class TlsReloader {
 public:
  TlsReloader(std::shared_ptr<http::TlsCredentials> tls, std::atomic<bool>& reload, const std::atomic<bool>& stop)
      : thread_([tls = std::move(tls), &reload, &stop] {
          while (SleepUnlessStopped(200, stop)) {
            if (!reload.exchange(false)) continue;
            const Status s = tls->Reload();
            if (s.ok()) {
              Log("info", "TLS certificate reloaded", {{"cert_file", tls->cert_file()}});
            } else {
              Log("error", "TLS certificate reload failed; the previous one stays", {{"error", s.error().message}});
            }
          }
        }) {}
  ~TlsReloader() { thread_.join(); }

 private:
  std::thread thread_;
};

// The demo's traffic: a job every one to four seconds, posted to the loop like a client's.
class DemoTraffic {
 public:
  DemoTraffic(Loop& loop, const std::atomic<bool>& stop) : thread_([&loop, &stop] { Run(loop, stop); }) {}
  ~DemoTraffic() { thread_.join(); }

 private:
  static void Run(Loop& loop, const std::atomic<bool>& stop) {
    std::mt19937_64 rng(7);
    for (int64_t serial = 1; !stop; ++serial) {
      const DemoJob job = RandomDemoJob(rng, serial);
      loop.Post(
          [job](ControlPlane& core, Time now) {
            Result<TenantId> t = core.state().FindTenant(job.tenant);
            if (!t.ok()) return Reply{404, ""};
            const Principal demo{job.tenant + "-demo", Role::kMember, *t, ""};
            return core.SubmitJob({&demo, "demo", now}, job.body, "");
          },
          [](Reply r) {
            if (r.status != 201 && r.status != 404 && r.status != 503) Log("warn", "demo submission refused", {{"reply", r.body}});
          });
      if (!SleepUnlessStopped(std::uniform_int_distribution<int>(1000, 4000)(rng), stop)) return;
    }
  }
  std::thread thread_;
};

// Reads the history file whole on a thread of its own, a second after the start and then every
// `every_s` (the start checks only its header): damage is logged as an error and shown on
// /metrics (gpupool_history_damaged), so an operator hears of it before a read meets it.
class HistoryScrubber {
 public:
  HistoryScrubber(std::string path, int64_t every_s, Metrics& metrics, const std::atomic<bool>& stop)
      : thread_([path = std::move(path), every_s, &metrics, &stop] { Run(path, every_s, metrics, stop); }) {}
  ~HistoryScrubber() { thread_.join(); }

 private:
  static void Run(const std::string& path, int64_t every_s, Metrics& metrics, const std::atomic<bool>& stop) {
    for (int64_t wait_ms = 1000; SleepUnlessStopped(wait_ms, stop); wait_ms = every_s * 1000) {
      const auto t0 = std::chrono::steady_clock::now();
      Result<HistoryScrub> r = ScrubHistoryFile(path, &stop);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (stop) return;  // a stop interrupts the read; nothing was found either way
      if (!r.ok()) {
        Log("error", "history scrub could not read the history file", {{"file", path}, {"error", r.error().message}});
      } else if (!r->damage.empty()) {
        Log("error", "history scrub: the history file is damaged",
            {{"file", path}, {"damage", r->damage}, {"next", "restore it from a backup, or --recover"}});
      } else {
        Log("info", "history scrub: clean", {{"file", path}, {"archived_jobs", std::to_string(r->archived_jobs)},
                                             {"audit_lines", std::to_string(r->audit_lines)}, {"seconds", std::to_string(s)}});
      }
      metrics.ObserveHistoryScrub(!r.ok() || !r->damage.empty(), s);
    }
  }
  std::thread thread_;
};

}  // namespace gpupool
