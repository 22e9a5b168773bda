// gpupool serve --config FILE.yaml: the cluster a fresh data directory starts with, and the
// scheduler settings. Once the journal holds a cluster, the journal is the truth for tenants,
// classes and nodes (they are changed through the API); the scheduler settings apply on every
// start.
//
//   scheduler: {placement: fgd, tick_ms: 200, preemption: true, backfill: true,
//               pairing_window: 1000,     # placement gpupool: learn pairing from this many jobs
//               flavor_choice: order}     # or best: a job of several flavors goes where it
//                                         # scores best, not to the first with room
//   agents: {start_deadline_s: 120}  # a placement its node's agent has not started by then is
//                                    # withdrawn and the job requeued (docs/design/agent.md)
//   listen: 127.0.0.1:8080          # --listen wins
//   data_dir: /var/lib/gpupool      # --data-dir wins
//   store: postgresql://db1,db2/gpupool?target_session_attrs=read-write  # --store wins;
//                                   # default: SQLite in data_dir (store/store_url.h)
//   tls: {cert_file: /etc/gpupool/tls.pem, key_file: /etc/gpupool/tls.key}  # HTTPS; --tls-* win
//   metrics: {require_token: true}  # /metrics for cluster-admin and metrics-reader tokens only
//   priority_classes:               # optional; the defaults when absent
//     - {name: training, value: 100, preemptible: true, may_borrow: true}
//   tenants:                        # same fields as POST /v1/tenants
//     - name: research
//       weight: 2
//       quotas: {h100-80gb: {guaranteed: 16, borrow_limit: 8}}
//   prices:                         # PUT /v1/prices's fields but effective_from; all time
//     flavors: {h100-80gb: {per_gpu_hour: "2.99", on_demand_per_gpu_hour: "6.98"}}
//     bill_reserved_idle: true
//   burst:                          # optional: on-demand capacity (docs/design/burst.md)
//     provider: simulated           # or command, with create_command, delete_command,
//                                   # command_timeout_s
//     offers: {h100-80gb: {gpus_per_node: 8, per_gpu_hour: "6.98", provisioning_delay_s: 120,
//                          max_nodes: 4}}
//     tenants: {research: {flavors: [h100-80gb], max_gpus: 16, budget: "500.00",
//                          period_s: 86400, max_wait_s: 600, idle_timeout_s: 600}}
//   nodes:
//     - {name: h100, count: 4, flavor: h100-80gb, gpus: 8, mig_gpus: 0, shared_gpus: 0,
//        max_clients: 4, block: rack-a, nvlink_domain: nvl-0, labels: [zone=a]}
//     - {name: mixed, flavor: a100-80gb, gpus: 8, gpu_sharing: dynamic, max_clients: 4}
//       # dynamic: each GPU not in MIG mode is used whole or shared, switched when idle
//
// Unknown keys are errors, reported with the file and the key.
#pragma once

#include <string>

#include "accounting/report.h"
#include "auth/oidc.h"
#include "burst/settings.h"
#include "executor/slurm.h"
#include "model/state.h"
#include "scheduler/config.h"

namespace gpupool {

// executors: one node pool run by a backend other than gpupool's agents (docs/design/executors.md).
struct ExecutorSettings {
  executor::SlurmConfig slurm;                   // kind: slurm, the only kind so far
  std::map<std::string, FlavorId> gpu_flavors;   // gpu_flavors: the backend's GPU type -> flavor
};

struct DaemonConfig {
  State cluster;
  PriceList prices;  // `prices:`, journaled at bootstrap; later changed with PUT /v1/prices
  BurstSettings burst;
  SchedulerConfig scheduler;
  int tick_ms = 200;
  Duration start_deadline = Duration::Minutes(2);  // agents: start_deadline_s
  std::string listen;    // empty: not set in the file
  std::string data_dir;  // empty: not set in the file
  std::string store;     // empty: not set in the file
  std::string tls_cert, tls_key;  // empty: not set in the file
  std::string tls_client_ca;      // tls: client_ca_file; empty: not set
  bool metrics_require_token = false;  // metrics: {require_token: true}
  std::vector<OidcIssuer> oidc;        // auth: {oidc: [...]} (auth/oidc.h)
  std::vector<ExecutorSettings> executors;
};

// How large a cluster file may make the cluster, in all: a few lines of `count:` must not build
// millions of nodes. The defaults are above the largest clusters built today; labels are
// counted on every node they are copied to.
struct ConfigLimits {
  int64_t nodes = 100000;
  int64_t gpus = 800000;
  int64_t labels = 1000000;
  int64_t label_bytes = int64_t{32} << 20;
};
inline constexpr size_t kMaxLabelsPerNode = 64;   // per `nodes:` entry
inline constexpr size_t kMaxLabelBytes = 256;     // per label

Result<DaemonConfig> LoadDaemonConfig(const std::string& path);
// The same from YAML text (tests; the fuzzer passes smaller limits).
Result<DaemonConfig> ParseDaemonConfig(const std::string& yaml_text, const ConfigLimits& limits = {});

}  // namespace gpupool
