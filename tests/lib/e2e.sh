# Shared by the end-to-end scripts (agent_e2e_test.sh, console_test.sh); source it after `set -u`.
# Gives $tmp (a scratch directory), pids (background processes, killed at exit), fail MESSAGE
# (prints the tails of $tmp/daemon.log and $tmp/agent-*.log, exits 1) and
# until_ok SECONDS CMD... (retries CMD every 0.2 s until it succeeds or SECONDS pass) and
# one_tenant_config and keyed_client (below).
tmp=$(mktemp -d)
pids=()
cleanup() {
  # SIGTERM first: agents stop their replicas and remove their cgroups; then SIGKILL what is left.
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- daemon log (tail)" >&2; tail -n 30 "$tmp/daemon.log" >&2
  for f in "$tmp"/agent-*.log; do [ -e "$f" ] && { echo "--- $f (tail)" >&2; tail -n 8 "$f" >&2; }; done
  exit 1
}
# one_tenant_config FILE [NODES] [GPUS_GUARANTEED]: a configuration of tenant "a" guaranteed
# GPUS_GUARANTEED (8) H100s on NODES (1) nodes "n" of 8 GPUs each.
one_tenant_config() {
  printf 'tenants:\n  - {name: a, quotas: {h100-80gb: {guaranteed: %s}}}\nnodes:\n  - {name: n, count: %s, flavor: h100-80gb, gpus: 8}\n' \
    "${3:-8}" "${2:-1}" > "$1"
}
until_ok() {
  local deadline=$(( $(date +%s%N) / 1000000 + $1 * 1000 )); shift
  while ! "$@" > /dev/null 2>&1; do
    [ $(( $(date +%s%N) / 1000000 )) -lt $deadline ] || return 1
    sleep 0.2
  done
}

# keyed_client BIN I TRIES TENANT FLAVOR: until $tmp/stop exists, submits job c<I>-<N> with the
# idempotency key c<I>-<N>, retrying a refused submission with the same key up to TRIES times
# 0.05 s apart; writes "NAME ID" of each acknowledged one to $tmp/acked-<I>, refusals to
# $tmp/client-<I>.err (the failover tests: every acknowledged key must be there once).
keyed_client() {
  local bin=$1 i=$2 max=$3 tenant=$4 flavor=$5 n=0 tries
  while [ ! -e "$tmp/stop" ]; do
    n=$((n + 1)); tries=0
    until "$bin" submit --tenant "$tenant" --name "c$i-$n" --flavor "$flavor" --gpus 1 --duration 60 \
        --idempotency-key "c$i-$n" -o json -- true > "$tmp/reply-$i" 2>> "$tmp/client-$i.err"; do
      tries=$((tries + 1))
      [ $tries -lt "$max" ] || { echo "c$i-$n gave up" >> "$tmp/client-$i.err"; break; }
      sleep 0.05
    done
    [ $tries -lt "$max" ] && echo "c$i-$n $(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' < "$tmp/reply-$i")" >> "$tmp/acked-$i"
  done
}

# loopback_cert PEM KEY: a self-signed P-256 certificate for 127.0.0.1 (an issuer's HTTPS).
loopback_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=test" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$2" -out "$1" 2> /dev/null || fail "openssl req"
}
# serve_oidc BIN [FLAG...]: the daemon on $tmp/config.yaml and $tmp/data, with no limit on failed
# authentications (the OIDC tests send many bad tokens on purpose) and any further flags; sets
# url and started.
serve_oidc() {
  "$1" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 --max-auth-failures 0 "${@:2}" \
    > "$tmp/daemon.log" 2>&1 &
  pids+=($!)
  until_ok 20 test -s "$tmp/data/port" || fail "the daemon did not start"
  started=$(date +%s)
  url="http://127.0.0.1:$(cat "$tmp/data/port")"
}
# start_op [ACCOUNTS_JSON] [PORT]: the test OpenID Provider (tests/oidc/provider.mjs, the
# oidc-provider package) over HTTPS on loopback, in $op (its certificate made on the first call),
# with these accounts (kept from the last call when not given); sets op, iss and provider.
start_op() {
  op="$tmp/op"
  if [ ! -e "$op/tls.pem" ]; then
    mkdir -p "$op"
    loopback_cert "$op/tls.pem" "$op/tls.key"
  fi
  [ -n "${1:-}" ] && echo "$1" > "$op/accounts.json"
  rm -f "$op/issuer"
  node "$(dirname "${BASH_SOURCE[0]}")/../oidc/provider.mjs" "$op" "${2:-0}" >> "$tmp/op.log" 2>&1 &
  provider=$!
  pids+=($!)
  until_ok 20 test -s "$op/issuer" || fail "the provider did not start: $(tail -5 "$tmp/op.log")"
  iss=$(cat "$op/issuer")
}
# op_config FILE: tenant research on one node of 8 H100s, trusting $iss for audience and client
# gpupool (email as the username), its group ml-research mapped to research/member.
op_config() {
  cat > "$1" <<YAML
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 8}}}
nodes:
  - {name: n, count: 1, flavor: h100-80gb, gpus: 8}
auth:
  oidc:
    - issuer: $iss
      audience: gpupool
      client_id: gpupool
      scopes: [openid, email, groups, offline_access]
      username_claim: email
      ca_file: $op/tls.pem
      mappings:
        - {group: ml-research, tenant: research, role: member}
YAML
}
