#!/usr/bin/env bash
# The node agent owns and fences its replicas (issue 15), with real processes and fake GPUs:
#  - kill -9 of an agent and a restart: the new agent adopts the replica (no second attempt);
#  - SIGSTOP of an agent past its lease: the replica's shim stops it by itself, and only then
#    does the daemon start another attempt (elsewhere); SIGCONT changes nothing;
#  - SIGSTOP of the daemon past the lease: every replica is fenced by its shim; the jobs run
#    again once the daemon does;
#  - a drain of a job's node while the job ignores SIGTERM through its grace: its next attempt
#    starts on another node only once the old one is gone (DESIGN.md §4);
#  - ROUNDS (20) randomised rounds of kill -9 and restart of an agent, SIGSTOP/SIGCONT of one,
#    kill -9 and restart of the daemon, SIGSTOP/SIGCONT of it, and a drain and uncordon of a
#    job's node, over two jobs on three one-GPU nodes.
# Every attempt appends "JOB ATTEMPT DEVICE NANOS" to a beats file every 0.1 s; at the end no two
# attempts of a job, and no two jobs on one GPU, may have beaten in overlapping intervals.
# Usage: agent_fence_test.sh GPUPOOL_BINARY [ROUNDS] [SEED]
set -u
bin=${1:?usage: agent_fence_test.sh GPUPOOL_BINARY [ROUNDS] [SEED]}
rounds=${2:-20}
seed=${3:-$(date +%s)}
RANDOM=$seed
. "$(dirname "$0")/lib/e2e.sh"
echo "seed $seed, $rounds rounds"

cat > "$tmp/config.yaml" << 'EOF'
scheduler: {tick_ms: 50}
priority_classes:
  - {name: training, value: 500, preemptible: true, may_borrow: true, grace_period_s: 1, min_runtime_s: 0, default: true}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 3}}}
nodes:
  - {name: n, count: 3, flavor: h100-80gb, gpus: 1}
EOF
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
daemon_pid=
start_daemon() {
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen "127.0.0.1:$port" \
    --heartbeat-interval-ms 200 --heartbeat-timeout-ms 1500 >> "$tmp/daemon.log" 2>&1 &
  daemon_pid=$!
  pids+=($!)
  until_ok 20 curl -sf "http://127.0.0.1:$port/healthz" || fail "daemon did not start"
}
start_daemon
export GPUPOOL_URL="http://127.0.0.1:$port" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"

