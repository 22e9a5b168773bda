#!/usr/bin/env bash
# Replicas with fenced failover (issue 17), with real processes: three `gpupool serve` replicas
# on the tests' PostgreSQL, four node agents with fake GPUs (each given the three URLs), eight
# clients submitting with idempotency keys (through the three URLs, following the leader's
# 307s and retrying a refused submission with the same key), a ninth booking one GPU at a time
# of a future window until the window is full. The leader is killed with kill -9 at FAILOVERS
# (5) random moments, and restarted once another leads. Then:
#  - every acknowledged submission is there exactly once, and no key made two jobs;
#  - no two attempts of a job ran at once, and no two replicas on one GPU (every attempt appends
#    "JOB ATTEMPT DEVICE NANOS" to a beats file every 0.1 s, as agent_fence_test.sh checks);
#  - the window is not booked past its capacity (healthy GPUs minus guarantees), and every acknowledged booking is there;
#  - the times from each kill -9 to a replica that leads and takes a write are printed.
# Usage: daemon_failover_test.sh GPUPOOL_BINARY [FAILOVERS] [SEED]
set -u
bin=${1:?usage: daemon_failover_test.sh GPUPOOL_BINARY [FAILOVERS] [SEED]}
failovers=${2:-5}
seed=${3:-$(date +%s)}
RANDOM=$seed
. "$(dirname "$0")/lib/e2e.sh"
echo "seed $seed, $failovers failovers"
pg_url=$("$(dirname "$0")/../scripts/test-postgres.sh" start) || fail "the tests' PostgreSQL did not start"
store="$pg_url&gpupool_schema=failover_$$_$RANDOM"

cat > "$tmp/config.yaml" << 'EOF'
scheduler: {tick_ms: 100}
priority_classes:
  - {name: training, value: 500, preemptible: true, may_borrow: true, grace_period_s: 1, min_runtime_s: 0, default: true}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 2}, a100-80gb: {guaranteed: 1}}}
nodes:
  - {name: n, count: 4, flavor: h100-80gb, gpus: 1}
EOF
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
declare -A port replica_pid
urls=
for r in 1 2 3; do
  port[$r]=$(free_port)
  urls+="${urls:+,}http://127.0.0.1:${port[$r]}"
done
start_replica() {  # start_replica R
  "$bin" serve --config "$tmp/config.yaml" --store "$store" --data-dir "$tmp/data-$1" --listen "127.0.0.1:${port[$1]}" \
    --heartbeat-interval-ms 200 --heartbeat-timeout-ms 8000 --lease-ms 2000 >> "$tmp/daemon.log" 2>&1 &
  replica_pid[$1]=$!
  pids+=($!)
}
role_of() { curl -sf -m 1 "http://127.0.0.1:${port[$1]}/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["role"])' 2>/dev/null; }
leader() { for r in 1 2 3; do [ "$(role_of "$r")" = leader ] && { echo "$r"; return 0; }; done; return 1; }
for r in 1 2 3; do start_replica "$r"; done
until_ok 30 leader || fail "no replica leads"
first=$(leader)
until_ok 10 test -s "$tmp/data-$first/admin.token" || fail "the leader wrote no admin.token"
for r in 1 2 3; do until_ok 10 sh -c "[ \"\$(curl -sf http://127.0.0.1:${port[$r]}/healthz)\" != '' ]" || fail "replica $r does not answer"; done
for r in 1 2 3; do [ "$r" = "$first" ] || [ ! -e "$tmp/data-$r/admin.token" ] || fail "a follower wrote admin.token"; done
export GPUPOOL_URL="$urls" GPUPOOL_TOKEN="$(cat "$tmp/data-$first/admin.token")"
echo "replica $first leads; the others follow"
# A follower answers a write with 307 to the leader, which the CLI follows; it serves reads
# from its own copy of the state, which catches up with the leader's journal.
follower=$(( first % 3 + 1 ))
knows_leader() { curl -sf "http://127.0.0.1:${port[$follower]}/healthz" | grep -q "\"leader\":\"http://127.0.0.1:${port[$first]}\""; }
until_ok 10 knows_leader || fail "replica $follower does not name the leader"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d '{}' \
  "http://127.0.0.1:${port[$follower]}/v1/jobs")
