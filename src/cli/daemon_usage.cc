// The usage texts of the verbs built into the full binary only (serve, agent, demo, sim), kept
// apart from their code so the lean client binary can list their flags in completion and
// `gpupool help` without linking the daemon (docs/design/cli.md).
#include "cli/commands.h"

namespace gpupool::cli {

const char* const kServeUsage =
    "usage: gpupool serve [--demo] [--config FILE.yaml] [--data-dir DIR (gpupool-data)] [--recover]\n"
    "                     [--store sqlite:[DIR] | postgresql://... (sqlite: in DIR)]\n"
    "                     [--listen HOST:PORT (127.0.0.1:8080)] [--no-demo-traffic] [--simulate-executor]\n"
    "                     [--agent-listen HOST:PORT] [--http-threads N (2)]\n"
    "                     [--max-connections N (4096)] [--max-connections-per-source N (1024)]\n"
    "                     [--heartbeat-interval-ms N (1000)] [--heartbeat-timeout-ms N (10000)]\n"
    "                     [--snapshot-every-records N (20000)] [--snapshot-every-mb N (64)]\n"
    "                     [--retention-s SECONDS (3600)] [--max-finished-jobs N (20000)]\n"
    "                     [--history-scrub-s SECONDS (86400)]\n"
    "                     [--advertise-url URL (http://LISTEN)] [--lease-ms N (3000)]\n"
    "                     [--max-auth-failures N (20)] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--insecure-listen]\n"
    "                     [--metrics-require-token] [--max-token-days N (365)]\n"
    "  Runs the control-plane daemon: the REST API under /v1, /metrics, the web console at /, the\n"
    "  journal in SQLite under DIR. --listen with port 0 picks a free port, written to DIR/port.\n"
    "  A damaged journal stops the start; --recover keeps its records up to the last intact one\n"
    "  and logs how many it dropped (the damaged files are kept, renamed). The state is snapshot\n"
    "  to DIR/snapshot-SEQ.snap every N records or N MB of journal (0: never), and the journal\n"
    "  keeps only what came after; a start loads the snapshot and replays the rest. Finished jobs\n"
    "  leave memory --retention-s after they finished (the oldest sooner, past --max-finished-jobs\n"
    "  in memory), and are served from the journal's history (DIR/journal-history.db), which is\n"
    "  read whole in the background a second after the start and every --history-scrub-s (0:\n"
    "  never): damage is logged and shown as gpupool_history_damaged on /metrics.\n"
    "  --demo runs an embedded demo cluster; --simulate-executor runs jobs for their estimate;\n"
    "  the heartbeat flags are for node agents. --agent-listen gives the agents a listener of\n"
    "  their own (port 0: DIR/agent-port) that API traffic cannot crowd out; --http-threads are\n"
    "  I/O threads; past a connection limit a client gets 429, and so does an address whose\n"
    "  requests failed authentication more than --max-auth-failures times in 10 s (0: no limit),\n"
    "  until the 10 s are over. --store postgresql://HOST/DB keeps\n"
    "  the journal, snapshots and history in PostgreSQL instead (schema gpupool, or\n"
    "  ?gpupool_schema=NAME). Several serve processes on one PostgreSQL store are replicas: one\n"
    "  leads (a lease of --lease-ms, renewed every third of it), the others follow its journal,\n"
    "  serve reads and answer writes with 307 to the leader's --advertise-url; one that another\n"
    "  took over from exits with status 1 (run it again to follow). /healthz says which it is.\n"
    "  --tls-cert and --tls-key (PEM; re-read on SIGHUP) serve HTTPS on every listener; without\n"
    "  them the daemon listens only on loopback addresses unless --insecure-listen is given.\n"
    "  --tls-client-ca FILE: node agents may authenticate with a client certificate this CA\n"
    "  signed instead of a token; its DNS name (or CN) names the node it acts for.\n"
    "  --metrics-require-token: /metrics answers cluster-admin and metrics-reader tokens only.\n"
    "  API tokens expire after expires_in_days (default 90, at most --max-token-days); the\n"
    "  bootstrap admin.token does not.\n"
    "  docs/design/daemon.md.\n";

const char* const kAgentUsage =
    "usage: gpupool agent --server URL --token-file FILE --name NODE [--gpus nvml | --gpus fake:SPEC]\n"
    "                     [--work-dir DIR (./gpupool-agent-NODE)] [--state-dir DIR (WORK/.gpupool)]\n"
    "                     [--cgroup-parent DIR] [--users FILE] [--allow-root TENANT,...]\n"
    "                     [--device-nodes /dev/nvidia%d] [--acceptance CMD]\n"
    "                     [--fault-file PATH (fake GPUs only)] [--allow-mig-changes]\n"
    "                     [--rediscover-interval-s SECONDS (30)] [--ca FILE]\n"
    "                     [--client-cert FILE --client-key FILE]\n"
    "  --allow-mig-changes lets the daemon's MIG layouts be applied (GPU instances destroyed and\n"
    "  created) on GPUs none of this agent's replicas use; without it they are refused and "
    "reported\n"
    "  MIG layouts are applied off the heartbeat path; no replica starts on a GPU meanwhile\n"
    "  --rediscover-interval-s re-reads the GPUs that often (and after a failed replica exit): a\n"
    "  lost GPU or a MIG device gone under a replica is reported as a GPU failure (the node is\n"
    "  drained and its jobs requeued), changed UUIDs and layouts are reported; 0 turns it off\n"
    "  --token-file (mode 0600) keeps the token out of argv and the environment; --server and the\n"
    "  token default to GPUPOOL_URL and GPUPOOL_TOKEN (or the config file); --token still works\n"
    "  --users maps tenants to the users their jobs run as ('TENANT USER[:GROUP]' lines, '*' for\n"
    "  the rest); an agent running as root runs a tenant as root only if --allow-root lists it\n"
    "  --cgroup-parent: where each replica gets its cgroup (default: a gpupool-NODE cgroup on the\n"
    "  cgroup v2 mount); --device-nodes hides the device nodes of GPUs a job was not granted\n"
    "  Replicas run under shims that stop them when the daemon's lease is not renewed\n"
    "  --server may list several URLs (comma-separated) of a daemon's replicas; with https the\n"
    "  daemon's certificate is verified against the system's and --ca FILE (or GPUPOOL_CA)\n"
    "  --client-cert and --client-key (PEM; the key of mode 0600): authenticate with a client\n"
    "  certificate the daemon's --tls-client-ca signed, naming this node, instead of a token\n";

const char* const kDemoUsage =
    "usage: gpupool demo [--hours H (8)] [--policy P (gpupool)] [--seed S (7)] [--every MINUTES (60)]\n"
    "  Schedules a generated day of work on a small demo cluster and prints what happened.\n";

#define GP_REPLAY_USAGE                                                                               \
  "usage: gpupool sim replay --jobs JOBS.csv --tenants TENANTS.csv [--policy gpupool] [--partitioned]\n" \
  "                          [--capacity-scale X] [--json F] [--csv F] [--svg F] [--no-estimates]\n" \
  "                          [--no-timing] [--burst FILE.yaml [--burst-budgets A,B,C]]\n"            \
  "                          [--queue-policy fifo|las|srsf|sjf] [--starvation-after-h H (168)]\n"    \
  "                          [--estimate-noise F (1) [--seed N (1)]] [--las-thresholds-gpu-h A,B,..]\n" \
  "  Replays a trace through the scheduler with a virtual clock: per-tenant JCT and waits, pooled\n" \
  "  or (--partitioned) each tenant alone on its guarantee; --queue-policy orders each tenant's\n"   \
  "  queue; --estimate-noise F draws each estimate within F x of the truth. docs/design/simulator.md.\n"
#define GP_PACKING_USAGE                                                                              \
  "usage: gpupool sim packing --nodes NODES.csv --pods PODS.csv [--policy NAME|all (gpupool)]\n"     \
  "                           [--seeds 42-51] [--json F] [--csv F] [--svg F] [--offline]\n"          \
  "                           [--threads 2] [--published SUMMARY.csv] [--no-timing]\n"               \
  "  The FGD paper's packing experiment through the daemon's scheduler: unallocated GPU % by\n"    \
  "  arrived workload per placement policy, beside the published figures. --policy takes a\n"      \
  "  comma-separated list of placement policies; all: the paper's six (random, dotprod,\n"         \
  "  clustering, packing, bestfit_host, fgd) and gpupool. --offline adds a hindsight reference\n" \
  "  (slow: four runs a seed). docs/design/simulator.md.\n"

const char* const kReplayUsage = GP_REPLAY_USAGE;
const char* const kPackingUsage = GP_PACKING_USAGE;
const char* const kSimUsage = GP_REPLAY_USAGE GP_PACKING_USAGE;

}  // namespace gpupool::cli
