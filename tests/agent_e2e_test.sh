#!/usr/bin/env bash
# The daemon and four node agents with fake GPUs on loopback, all real processes (issue 6):
#  - a job runs for real (a shell command) and its output comes back through `gpupool logs`,
#    with CUDA_VISIBLE_DEVICES set to the fake GPUs' UUIDs;
#  - kill -9 of an agent: its replica's shim stops it when the lease runs out, and the job runs
#    again on another node after the lease, the class's grace and a margin;
#  - XID 79 injected on a node: the node is drained and its job moves;
#  - a node whose acceptance test fails stays out of scheduling;
#  - a MIG node joins through its agent (--allow-mig-changes); a job needing a 1g slice that its
#    layout lacks runs after the scheduler re-partitions the GPU and the agent applies it, with
#    CUDA_VISIBLE_DEVICES set to the MIG UUID the agent created; the apply takes 3 s (longer
#    than the heartbeat timeout) and the node never goes unreachable meanwhile;
#  - a GPU falls off the bus under a running job: the agent's rediscovery reports it lost, the
#    node drains and the job is requeued, not failed.
# Usage: agent_e2e_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: agent_e2e_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"

# The class's grace is 1 s: a silent node's jobs are requeued once the agent's lease (2 s), that
# grace and the 1 s margin have passed.
cat > "$tmp/config.yaml" << 'EOF'
scheduler: {tick_ms: 50}
priority_classes:
  - {name: training, value: 500, preemptible: true, may_borrow: true, grace_period_s: 1, default: true}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 16}}}
nodes:
  - {name: n, count: 4, flavor: h100-80gb, gpus: 4}
EOF
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 \
  --heartbeat-interval-ms 200 --heartbeat-timeout-ms 2000 > "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"

