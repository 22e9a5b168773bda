#!/usr/bin/env bash
# A tenant's job looking around its node (issue 15): the agent runs as root, tenants map to
# their own users (--users), the token comes from a 0600 file (--token-file) and the GPUs' device
# nodes are hidden from jobs not granted them (--device-nodes, fake files standing in for
# /dev/nvidiaN). A job of tenant a, next to a job of tenant b, tries to read the agent's token
# (its file, /proc/AGENT/cmdline and environ, its own environment), b's files and the GPU it was
# not granted; it must fail at each, while its own GPU, directory and logs are its own (0700,
# 0600). A tenant with no user is refused, not run as root. Skipped (77) when not root.
# Usage: agent_sandbox_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: agent_sandbox_test.sh GPUPOOL_BINARY}
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (jobs run as other users)"; exit 77; }
. "$(dirname "$0")/lib/e2e.sh"
chmod 711 "$tmp"  # the jobs' users reach their own directories below it

cat > "$tmp/config.yaml" << 'EOF'
scheduler: {tick_ms: 50}
tenants:
  - {name: a, quotas: {h100-80gb: {guaranteed: 1}}}
  - {name: b, quotas: {h100-80gb: {guaranteed: 1}}}
  - {name: c, quotas: {h100-80gb: {guaranteed: 1}}}
nodes:
  - {name: s, count: 1, flavor: h100-80gb, gpus: 2}
EOF
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 \
  --heartbeat-interval-ms 200 --heartbeat-timeout-ms 3000 > "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$tmp/data/port")" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"
token=$(curl -sf -X POST -H "Authorization: Bearer $GPUPOOL_TOKEN" -d '{"name": "s-0", "role": "node-agent"}' \
  "$GPUPOOL_URL/v1/tokens" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])') || fail "no token"
(umask 077; echo "$token" > "$tmp/agent.token")
printf 'a 61001:61001\nb 61002:61002\n' > "$tmp/users"
mkdir -m 755 "$tmp/dev"
for i in 0 1; do echo "contents of GPU $i" > "$tmp/dev/nvidia$i"; chmod 666 "$tmp/dev/nvidia$i"; done
hide=(--device-nodes "$tmp/dev/nvidia%d")
unshare -m true 2> /dev/null || { hide=(); echo "note: no mount namespaces here: device nodes not hidden"; }

env -u GPUPOOL_TOKEN "$bin" agent --name s-0 --token-file "$tmp/agent.token" --gpus fake:2xh100-80gb \
  --work-dir "$tmp/work" --users "$tmp/users" "${hide[@]}" > "$tmp/agent-s-0.log" 2>&1 &
agent=$!
pids+=($!)
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-s-0.log" || fail "agent did not register"

# The token is nowhere a job could look.
tr '\0' ' ' < "/proc/$agent/cmdline" | grep -qF "$token" && fail "the token is in the agent's argv"
tr '\0' '\n' < "/proc/$agent/environ" | grep -qF "$token" && fail "the token is in the agent's environment"

submit() {  # submit TENANT NAME -- COMMAND...
  local tenant=$1 name=$2; shift 3
  "$bin" submit --tenant "$tenant" --name "$name" --flavor h100-80gb --gpus 1 --duration 600 -o json -- "$@" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
job_field() { "$bin" describe job "$1" -o json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"; }
job_is() { [ "$(job_field "$1" 'd["state"]')" = "$2" ]; }

b=$(submit b keeper -- sh -c 'echo "b-secret" > secret.txt; sleep 60')
until_ok 20 job_is "$b" running || fail "job $b of tenant b did not start"
until_ok 10 test -s "$tmp/work/$b-0/secret.txt" || fail "job $b wrote no secret"

probe='
try() { label=$1; shift; if out=$("$@" 2>&1); then echo "$label: READ $out"; else echo "$label: DENIED"; fi; }
echo "uid: $(id -u) gid: $(id -g)"
grep NoNewPrivs /proc/self/status
echo "cwd: $(stat -c "%a %u" .)"
try token-file cat "$1"
try agent-environ cat "/proc/$2/environ"
if tr "\0" " " < "/proc/$2/cmdline" | grep -q -- "--token "; then echo "agent-cmdline: TOKEN FLAG"; else echo "agent-cmdline: clean"; fi
env | grep -qi token && echo "env: HAS TOKEN" || echo "env: clean"
try other-tenant cat "$3/'"$b"'-0/secret.txt"
try list-work ls "$3"
gpu=${CUDA_VISIBLE_DEVICES##*-}
try own-gpu cat "$4/nvidia$gpu"
try other-gpu cat "$4/nvidia$((1 - gpu))"
try signal-agent kill -0 "$2"
'
a=$(submit a prober -- sh -c "$probe" probe "$tmp/agent.token" "$agent" "$tmp/work" "$tmp/dev")
until_ok 20 job_is "$a" succeeded || fail "job $a is $(job_field "$a" 'd["state"]'): $("$bin" logs "$a" --stderr)"
until_ok 10 sh -c "'$bin' logs $a | grep -q signal-agent" || fail "no output from job $a"
out=$("$bin" logs "$a")
echo "$out" | sed 's/^/  job a: /'
expect() { echo "$out" | grep -qx -- "$1" || fail "job $a: expected '$1'"; }
expect "uid: 61001 gid: 61001"
expect "NoNewPrivs:	1"
expect "cwd: 700 61001"
expect "token-file: DENIED"
expect "agent-environ: DENIED"
expect "agent-cmdline: clean"
expect "env: clean"
expect "other-tenant: DENIED"
expect "list-work: DENIED"
expect "signal-agent: DENIED"
echo "$out" | grep -qF "$token" && fail "job $a saw the agent's token"
if [ ${#hide[@]} -gt 0 ]; then
  echo "$out" | grep -q "^own-gpu: READ contents of GPU [01]$" || fail "job $a could not read its own GPU"
  expect "other-gpu: DENIED"
fi
[ "$(stat -c '%a %u' "$tmp/work/$a-0/stdout")" = "600 61001" ] ||
  fail "stdout of job $a is $(stat -c '%a %u' "$tmp/work/$a-0/stdout"), want 600 61001"
[ "$(stat -c '%a %u' "$tmp/work/$a-0")" = "700 61001" ] || fail "the directory of job $a is not 0700 of its user"

# A tenant without a user on the node is refused, not run as root.
c=$(submit c rootless -- id -u)
until_ok 20 job_is "$c" failed || fail "job $c of tenant c (no user) is $(job_field "$c" 'd["state"]')"
until_ok 10 sh -c "'$bin' logs $c --stderr | grep -q \"tenant 'c' has no user on this node\"" ||
  fail "job $c failed without saying why: $("$bin" logs "$c" --stderr)"
echo "agent sandbox ok"
