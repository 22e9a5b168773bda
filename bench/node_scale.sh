#!/usr/bin/env bash
# How `gpupool serve` scales with the fleet (issue 16 item 8): for each node count, a cold start
# that bootstraps a configuration with that many 8-GPU nodes (a fresh data directory), then a
# restart that replays the journal it wrote; the time until /healthz answers and the peak RSS
# (/usr/bin/time -v) of each. Usage: bench/node_scale.sh GPUPOOL_BINARY [COUNTS...]
set -u
bin=${1:?usage: node_scale.sh GPUPOOL_BINARY [COUNTS...]}
shift
counts=${*:-16250 32500 65000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
run() {  # run LABEL: starts serve, waits for /healthz, stops it; prints seconds and peak RSS
  local t0 t1 pid
  t0=$(date +%s%N)
  /usr/bin/time -v -o "$tmp/time" "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" \
    --listen "127.0.0.1:$port" > "$tmp/log" 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/healthz" > /dev/null; do
    kill -0 "$pid" 2> /dev/null || { echo "serve died: $(tail -n 3 "$tmp/log")"; return 1; }
    sleep 0.05
  done
  t1=$(date +%s%N)
  pkill -INT -P "$pid"; wait "$pid"  # /usr/bin/time ignores SIGINT: its child gets it
  printf '%-8s %7s nodes: %6.2f s to /healthz, peak RSS %4d MB\n' "$1" "$n" \
    "$(echo "($t1 - $t0) / 1000000000" | bc -l)" "$(( $(awk '/Maximum resident/ {print $6}' "$tmp/time") / 1024 ))"
}
for n in $counts; do
  rm -rf "$tmp/data"
  cat > "$tmp/config.yaml" << YAML
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 8}}}
nodes:
  - {name: n, count: $n, flavor: h100-80gb, gpus: 8}
YAML
  run bootstrap || exit 1
  run restart || exit 1
done