declare -A agent_pid
for n in n-0 n-1 n-2; do
  (umask 077; curl -sf -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d "{\"name\": \"$n\", \"role\": \"node-agent\"}" \
    "$GPUPOOL_URL/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' > "$tmp/token-$n") ||
    fail "no node-agent token for $n"
done
start_agent() {  # start_agent NODE
  env -u GPUPOOL_TOKEN "$bin" agent --name "$1" --token-file "$tmp/token-$1" --gpus fake:1xh100-80gb \
    --work-dir "$tmp/work-$1" --allow-root '*' --rediscover-interval-s 0 >> "$tmp/agent-$1.log" 2>&1 &
  agent_pid[$1]=$!
  pids+=($!)
}
for n in n-0 n-1 n-2; do start_agent "$n"; done
for n in n-0 n-1 n-2; do until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-$n.log" || fail "agent $n did not register"; done

job_field() { "$bin" describe job "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_running() { [ "$(job_field "$1" 'd["state"]')" = running ]; }
job_node() { job_field "$1" 'd["placement"][0]["node"] if d["placement"] else ""'; }
beats="$tmp/beats"
: > "$beats"
submit() {
  "$bin" submit --tenant research --name "beat-$1" --flavor h100-80gb --gpus 1 --duration 3600 -o json -- \
    sh -c 'trap "" TERM; a="$GPUPOOL_ATTEMPT.$$"; while :; do echo "$GPUPOOL_JOB $a $CUDA_VISIBLE_DEVICES $(date +%s%N)" >> "$0"; sleep 0.1; done' "$beats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
jobs=($(submit a) $(submit b))
for j in "${jobs[@]}"; do until_ok 20 job_running "$j" || fail "job $j did not start"; done
attempts() { awk -v j="$1" '$1 == j {print $2}' "$beats" | sort -u | wc -l; }

# 1. kill -9 of the agent and a restart within the lease: the replica is adopted, not run twice.
j=${jobs[0]}
node=$(job_node "$j")
kill -9 "${agent_pid[$node]}"; wait "${agent_pid[$node]}" 2>/dev/null
sleep 0.3
start_agent "$node"
until_ok 10 grep -q '"msg":"found a replica an earlier agent started".*"running":true' "$tmp/agent-$node.log" ||
  fail "the restarted agent of $node did not find its replica"
sleep 2
# Under a loaded machine the restart may come after the 1.5 s lease: then the shim fenced the
# replica and the job was requeued, which is just as safe (the check at the end proves it).
if grep -q '"fenced":true\|(fenced)' "$tmp/agent-$node.log"; then
  echo "kill -9 and restart of the agent of $node: the restart came after the lease; the replica was fenced"
else
  job_running "$j" && [ "$(job_node "$j")" = "$node" ] || fail "job $j left $node after a quick agent restart"
  [ "$(attempts "$j")" = 1 ] || fail "job $j has $(attempts "$j") attempts after a quick agent restart"
  echo "kill -9 and restart of the agent of $node: replica adopted, still one attempt"
fi

# 2. SIGSTOP past the lease (1.5 s) and the grace (1 s): the shim stops the replica, the daemon
# starts the next attempt only after that.
until_ok 30 job_running "$j" || fail "job $j is not running before step 2"
node=$(job_node "$j")
stale=$(awk -v j="$j" '$1 == j {a=$2} END {print a}' "$beats")
kill -STOP "${agent_pid[$node]}"
until_ok 15 sh -c "'$bin' describe job $j -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"state\"] == \"running\" and d[\"placement\"][0][\"node\"] != \"$node\" else 1)'" ||
  { kill -CONT "${agent_pid[$node]}"; fail "job $j did not move off $node while its agent was stopped"; }
sleep 1
kill -CONT "${agent_pid[$node]}"
last_stale=$(awk -v j="$j" -v a="$stale" '$1 == j && $2 == a {t=$4} END {print t}' "$beats")
first_new=$(awk -v j="$j" -v a="$stale" '$1 == j && $2 != a && !seen {t=$4; seen=1} END {print t}' "$beats")
[ -n "$first_new" ] && [ "$last_stale" -lt "$first_new" ] ||
  fail "the stale attempt beat at $last_stale, the new one from $first_new"
echo "SIGSTOP of the agent of $node: the stale replica stopped $(( (first_new - last_stale) / 1000000 )) ms before the next attempt began"

# 2b. Drain of the job's node. The job ignores SIGTERM, so its replica beats on through the 1 s
# grace until SIGKILL; the daemon requeues it at once and places it on another node, which is
# told to start it only once the old node reports the replica gone.
until_ok 30 job_running "$j" || fail "job $j is not running before step 2b"
node=$(job_node "$j")
stale=$(awk -v j="$j" '$1 == j {a=$2} END {print a}' "$beats")
"$bin" drain "$node" > /dev/null || fail "drain $node"
until_ok 15 sh -c "'$bin' describe job $j -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"state\"] == \"running\" and d[\"placement\"][0][\"node\"] != \"$node\" else 1)'" ||
  fail "job $j did not run again off the drained $node"
"$bin" uncordon "$node" > /dev/null || fail "uncordon $node"
sleep 0.5
last_stale=$(awk -v j="$j" -v a="$stale" '$1 == j && $2 == a {t=$4} END {print t}' "$beats")
# The first beat of an attempt that began after the drained one (not of those before it).
first_new=$(awk -v j="$j" -v a="$stale" '$1 == j && $2 == a && !t0 {t0=$4} $1 == j && $2 != a && t0 && $4 > t0 && !seen {t=$4; seen=1} END {print t}' "$beats")
[ -n "$first_new" ] && [ "$last_stale" -lt "$first_new" ] ||
  fail "drain: the old attempt beat until $last_stale, the new one from $first_new"
echo "drain of $node: the old attempt (deaf to SIGTERM) stopped $(( (first_new - last_stale) / 1000000 )) ms before the next began elsewhere"

# 3. SIGSTOP of the daemon past the lease and the grace: no agent can renew its lease, so every
# shim stops its replica; once the daemon runs again the jobs run again, one attempt at a time
# (the check at the end).
fenced_logs() { cat "$tmp"/agent-n-*.log | grep -c '"fenced":true\|(fenced)' || true; }
fenced_before=$(fenced_logs)
declare -A attempts_before
for k in "${jobs[@]}"; do attempts_before[$k]=$(attempts "$k"); done
kill -STOP "$daemon_pid"
sleep 3
kill -CONT "$daemon_pid"
more_attempts() { [ "$(attempts "$1")" -gt "${attempts_before[$1]}" ] && job_running "$1"; }
for k in "${jobs[@]}"; do
  until_ok 30 more_attempts "$k" || fail "job $k did not run a new attempt after SIGSTOP of the daemon"
done
[ "$(fenced_logs)" -gt "$fenced_before" ] || fail "no replica was fenced while the daemon was stopped"
echo "SIGSTOP of the daemon for 3 s: the replicas were fenced; both jobs run again"

# 4. Randomised rounds.
for ((round = 1; round <= rounds; round++)); do
  j=${jobs[$((RANDOM % 2))]}
  node=$(job_node "$j")
  [ -n "$node" ] || node=n-$((RANDOM % 3))
  case $((RANDOM % 5)) in
    0) pause=$((RANDOM % 30))
       echo "round $round: kill -9 of the agent of $node, restart after 0.$(printf %02d $pause)0 s"
       kill -9 "${agent_pid[$node]}"; wait "${agent_pid[$node]}" 2>/dev/null; sleep "0.$(printf %02d $pause)"; start_agent "$node" ;;
    1) pause=$((5 + RANDOM % 40))
       echo "round $round: SIGSTOP of the agent of $node for $((pause / 10)).$((pause % 10)) s"
       kill -STOP "${agent_pid[$node]}"; sleep "$((pause / 10)).$((pause % 10))"; kill -CONT "${agent_pid[$node]}" ;;
    2) pause=$((RANDOM % 10))
       echo "round $round: kill -9 of the daemon, restart after 0.${pause} s"
       kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; sleep "0.$pause"; start_daemon ;;
    3) pause=$((5 + RANDOM % 25))
       echo "round $round: SIGSTOP of the daemon for $((pause / 10)).$((pause % 10)) s"
       kill -STOP "$daemon_pid"; sleep "$((pause / 10)).$((pause % 10))"; kill -CONT "$daemon_pid" ;;
    4) pause=$((RANDOM % 20))
       echo "round $round: drain of $node, uncordon after $((pause / 10)).$((pause % 10)) s"
       "$bin" drain "$node" > /dev/null; sleep "$((pause / 10)).$((pause % 10))"; "$bin" uncordon "$node" > /dev/null ;;
  esac
  for k in "${jobs[@]}"; do until_ok 30 job_running "$k" || fail "round $round: job $k is not running again"; done
  sleep 0.5
done

for k in "${jobs[@]}"; do "$bin" cancel "$k" > /dev/null || fail "cancel $k"; done
sleep 1.5
python3 "$(dirname "$0")/lib/beats_overlap.py" "$beats" || fail "two attempts overlapped"
echo "agent fence ok"
