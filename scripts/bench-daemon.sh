#!/usr/bin/env bash
# Load benchmark of the daemon: builds, starts `gpupool serve --simulate-executor` on a large
# cluster (NODES nodes of 8 H100, four tenants sharing it) with a fresh journal, and runs
# build/bench/load_bench against it: concurrent clients submitting durable jobs.
#
# usage: scripts/bench-daemon.sh [--clients N] [--seconds S] [--nodes N] [--runs R] [--json DIR]
#                                [--rate PER_CLIENT_PER_S] [--store URL]
# --rate paces each client (an open load of N x RATE submissions/s) instead of back to back.
# Prints each run and, with --runs > 1, the medians. The daemon's peak RSS comes from /proc. After
# each run the daemon is killed with -9 and restarted on its journal; the time until it serves
# again is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
clients=16 seconds=20 nodes=1000 runs=1 json= rate=0
while [ $# -gt 0 ]; do
  case $1 in
    --clients) clients=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --store) store=$2; shift 2 ;;
    *) echo "usage: $0 [--clients N] [--seconds S] [--nodes N] [--runs R] [--json DIR] [--rate PER_CLIENT_PER_S] [--store postgresql://...?...]" >&2; exit 2 ;;
  esac
done
./scripts/build.sh > /dev/null
bin=build/src/cli/gpupool
gen=build/bench/load_bench

tmp=$(mktemp -d)
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2> /dev/null || true; wait "$daemon" 2> /dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

quarter=$((nodes * 2))  # each tenant is guaranteed a quarter of the GPUs
cat > "$tmp/config.yaml" << EOF
scheduler: {placement: fgd, tick_ms: 100}
tenants:
  - {name: research, weight: 2, quotas: {h100-80gb: {guaranteed: $quarter}}}
  - {name: product, weight: 2, quotas: {h100-80gb: {guaranteed: $quarter}}}
  - {name: vision, quotas: {h100-80gb: {guaranteed: $quarter}}}
  - {name: speech, quotas: {h100-80gb: {guaranteed: $quarter}}}
nodes:
  - {name: h100, count: $nodes, flavor: h100-80gb, gpus: 8, block: rack-a, nvlink_domain: nvl-0}
EOF

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"\
     "$(df -T "$tmp" | awk 'NR==2 {print $2}') at $tmp"
echo "cluster: $nodes nodes x 8 GPUs; $clients clients for $seconds s per run; jobs of 1 GPU for 1 s (the simulated executor ends them on its 100 ms tick)"
for run in $(seq 1 "$runs"); do
  rm -rf "$tmp/data"
  # A PostgreSQL store (its URL must have a query already): a schema of this run's own.
  store_args=()
  [ -z "${store:-}" ] || store_args=(--store "$store&gpupool_schema=bench_$$_$run")
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 "${store_args[@]}" \
    --simulate-executor 2> "$tmp/daemon.log" &
  daemon=$!
  # Serving writes: listening, bootstrapped (a PostgreSQL replica bootstraps once it leads).
  for _ in $(seq 1 200); do [ -s "$tmp/data/port" ] && [ -s "$tmp/data/admin.token" ] && break; sleep 0.05; done
  [ -s "$tmp/data/admin.token" ] || { cat "$tmp/daemon.log" >&2; exit 1; }
  echo "--- run $run"
  "$gen" --url "http://127.0.0.1:$(cat "$tmp/data/port")" --token "$(cat "$tmp/data/admin.token")" \
    --clients "$clients" --seconds "$seconds" --warmup 3 --duration-s 1 --rate "$rate" --json "$tmp/run$run.json" || true
  echo "daemon        peak RSS $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' /proc/$daemon/status)," \
       "journal $(du -sm "$tmp/data" | cut -f1) MiB"
  # Recovery: kill -9, restart on the same journal, time until it serves again.
  kill -9 "$daemon"; wait "$daemon" 2> /dev/null || true
  rm -f "$tmp/data/port"
  start=$(date +%s.%N)
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 "${store_args[@]}" \
    --simulate-executor 2> "$tmp/restart.log" &
  daemon=$!
  # Serving writes again: a PostgreSQL replica once /healthz says it leads.
  leads() { curl -sf "http://127.0.0.1:$(cat "$tmp/data/port")/healthz" | grep -qv '"role":"follower"'; }
  for _ in $(seq 1 1200); do [ -s "$tmp/data/port" ] && leads && break; sleep 0.01; done
  python3 -c "import sys; print(f'restart       after kill -9: serving in {float(sys.argv[2]) - float(sys.argv[1]):.2f} s,', end=' ')" \
    "$start" "$(date +%s.%N)"
  grep -o '"jobs":"[0-9]*"' "$tmp/restart.log" | head -1 | sed 's/"jobs":"\([0-9]*\)"/\1 jobs recovered/'
  kill "$daemon"; wait "$daemon" 2> /dev/null || true; daemon=
  [ -z "$json" ] || { mkdir -p "$json"; cp "$tmp/run$run.json" "$json/"; }
done
if [ "$runs" -gt 1 ]; then
  python3 - "$tmp" "$runs" << 'EOF'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{d}/run{i}.json")) for i in range(1, n + 1)]
med = lambda f: statistics.median(f(r) for r in runs)
print(f"--- median of {n}: {med(lambda r: r['acknowledged_per_s']):.0f} acknowledged/s, "
      f"p50 {med(lambda r: r['latency_ms']['p50']):.2f} ms, p99 {med(lambda r: r['latency_ms']['p99']):.2f} ms, "
      f"errors {sum(r['errors'] for r in runs)} in all, max pending {med(lambda r: r['pending_during_storm']['max']):.0f}")
EOF
fi
