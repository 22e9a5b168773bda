#!/usr/bin/env bash
# Issue 21 item 1 through real processes: the daemon and node agents with fake GPUs on loopback.
#  - a fraction on a node with gpu_sharing: dynamic switches one idle GPU to shared use (GET
#    /v1/nodes shows it), and runs through the agent with that GPU's UUID;
#  - a job of no GPU (gpus: 0, cpu_milli) runs beside them with CUDA_VISIBLE_DEVICES empty;
#  - a job that accepts a100-80gb then h100-80gb runs on h100 while the a100 node is full, and
#    says so (resources.flavor) beside the list it accepts;
#  - kill -9 of the daemon: the restart replays the switch and the chosen flavor exactly (the
#    journal);
#  - SIGSTOP of the dynamic node's agent past the heartbeat timeout: its jobs are requeued, not
#    lost; after SIGCONT they run there again, on a shared GPU and on the flavor chosen before.
# The scheduler runs placement gpupool with flavor_choice best, and the fraction asks for CPU,
# so the node-scored stranding term, host levels and the probing of flavors by score are the
# code under kill -9 and SIGSTOP.
# Usage: agent_flex_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: agent_flex_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"

cat > "$tmp/config.yaml" << 'EOF'
scheduler: {tick_ms: 50, placement: gpupool, flavor_choice: best}
priority_classes:
  - {name: training, value: 500, preemptible: true, may_borrow: true, grace_period_s: 1, default: true}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 8}, a100-80gb: {guaranteed: 2}}}
nodes:
  - {name: flex, flavor: h100-80gb, gpus: 4, gpu_sharing: dynamic, max_clients: 4, cpu_milli: 16000, memory_mib: 65536}
  - {name: a, flavor: a100-80gb, gpus: 2}
