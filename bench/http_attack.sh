#!/usr/bin/env bash
# The HTTP front end under attack and under load (issue 16 item 6). Starts `gpupool serve` with
# an agents' listener on a fresh data directory, then:
#   1. attack: build/bench/attack_bench holds IDLE idle and SLOW slow connections and streams
#      CHUNKED MiB of chunked bodies for SECONDS, probing /healthz and a node's heartbeat; the
#      daemon's RSS is sampled every 100 ms;
#   2. load: build/bench/load_bench with CLIENTS keep-alive clients submitting durable jobs.
# usage: bench/http_attack.sh [--idle 500] [--slow 500] [--chunked-mib 1024] [--seconds 30]
#                             [--clients 256] [--load-seconds 20] [--rate PER_CLIENT_PER_S]
# --seconds 0 skips the attack; --rate paces each load client (open loop; 0: back to back).
set -euo pipefail
cd "$(dirname "$0")/.."
idle=500 slow=500 chunked=1024 seconds=30 clients=256 load_seconds=20 rate=0
while [ $# -gt 0 ]; do
  case $1 in
    --idle) idle=$2; shift 2 ;;
    --slow) slow=$2; shift 2 ;;
    --chunked-mib) chunked=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --load-seconds) load_seconds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) echo "usage: $0 [--idle N] [--slow N] [--chunked-mib N] [--seconds S] [--clients N] [--load-seconds S]" >&2; exit 2 ;;
  esac
done
bin=build/src/cli/gpupool
[ -x "$bin" ] && [ -x build/bench/attack_bench ] && [ -x build/bench/load_bench ] || ./scripts/build.sh > /dev/null
tmp=$(mktemp -d)
daemon= sampler=
cleanup() {
  [ -z "$sampler" ] || kill "$sampler" 2> /dev/null || true
  if [ -n "$daemon" ]; then kill "$daemon" 2> /dev/null || true; wait "$daemon" 2> /dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
cat > "$tmp/config.yaml" << EOF2
scheduler: {placement: fgd, tick_ms: 100}
tenants:
  - {name: research, weight: 2, quotas: {h100-80gb: {guaranteed: 2000}}}
  - {name: product, weight: 2, quotas: {h100-80gb: {guaranteed: 2000}}}
  - {name: vision, quotas: {h100-80gb: {guaranteed: 2000}}}
  - {name: speech, quotas: {h100-80gb: {guaranteed: 2000}}}
nodes:
  - {name: h100, count: 1000, flavor: h100-80gb, gpus: 8}
  - {name: probe, count: 1, flavor: h100-80gb, gpus: 1}
EOF2
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 --agent-listen 127.0.0.1:0 \
  --simulate-executor 2> "$tmp/daemon.log" &
daemon=$!
for _ in $(seq 1 200); do [ -s "$tmp/data/agent-port" ] && break; sleep 0.05; done
[ -s "$tmp/data/agent-port" ] || { cat "$tmp/daemon.log" >&2; exit 1; }
api=127.0.0.1:$(cat "$tmp/data/port") agents=127.0.0.1:$(cat "$tmp/data/agent-port")
token=$(cat "$tmp/data/admin.token")
node=$(curl -s -H "Authorization: Bearer $token" "http://$api/v1/nodes" |
       python3 -c 'import json,sys; print([n["name"] for n in json.load(sys.stdin)["items"] if n["name"].startswith("probe")][0])')
rss_before=$(awk '/VmRSS/ {print $2}' /proc/$daemon/status)
( peak=0; while kill -0 $daemon 2> /dev/null; do
    r=$(awk '/VmRSS/ {print $2}' /proc/$daemon/status 2> /dev/null || echo 0); [ "${r:-0}" -gt $peak ] && peak=$r
    echo $peak > "$tmp/rss.peak"; sleep 0.1; done ) &
sampler=$!
if [ "$seconds" != 0 ]; then
echo "--- attack: $idle idle + $slow slow connections, $chunked MiB of chunked bodies, $seconds s"
build/bench/attack_bench --api "$api" --agents "$agents" --token "$token" --node "$node" --idle "$idle" --slow "$slow" \
  --chunked-mib "$chunked" --seconds "$seconds"
sleep 0.3
echo "daemon     RSS before $((rss_before / 1024)) MiB, peak during the attack $(( $(cat "$tmp/rss.peak") / 1024 )) MiB," \
     "after $(( $(awk '/VmRSS/ {print $2}' /proc/$daemon/status) / 1024 )) MiB"
curl -s "http://$api/metrics" | grep '^gpupool_http_connections' | sed 's/^/metrics    /'
fi
echo "--- load: $clients keep-alive clients for $load_seconds s, $([ "$rate" = 0 ] && echo "back to back" || echo "$rate/s each")"
build/bench/load_bench --url "http://$api" --token "$token" --clients "$clients" --seconds "$load_seconds" --warmup 3 \
  --duration-s 1 --rate "$rate"
echo "daemon     peak RSS $(awk '/VmHWM/ {printf "%.0f MiB", $2 / 1024}' /proc/$daemon/status)"