[ "$code" = 307 ] || fail "a follower answered a write with $code, not 307"
id=$(GPUPOOL_URL="http://127.0.0.1:${port[$follower]}" "$bin" submit --tenant research --name via-follower --flavor a100-80gb \
  --gpus 1 --duration 60 -o json -- true | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
  fail "a submission through a follower's URL failed"
seen_by_follower() { curl -sf -H "Authorization: Bearer $GPUPOOL_TOKEN" "http://127.0.0.1:${port[$follower]}/v1/jobs/$id" > /dev/null; }
until_ok 5 seen_by_follower || fail "the follower does not serve job $id, which the leader acknowledged"
echo "a follower redirects writes (307, followed by the CLI) and serves reads from its copy"

for n in n-0 n-1 n-2 n-3; do
  (umask 077; "$bin" create token "$n" --role node-agent -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' > "$tmp/token-$n") || fail "no node-agent token for $n"
done
for n in n-0 n-1 n-2 n-3; do
  env -u GPUPOOL_TOKEN "$bin" agent --server "$urls" --name "$n" --token-file "$tmp/token-$n" --gpus fake:1xh100-80gb \
    --work-dir "$tmp/work-$n" --allow-root '*' --rediscover-interval-s 0 >> "$tmp/agent-$n.log" 2>&1 &
  pids+=($!)
done
for n in n-0 n-1 n-2 n-3; do until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-$n.log" || fail "agent $n did not register"; done

job_state() { "$bin" describe job "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
beats="$tmp/beats"
: > "$beats"
beat_jobs=()
for k in a b c; do
  id=$("$bin" submit --tenant research --name "beat-$k" --flavor h100-80gb --gpus 1 --duration 3600 -o json -- \
    sh -c 'a="$GPUPOOL_ATTEMPT.$$"; while :; do echo "$GPUPOOL_JOB $a $CUDA_VISIBLE_DEVICES $(date +%s%N)" >> "$0"; sleep 0.1; done' "$beats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "submit beat-$k"
  beat_jobs+=("$id")
done
for j in "${beat_jobs[@]}"; do until_ok 30 sh -c "[ \"\$('$bin' describe job $j -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"state\"])')\" = running ]" || fail "job $j did not start"; done
echo "three beating jobs run on the agents"

# The clients: each submits c<I>-<N> with key c<I>-<N> until stopped, retrying a refusal with
# the same key; an acknowledged one is written to acked-<I>. The jobs ask for an A100, which no
# node has, so they stay pending (the scheduler still looks at every one each cycle).
client() { keyed_client "$bin" "$1" 200 research a100-80gb; }
window_start=$(date -u -d '+26 hours' +%Y-%m-%dT%H:00:00Z)
window_end=$(date -u -d '+27 hours' +%Y-%m-%dT%H:00:00Z)
booker() {
  while [ ! -e "$tmp/stop" ]; do
    if out=$("$bin" reserve --tenant research --flavor h100-80gb --gpus 1 --start "$window_start" --end "$window_end" -o json 2>&1); then
      echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' >> "$tmp/booked"
    else
      echo "$out" >> "$tmp/booker.err"
    fi
    sleep 0.3
  done
}
client_pids=()
for i in 1 2 3 4 5 6 7 8; do client "$i" & client_pids+=($!); pids+=($!); done
booker & client_pids+=($!); pids+=($!)

times=()
for ((f = 1; f <= failovers; f++)); do
  sleep "$((1 + RANDOM % 3)).$((RANDOM % 10))"
  old=$(leader) || { until_ok 10 leader || fail "failover $f: no leader before the kill"; old=$(leader); }
  t0=$(date +%s%N)
  kill -9 "${replica_pid[$old]}"; wait "${replica_pid[$old]}" 2>/dev/null
  # A new leader serves: it says so and takes a write (a token of its own, which needs the journal).
  served() {
    local r; r=$(leader) || return 1
    [ "$r" != "$old" ] || return 1
    curl -sf -m 2 -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d "{\"name\": \"probe-$f\", \"role\": \"cluster-admin\"}" \
      "http://127.0.0.1:${port[$r]}/v1/tokens" > /dev/null
  }
  until_ok 20 served || fail "failover $f: no replica leads 20 s after the kill of replica $old"
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
  echo "failover $f: replica $old killed; replica $(leader) leads and takes writes after ${times[-1]} ms"
  start_replica "$old"
  until_ok 20 sh -c "[ \"\$(curl -sf http://127.0.0.1:${port[$old]}/healthz)\" != '' ]" || fail "replica $old did not come back"
done
sleep 2
touch "$tmp/stop"
for p in "${client_pids[@]}"; do wait "$p"; done
until_ok 20 leader || fail "no leader at the end"
echo "failover times (ms, sorted): $(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')"

# Every acknowledged key made one job, and no key two.
cat "$tmp"/acked-* > "$tmp/acked"
"$bin" get jobs -o json > "$tmp/jobs.json" || fail "cannot list the jobs"
python3 - "$tmp/acked" "$tmp/jobs.json" << 'EOF' || fail "acknowledged submissions are missing or doubled"
import collections, json, sys
acked = dict(line.split() for line in open(sys.argv[1]) if line.strip())
doc = json.load(open(sys.argv[2]))
items = doc["items"] if isinstance(doc, dict) else doc
by_name = collections.defaultdict(list)
for j in items:
    by_name[j["name"]].append(str(j["id"]))
missing = [k for k in acked if acked[k] not in by_name.get(k, [])]
doubled = {k: v for k, v in by_name.items() if k.startswith("c") and len(v) > 1}
print(f"{len(acked)} acknowledged submissions; {sum(1 for k in by_name if k.startswith('c'))} client jobs in the store")
if missing: print("missing:", missing[:10])
if doubled: print("doubled:", list(doubled.items())[:10])
sys.exit(1 if missing or doubled else 0)
EOF
[ "$(wc -l < "$tmp/acked")" -ge 100 ] || fail "only $(wc -l < "$tmp/acked") submissions were acknowledged"

# The window is not booked past its two GPUs (four healthy, two guaranteed), and every acknowledged booking is there.
"$bin" get reservations -o json > "$tmp/reservations.json" || fail "cannot list the reservations"
touch "$tmp/booked"
[ -s "$tmp/booked" ] || fail "no booking was acknowledged: $(sort "$tmp/booker.err" | uniq -c | sort -rn | head -3)"
python3 - "$tmp/booked" "$tmp/reservations.json" "$window_start" << 'EOF' || fail "the window is booked wrongly"
import json, sys
booked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
doc = json.load(open(sys.argv[2]))
items = doc["items"] if isinstance(doc, dict) else doc
ids = {str(r["id"]) for r in items}
gpus = sum(r["gpus"] for r in items if r.get("start") == sys.argv[3] and r.get("state", "") != "cancelled")
print(f"{len(booked)} bookings acknowledged; {gpus} GPUs of the window booked in the store")
missing = [b for b in booked if b not in ids]
if missing: print("missing bookings:", missing)
sys.exit(1 if missing or gpus > 2 or len(booked) == 0 else 0)
EOF

for j in "${beat_jobs[@]}"; do "$bin" cancel "$j" > /dev/null || fail "cancel $j"; done
sleep 1.5
python3 "$(dirname "$0")/lib/beats_overlap.py" "$beats" || fail "two attempts overlapped"
echo "failover ok"