declare -A agent_pid
# Each agent runs with a node-agent token of its own, good for its node only.
agent_token() {
  curl -sf -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d "{\"name\": \"$1\", \"role\": \"node-agent\"}" \
    "$GPUPOOL_URL/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
start_agent() {  # start_agent NODE [EXTRA FLAGS...]
  local node=$1; shift
  local token
  token=$(agent_token "$node") || fail "no node-agent token for $node"
  (umask 077; echo "$token" > "$tmp/token-$node")
  "$bin" agent --name "$node" --token-file "$tmp/token-$node" --gpus fake:4xh100-80gb --work-dir "$tmp/work-$node" --allow-root '*' \
    --fault-file "$tmp/faults-$node" --rediscover-interval-s 0.5 "$@" > "$tmp/agent-$node.log" 2>&1 &
  agent_pid[$node]=$!
  pids+=($!)
}
for n in n-0 n-1 n-2; do start_agent "$n"; done
start_agent n-3 --acceptance 'echo "bandwidth check: 12 GB/s, expected 400"; exit 1'

node_condition() { "$bin" describe node "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["condition"])'; }
condition_is() { [ "$(node_condition "$1")" = "$2" ]; }
# Nodes with no agent yet are ready from the config; an agent that passes keeps it ready.
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-n-2.log" || fail "agent n-2 did not register"
until_ok 20 condition_is n-3 unhealthy || fail "n-3 failed its acceptance test but is $(node_condition n-3)"

job_field() { "$bin" describe job "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_is() { [ "$(job_field "$1" 'd["state"]')" = "$2" ]; }
job_node() { job_field "$1" 'd["placement"][0]["node"] if d["placement"] else ""'; }
submit() {  # submit NAME GPUS -- COMMAND...: prints the job id
  local name=$1 gpus=$2; shift 3
  "$bin" submit --tenant research --name "$name" --priority-class training --flavor h100-80gb \
    --gpus "$gpus" --duration 600 -o json -- "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}

# 1. A real command, its output back through the API.
hello=$(submit hello 2 -- sh -c 'echo "hello from job $GPUPOOL_JOB on $CUDA_VISIBLE_DEVICES"')
[ -n "$hello" ] || fail "submit failed"
until_ok 20 job_is "$hello" succeeded || fail "job $hello is $(job_field "$hello" 'd["state"]'), not succeeded"
until_ok 10 sh -c "'$bin' logs $hello | grep -q 'hello from job $hello on GPU-fake-n-[0-2]-[0-3],GPU-fake-n-[0-2]-[0-3]'" ||
  fail "logs of $hello: $("$bin" logs "$hello")"
failing=$(submit failing 1 -- sh -c 'echo oops >&2; exit 3')
until_ok 20 job_is "$failing" failed || fail "job $failing should have failed"
until_ok 10 sh -c "'$bin' logs $failing --stderr | grep -q oops" || fail "stderr of $failing"

# 2. kill -9 of an agent: the replica's shim stops it when the lease runs out, and the job runs
# again elsewhere once the lease and the grace have passed.
long=$(submit long 4 -- sh -c 'while :; do sleep 0.2; done')
until_ok 20 job_is "$long" running || fail "job $long did not start"
victim=$(job_node "$long")
kill -9 "${agent_pid[$victim]}"
killed_at=$(date +%s)
until_ok 15 condition_is "$victim" unreachable || fail "$victim is $(node_condition "$victim") after kill -9 of its agent"
until_ok 15 sh -c "[ \"\$('$bin' describe job $long -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"state\"], d[\"placement\"][0][\"node\"] if d[\"placement\"] else \"\")')\" != \"running $victim\" ] && '$bin' describe job $long -o json | grep -q '\"state\": \"running\"'" ||
  fail "job $long did not run again elsewhere: $(job_field "$long" 'd["state"], d["placement"]')"
grep -q ' 1$' "$tmp/work-$victim/.gpupool/$long-0.exit" 2>/dev/null ||
  fail "the replica on $victim was not stopped by its shim (fenced): $(cat "$tmp/work-$victim/.gpupool/$long-0.exit" 2>&1)"
moved_to=$(job_node "$long")
[ "$moved_to" != "$victim" ] && [ "$moved_to" != n-3 ] || fail "job $long is on $moved_to"
echo "kill -9 of the agent of $victim: job $long running again on $moved_to after $(( $(date +%s) - killed_at )) s"

# 3. XID 79 on the node that now runs it: drained, and the job moves again.
echo "xid 0 79" > "$tmp/faults-$moved_to"
until_ok 10 condition_is "$moved_to" draining || fail "$moved_to is $(node_condition "$moved_to") after XID 79"
until_ok 15 sh -c "'$bin' describe job $long -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"state\"] == \"running\" and d[\"placement\"][0][\"node\"] not in (\"$moved_to\", \"$victim\", \"n-3\") else 1)'" ||
  fail "job $long did not move off the drained node: $(job_field "$long" 'd["state"], d["placement"]')"
echo "XID 79 on $moved_to: drained; job $long running on $(job_node "$long")"

# 4. The node that failed its acceptance test never got work.
for id in "$hello" "$failing" "$long"; do
  "$bin" describe job "$id" -o json | grep -q '"node": "n-3"' && fail "job $id was placed on n-3"
done
[ "$(node_condition n-3)" = unhealthy ] || fail "n-3 is $(node_condition n-3)"

# 5. A MIG node (3g@0 + 3g@4: GIs 1 and 2) and a job that needs a 1g slice: the scheduler
# re-partitions the idle GPU, the agent applies the layout (new GIs 3, 4, ...) and reports the
# new MIG UUIDs, and only then is the job started, on the new slice.
# The apply takes 3 s, longer than the daemon's 2 s heartbeat timeout: heartbeats must go on.
echo "mig_delay 3000" > "$tmp/faults-m-0"
"$bin" agent --name m-0 --gpus fake:1xh100-80gb:mig=3g.40gb+3g.40gb --allow-mig-changes --allow-root '*' \
  --fault-file "$tmp/faults-m-0" --work-dir "$tmp/work-m-0" > "$tmp/agent-m-0.log" 2>&1 &
pids+=($!)
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-m-0.log" || fail "agent m-0 did not register"
until_ok 10 grep -q '"fault":"mig_delay 3000"' "$tmp/agent-m-0.log" || fail "agent m-0 took no MIG delay"
small=$("$bin" submit --tenant research --name small --priority-class training --flavor h100-80gb \
  --mig-profile 1g.10gb --duration 600 -o json -- sh -c 'echo "slice $CUDA_VISIBLE_DEVICES"' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ -n "$small" ] || fail "submit of the MIG job failed"
until_ok 20 job_is "$small" succeeded || fail "MIG job $small is $(job_field "$small" 'd["state"]'), not succeeded"
grep -q '"msg":"MIG layout applied"' "$tmp/agent-m-0.log" || fail "agent m-0 applied no MIG layout"
until_ok 10 sh -c "'$bin' logs $small | grep -q '^slice MIG-fake-m-0-0-[3-9]\$'" ||
  fail "logs of MIG job $small: $("$bin" logs "$small") (want a MIG UUID the agent created)"
grep -q '"msg":"node agent silent[^"]*","node":"m-0"' "$tmp/daemon.log" &&
  fail "m-0 went silent while it applied a MIG layout"
echo "MIG job $small ran on $("$bin" logs "$small" | sed 's/^slice //') after the agent re-partitioned m-0"

# 6. A GPU falls off the bus under the running job: the agent's rediscovery (every 0.5 s here)
# reports it lost, the node drains, and the job is requeued (no healthy node is left for it).
third=$(job_node "$long")
[ -n "$third" ] || fail "job $long is not running before step 6"
echo "gpu_gone 0" > "$tmp/faults-$third"
until_ok 10 condition_is "$third" draining || fail "$third is $(node_condition "$third") after losing a GPU"
until_ok 10 job_is "$long" pending || fail "job $long is $(job_field "$long" 'd["state"]') after its GPU was lost"
grep -q '"msg":"a GPU is no longer seen: reported lost"' "$tmp/agent-$third.log" || fail "agent $third reported no lost GPU"
echo "GPU 0 of $third gone: drained; job $long requeued ($(job_field "$long" 'd["state"]'))"
echo "agent e2e ok"
