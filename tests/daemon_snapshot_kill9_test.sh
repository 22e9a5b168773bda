#!/usr/bin/env bash
# kill -9 at random moments while the daemon snapshots (issue 16 item 2): ten runs, each with
# jobs being submitted and run and a snapshot every 150 records; odd runs are killed at a random
# moment, even ones just after a snapshot started, so that kills land before, during and after
# snapshot writes and compactions. After each kill the daemon must start, and
# every job acknowledged in any run must be there.
# Usage: daemon_snapshot_kill9_test.sh GPUPOOL_BINARY [postgres]
# With `postgres` the journal, snapshots and history are in the tests' PostgreSQL
# (scripts/test-postgres.sh; a schema of this run's own) instead of SQLite files.
set -u
bin=${1:?usage: daemon_snapshot_kill9_test.sh GPUPOOL_BINARY [postgres]}
. "$(dirname "$0")/lib/e2e.sh"
store=()
if [ "${2:-}" = postgres ]; then
  pg_url=$("$(dirname "$0")/../scripts/test-postgres.sh" start) || fail "the tests' PostgreSQL did not start"
  store=(--store "$pg_url&gpupool_schema=kill9_$$")
fi
one_tenant_config "$tmp/config.yaml" 8 64
cat > "$tmp/jobs.py" << 'EOF2'
# jobs.py submit URL TOKEN PREFIX: submits until killed, printing each acknowledged job's id.
# jobs.py check URL TOKEN IDS_FILE: exits 1 and names what is missing unless every job is there.
import http.client, json, sys, urllib.parse
mode, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
if mode == "submit":
    i = 0
    while True:
        i += 1
        body = {"tenant": "a", "name": f"{sys.argv[4]}-{i}", "priority_class": "batch", "replicas": 1,
                "resources": {"flavor": "h100-80gb", "gpus": 1}, "duration_estimate_s": 1, "command": ["true"]}
        try:
            c.request("POST", "/v1/jobs", json.dumps(body), h)
            r = c.getresponse(); d = r.read()
        except Exception:
            sys.exit(0)  # the daemon was killed
        if r.status == 201:
            print(json.loads(d)["id"], flush=True)
else:
    ids = open(sys.argv[4]).read().split()
    missing = []
    for i in ids:
        c.request("GET", "/v1/jobs/" + i, headers=h)
        r = c.getresponse(); r.read()
        if r.status != 200: missing.append(i)
    if missing: sys.exit(f"{len(missing)} of {len(ids)} acknowledged jobs missing, e.g. {missing[:5]}")
    print(f"all {len(ids)} acknowledged jobs present")
EOF2
data=$tmp/data
: > "$tmp/ids"
start() {
  rm -f "$data/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$data" --listen 127.0.0.1:0 --simulate-executor \
    --snapshot-every-records 150 "${store[@]}" >> "$tmp/daemon.log" 2>&1 &
  pid=$!
  pids+=($pid)
  for _ in $(seq 200); do
    [ -s "$data/port" ] && { url="http://127.0.0.1:$(cat "$data/port")"; return 0; }
    kill -0 $pid 2>/dev/null || return 1
    sleep 0.05
  done
  fail "serve neither started nor exited in 10 s"
}
mid_write=0
for run in $(seq 10); do
  start || fail "run $run: the start after a kill -9 failed: $(tail -n 3 "$tmp/daemon.log")"
  token=$(cat "$data/admin.token")
  python3 "$tmp/jobs.py" check "$url" "$token" "$tmp/ids" > "$tmp/check.log" 2>&1 ||
    fail "run $run: acknowledged jobs lost: $(cat "$tmp/check.log")"
  python3 "$tmp/jobs.py" submit "$url" "$token" "r$run" >> "$tmp/ids" &
  submitter=$!
  if [ $((run % 2)) = 1 ]; then
    # A random moment between 0.3 and 2.3 s into the run.
    sleep "$(python3 -c "import random; random.seed($run); print(0.3 + random.random() * 2)")"
  else
    # As soon as a snapshot has started (its copy is taken, the worker encodes and writes it),
    # after a random 0-20 ms.
    seen=$(grep -c '"snapshot started"' "$tmp/daemon.log")
    for _ in $(seq 2000); do
      [ "$(grep -c '"snapshot started"' "$tmp/daemon.log")" -gt "$seen" ] && break
      sleep 0.005
    done
    sleep "0.0$((RANDOM % 20))"
  fi
  kill -9 $pid; wait $pid 2>/dev/null
  wait $submitter 2>/dev/null
  ls "$data"/*.snap.tmp > /dev/null 2>&1 && mid_write=$((mid_write + 1))
  echo "run $run: $(wc -l < "$tmp/ids") jobs acknowledged so far; snapshots: $(ls "$data" | grep -c '\.snap') file(s)"
done
start || fail "the last start failed: $(tail -n 3 "$tmp/daemon.log")"
python3 "$tmp/jobs.py" check "$url" "$token" "$tmp/ids" || fail "acknowledged jobs lost at the end"
written=$(grep -c '"snapshot written"' "$tmp/daemon.log")
[ "$written" -ge 5 ] || fail "only $written snapshots written in ten runs: the test did not exercise them"
echo "$written snapshots written, $mid_write kills left a snapshot half-written"
kill -INT $pid; wait $pid
echo "daemon snapshot kill -9 ok"
