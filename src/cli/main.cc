// gpupool: one binary, subcommands: the daemon (serve), its client verbs (get, describe, submit,
// cancel), `demo` to show the scheduler at work and `sim` to replay real traces through it.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kUsage = R"(usage: gpupool COMMAND [FLAGS]

commands:
  serve       run the control-plane daemon (REST API under /v1, /metrics, journal in SQLite)
              --demo  --config FILE.yaml  --data-dir DIR (gpupool-data)  --listen HOST:PORT
              (127.0.0.1:8080; port 0 picks a free one, written to DIR/port)  --no-demo-traffic
              --simulate-executor (jobs run for their estimate)  --http-threads N (64)
              --heartbeat-interval-ms N (1000)  --heartbeat-timeout-ms N (10000): node agents
  get         list jobs|nodes|tenants|reservations  [--tenant T] [--state S] (jobs only)
  describe    show one object: job ID | node NAME | tenant NAME
  submit      submit a job: --tenant T --name N --priority-class P [--replicas R] --flavor F
              (--gpus N | --mig-profile P | --gpu-fraction X --memory-gb G) --duration D
              (seconds, or 30m, 2h) [--reservation ID] [--idempotency-key K] -- COMMAND ARGS...
              or: submit -f JOB.yaml (the fields of the POST /v1/jobs body)
  cancel      cancel a job: ID
  reserve     book GPUs for a window: --tenant T --flavor F --gpus N --start T1 --end T2 (RFC 3339);
              --maintenance instead of --tenant for a maintenance window (admins)
  availability  --flavor F --gpus N --duration D [--after T]: earliest start;
              --flavor F --start T1 --end T2: how many GPUs can still be reserved
  logs        a job's output as its agent sent it (last 64 KiB): JOB [--replica N] [--stderr]
  usage       usage and cost: [--tenant T] [--from T1] [--to T2] [--group-by flavor,kind|none]
              (from the start of this month to now); -o csv too
              client flags: -o table|json|yaml (table)  --url URL  --token TOKEN; else
              GPUPOOL_URL, GPUPOOL_TOKEN, or url: and token: in $GPUPOOL_CONFIG or
              ~/.config/gpupool/config.yaml; exit 1 when the server refuses, 2 on usage errors
  agent       run the node agent: --server URL --token TOKEN --name NODE [--gpus nvml|fake:SPEC]
              [--work-dir DIR] [--acceptance CMD] [--fault-file PATH] (JSON log lines on stderr)
  demo        schedule a generated day of work on a small demo cluster and print what happened
              --hours N (8)  --policy fgd|bestfit|spread|firstfit  --seed N (7)  --every MIN (60)
  catalogue   list the built-in GPU models and their MIG profiles [MODEL]
  sim         trace-driven simulation:
              sim replay --jobs JOBS.csv --tenants TENANTS.csv [--policy P] [--partitioned]
                         [--capacity-scale X] [--json F] [--csv F] [--svg F]
                         [--burst FILE.yaml [--burst-budgets A,B,C]] (on-demand nodes, cost vs wait)
              sim packing --nodes NODES.csv --pods PODS.csv --policy P [--seeds 42-51]
                          [--json F] [--csv F] [--svg F]
  version     print the version
  help        print this text
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "serve") return gpupool::cli::Serve(args);
  if (cmd == "get") return gpupool::cli::Get(args);
  if (cmd == "describe") return gpupool::cli::Describe(args);
  if (cmd == "submit") return gpupool::cli::Submit(args);
  if (cmd == "cancel") return gpupool::cli::Cancel(args);
  if (cmd == "reserve") return gpupool::cli::Reserve(args);
  if (cmd == "availability") return gpupool::cli::Availability(args);
  if (cmd == "usage") return gpupool::cli::UsageReport(args);
  if (cmd == "logs") return gpupool::cli::Logs(args);
  if (cmd == "agent") return gpupool::cli::Agent(args);
  if (cmd == "demo") return gpupool::cli::Demo(args);
  if (cmd == "catalogue") return gpupool::cli::Catalogue(args);
  if (cmd == "sim") return gpupool::cli::Sim(args);
  if (cmd == "version") {
    std::cout << "gpupool 0.1.0\n";
    return 0;
  }
  std::cerr << "gpupool: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}
