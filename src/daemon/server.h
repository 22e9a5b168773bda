// gpupool serve: one event-loop thread owns the DaemonCore; HTTP threads (cpp-httplib) hand it
// work and wait. The loop drains its queue, runs a scheduling tick when one is due, appends
// everything to the journal in one transaction (group commit), and only then answers the
// requests of that batch.
#pragma once

#include <string>

#include "core/result.h"

namespace gpupool {

struct ServeOptions {
  std::string config_path;        // YAML (daemon/config.h); empty: none
  std::string data_dir;           // default "gpupool-data"
  std::string listen;             // HOST:PORT, default 127.0.0.1:8080; port 0: any free port
  bool demo = false;              // embedded demo cluster, tenant tokens, simulated executor
  bool demo_traffic = true;       // with demo: submit a demo job every few seconds
  // Admitted jobs start at once and end after their estimate (implied by demo). Without it,
  // jobs stay admitted until an agent (issue 6) reports on them.
  bool simulate_executor = false;
  int http_threads = 64;          // handler threads; each waits for its batch to be durable
  int heartbeat_interval_ms = 1000;  // what node agents are told to keep
  int heartbeat_timeout_ms = 10000;  // a node silent this long is unreachable, its jobs requeued
  size_t max_body_bytes = 1 << 20;
};

// Runs until SIGINT or SIGTERM. Returns an error if start-up fails.
Status Serve(const ServeOptions& options);

}  // namespace gpupool
