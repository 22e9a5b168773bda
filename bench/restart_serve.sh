#!/usr/bin/env bash
# restart_serve.sh DIR [RUNS]: how long `gpupool serve` takes to serve again after kill -9, on a
# data directory with a long history (issue 16 item 2; docs/benchmarks.md, "Restart and memory
# after 1,000,000 jobs"). Make DIR with `build/bench/history_bench fill DIR 1000000 20000 60`.
#
# Each run starts the daemon on DIR, waits until it serves (/healthz, then an authenticated
# GET /v1/jobs?limit=1), submits a job (acknowledged, so durable), kills the daemon with -9, and
# times the restart until it serves again and shows that job. Prints each run, the median, and
# the RSS after the restart. Passes or fails on nothing but a daemon that does not come back.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: bench/restart_serve.sh DIR [RUNS]}
runs=${2:-3}
bin=${GPUPOOL:-build/src/cli/gpupool-full}
token=$(cat "$dir/admin.token")
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2> /dev/null || true' EXIT

now() { date +%s.%N; }
start() {
  rm -f "$dir/port"
  "$bin" serve --data-dir "$dir" --listen 127.0.0.1:0 --no-demo-traffic >> "$dir/serve.log" 2>&1 &
  pid=$!
}
# Waits until the daemon answers an authenticated read; prints nothing, fails after 60 s.
ready() {
  local deadline=$(( $(date +%s) + 60 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if [ -s "$dir/port" ]; then
      local url="http://127.0.0.1:$(cat "$dir/port")"
      if curl -sf -o /dev/null "$url/healthz" &&
         curl -sf -o /dev/null -H "Authorization: Bearer $token" "$url/v1/jobs?limit=1"; then
        return 0
      fi
    fi
    sleep 0.005
  done
  echo "the daemon did not serve within 60 s; see $dir/serve.log" >&2
  return 1
}

times=()
for run in $(seq 1 "$runs"); do
  start
  ready
  url="http://127.0.0.1:$(cat "$dir/port")"
  name="restart-$run-$$"
  curl -sf -o /dev/null -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    -d "{\"tenant\": \"research\", \"name\": \"$name\", \"priority_class\": \"batch\", \"replicas\": 1,
         \"resources\": {\"flavor\": \"h100-80gb\", \"gpus\": 1}, \"duration_estimate_s\": 60,
         \"command\": [\"true\"]}" "$url/v1/jobs"
  kill -9 "$pid"
  wait "$pid" 2> /dev/null || true
  t0=$(now)
  start
  ready
  t=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }')
  url="http://127.0.0.1:$(cat "$dir/port")"
  curl -sf -H "Authorization: Bearer $token" "$url/v1/jobs?limit=20" | grep -q "\"$name\"" ||
    { echo "run $run: the acknowledged job $name is missing after the restart" >&2; exit 1; }
  rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
  printf 'run %d: kill -9, restart, serving again in %.3f s (RSS %s MiB); the acknowledged job is there\n' \
    "$run" "$t" "$rss"
  times+=("$t")
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  pid=
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
printf 'median of %d: %.3f s (%s, %s)\n' "$runs" "$median" "$(du -sh "$dir" | cut -f1)" "$dir"