EOF
serve() {  # serve [PORT]: the first start picks a port, a restart keeps it for the agents
  rm -f "$tmp/data/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen "127.0.0.1:${1:-0}" \
    --heartbeat-interval-ms 200 --heartbeat-timeout-ms 4000 >> "$tmp/daemon.log" 2>&1 &
  daemon=$!
  pids+=($daemon)
  until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
  export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"
}
serve
agent_token() {
  curl -sf -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d "{\"name\": \"$1\", \"role\": \"node-agent\"}" \
    "$GPUPOOL_URL/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
start_agent() {  # start_agent NODE GPUS
  local token
  token=$(agent_token "$1") || fail "no node-agent token for $1"
  (umask 077; echo "$token" > "$tmp/token-$1")
  "$bin" agent --name "$1" --token-file "$tmp/token-$1" --gpus "fake:$2" --work-dir "$tmp/work-$1" --allow-root '*' \
    > "$tmp/agent-$1.log" 2>&1 &
  pids+=($!)
  agent_pid=$!
}
start_agent flex 4xh100-80gb
flex_pid=$agent_pid
start_agent a 2xa100-80gb
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-flex.log" || fail "agent flex did not register"
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-a.log" || fail "agent a did not register"

job_field() { "$bin" describe job "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_is() { [ "$(job_field "$1" 'd["state"]')" = "$2" ]; }
submit_file() {  # submit_file YAML: prints the job id
  printf '%s\n' "$1" > "$tmp/job.yaml"
  "$bin" submit -f "$tmp/job.yaml" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
devices() {  # the flex node's GPUs: index:mode:dynamic, one per line
  "$bin" describe node flex -o json | python3 -c '
import json,sys
for d in json.load(sys.stdin)["devices"]: print("%d:%s:%s" % (d["index"], d["mode"], d.get("dynamic", False)))'
}

# 1. A fraction: one idle dynamic GPU switches to shared, and the job runs on its UUID.
frac=$(submit_file 'tenant: research
name: frac
resources: {flavor: h100-80gb, gpu_fraction: 0.5, memory_gb: 10}
cpu_milli: 1000
duration_estimate_s: 600
command: [sh, -c, "echo frac on $CUDA_VISIBLE_DEVICES; sleep 300"]')
[ -n "$frac" ] || fail "fraction submit failed"
until_ok 20 job_is "$frac" running || fail "fraction $frac is $(job_field "$frac" 'd["state"]')"
gpu=$(job_field "$frac" 'd["placement"][0]["gpus"][0]["gpu"]')
until_ok 10 sh -c "'$bin' logs $frac | grep -q 'frac on GPU-fake-flex-$gpu'" || fail "logs of $frac: $("$bin" logs "$frac")"
devices | grep -qx "$gpu:shared:True" || fail "GPU $gpu of flex is not shared: $(devices | tr '\n' ' ')"
[ "$(devices | grep -c ':whole:True')" = 3 ] || fail "the other GPUs should stay whole: $(devices | tr '\n' ' ')"
echo "a fraction switched dynamic GPU $gpu to shared and ran on GPU-fake-flex-$gpu"

# 2. A job of no GPU: CPU only, no device visible.
cpu=$(submit_file 'tenant: research
name: cpu-only
resources: {flavor: h100-80gb, gpus: 0}
cpu_milli: 2000
duration_estimate_s: 60
command: [sh, -c, "echo cpu-only sees [$CUDA_VISIBLE_DEVICES]"]')
until_ok 20 job_is "$cpu" succeeded || fail "cpu-only job $cpu is $(job_field "$cpu" 'd["state"]')"
until_ok 10 sh -c "'$bin' logs $cpu | grep -qF 'cpu-only sees []'" || fail "logs of $cpu: $("$bin" logs "$cpu")"
echo "a job of no GPU ran with no device visible"

# 3. Two flavors by preference: a100 is full, so h100.
fill=$("$bin" submit --tenant research --name fill --flavor a100-80gb --gpus 2 --duration 600 -o json -- sleep 300 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
until_ok 20 job_is "$fill" running || fail "a100 filler $fill is $(job_field "$fill" 'd["state"]')"
either=$("$bin" submit --tenant research --name either --flavor a100-80gb,h100-80gb --gpus 2 --duration 600 -o json \
  -- sh -c 'echo either on $CUDA_VISIBLE_DEVICES; sleep 300' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
until_ok 20 job_is "$either" running || fail "two-flavor job $either is $(job_field "$either" 'd["state"]')"
[ "$(job_field "$either" 'd["resources"]["flavor"]')" = h100-80gb ] || fail "$either: $(job_field "$either" 'd')"
[ "$(job_field "$either" '",".join(d["resources"]["flavors"])')" = "a100-80gb,h100-80gb" ] || fail "$either lost its list"
[ "$(job_field "$either" 'd["placement"][0]["node"]')" = flex ] || fail "$either not on flex"
until_ok 10 sh -c "'$bin' logs $either | grep -q 'either on GPU-fake-flex-'" || fail "logs of $either: $("$bin" logs "$either")"
echo "a job accepting a100-80gb,h100-80gb ran on h100 while a100 was full"

# 4. kill -9 of the daemon: the switch and the chosen flavor come back from the journal.
before=$(devices; job_field "$either" 'd["resources"]["flavor"], d["placement"]')
port=$(cat "$tmp/data/port")
kill -9 "$daemon"; wait "$daemon" 2>/dev/null
serve "$port"
after=$(devices; job_field "$either" 'd["resources"]["flavor"], d["placement"]')
[ "$before" = "$after" ] || fail "after kill -9 and a restart: $after, before: $before"
echo "kill -9 of the daemon: the restart replayed the switch and the chosen flavor"

# 5. The flex agent stopped past the heartbeat timeout (4 s): its jobs go back to the queue, and
# run there again once it answers.
kill -STOP "$flex_pid"
until_ok 30 job_is "$frac" pending || fail "fraction $frac is $(job_field "$frac" 'd["state"]') with its agent stopped"
until_ok 10 job_is "$either" pending || fail "$either is $(job_field "$either" 'd["state"]') with its agent stopped"
kill -CONT "$flex_pid"
until_ok 30 job_is "$frac" running || fail "fraction $frac is $(job_field "$frac" 'd["state"]') after SIGCONT"
until_ok 30 job_is "$either" running || fail "$either is $(job_field "$either" 'd["state"]') after SIGCONT"
[ "$(job_field "$either" 'd["resources"]["flavor"]')" = h100-80gb ] || fail "$either changed flavor: $(job_field "$either" 'd')"
gpu=$(job_field "$frac" 'd["placement"][0]["gpus"][0]["gpu"]')
devices | grep -qx "$gpu:shared:True" || fail "GPU $gpu of flex is not shared again: $(devices | tr '\n' ' ')"
echo "SIGSTOP of the flex agent past its timeout: both jobs requeued, and ran again on flex"
echo PASS
