// `gpupool serve`: flags to ServeOptions; the daemon itself is daemon/server.cc.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "daemon/server.h"

namespace gpupool::cli {

int Serve(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"config", "data-dir", "listen", "demo", "no-demo-traffic", "http-threads",
                                         "simulate-executor", "heartbeat-interval-ms", "heartbeat-timeout-ms"},
                                  {"demo", "no-demo-traffic", "simulate-executor"});
  if (!args.ok()) {
    std::cerr << "gpupool serve: " << args.error().message << "\n";
    return 2;
  }
  ServeOptions o;
  o.config_path = args->Str("config", "");
  o.data_dir = args->Str("data-dir", "");
  o.listen = args->Str("listen", "");
  o.demo = args->Has("demo");
  o.demo_traffic = !args->Has("no-demo-traffic");
  o.simulate_executor = args->Has("simulate-executor");
  Result<int64_t> threads = args->Int("http-threads", 64, 1, 1024);
  if (!threads.ok()) {
    std::cerr << "gpupool serve: " << threads.error().message << "\n";
    return 2;
  }
  o.http_threads = static_cast<int>(*threads);
  Result<int64_t> interval = args->Int("heartbeat-interval-ms", 1000, 50, 600000);
  Result<int64_t> timeout = args->Int("heartbeat-timeout-ms", 10000, 100, 3600000);
  if (!interval.ok() || !timeout.ok()) {
    std::cerr << "gpupool serve: " << (interval.ok() ? timeout : interval).error().message << "\n";
    return 2;
  }
  if (*timeout <= *interval) {
    std::cerr << "gpupool serve: --heartbeat-timeout-ms must be longer than --heartbeat-interval-ms\n";
    return 2;
  }
  o.heartbeat_interval_ms = static_cast<int>(*interval);
  o.heartbeat_timeout_ms = static_cast<int>(*timeout);
  const Status s = gpupool::Serve(o);
  if (!s.ok()) {
    std::cerr << "gpupool serve: " << s.error().message << "\n";
    return 1;
  }
  return 0;
}

}  // namespace gpupool::cli
