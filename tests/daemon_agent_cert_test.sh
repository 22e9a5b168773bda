#!/usr/bin/env bash
# Node agents authenticate with client certificates (issue 18 item 1), made with the openssl CLI:
#  - serve --tls-client-ca CA: a certificate CA signed (clientAuth) is the node agent of the node
#    its DNS name (or, without one, its CN) names, for that node only: it registers and runs jobs
#    there, may not register another node, and opens no route but the agents';
#  - a certificate another CA signed, or one for server authentication only, fails the handshake;
#    no certificate and no token is 401; a token sent with a certificate is the token's caller;
#  - the agent refuses --client-cert over plain http and a key file others can read;
#  - SIGHUP re-reads the client CA: certificates of the old CA stop working, the new one's work.
# Usage: daemon_agent_cert_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_agent_cert_test.sh GPUPOOL_BINARY}
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
command -v curl > /dev/null || { echo "skipped: no curl"; exit 77; }
. "$(dirname "$0")/lib/e2e.sh"
ossl() { openssl "$@" 2> "$tmp/openssl.err" || fail "openssl $1: $(cat "$tmp/openssl.err")"; }
ca() {  # ca NAME: a self-signed CA
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=$1" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
    -keyout "$tmp/$1.key" -out "$tmp/$1.pem"
}
leaf() {  # leaf NAME CA SUBJECT EXTENSIONS: a certificate CA signed, key mode 0600
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$3" -keyout "$tmp/$1.key" -out "$tmp/$1.csr"
  printf '%b' "$4" > "$tmp/$1.ext"
  ossl x509 -req -in "$tmp/$1.csr" -CA "$tmp/$2.pem" -CAkey "$tmp/$2.key" -CAcreateserial -days 1 \
    -extfile "$tmp/$1.ext" -out "$tmp/$1.pem"
  chmod 600 "$tmp/$1.key"
}
client_ext='extendedKeyUsage=clientAuth\n'
ca node-ca
ca rogue-ca
leaf server node-ca "/CN=gpupool" 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'
leaf n-0 node-ca "/CN=ignored-when-a-san-is-there" "subjectAltName=DNS:n-0\n$client_ext"
leaf n-1 node-ca "/CN=n-1" "$client_ext"                       # no SAN: the CN names the node
leaf rogue-n-0 rogue-ca "/CN=n-0" "subjectAltName=DNS:n-0\n$client_ext"
leaf server-only-n-0 node-ca "/CN=n-0" 'subjectAltName=DNS:n-0\nextendedKeyUsage=serverAuth\n'
one_tenant_config "$tmp/config.yaml" 2 16   # nodes n-0 and n-1
cp "$tmp/node-ca.pem" "$tmp/client-ca.pem"

# A client CA without TLS is refused at start, saying why.
if "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/no-tls" --tls-client-ca "$tmp/client-ca.pem" > "$tmp/no-tls.log" 2>&1; then
  fail "served with a client CA and no TLS"
fi
grep -q "needs TLS" "$tmp/no-tls.log" || fail "the refusal does not say why: $(cat "$tmp/no-tls.log")"

"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 --max-auth-failures 0 \
  --tls-cert "$tmp/server.pem" --tls-key "$tmp/server.key" --tls-client-ca "$tmp/client-ca.pem" >> "$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=($!)
until_ok 20 test -s "$tmp/data/admin.token" || fail "the daemon did not start"
grep -q '"msg":"node agents may authenticate with client certificates"' "$tmp/daemon.log" || fail "the start does not say client certificates are accepted"
url="https://127.0.0.1:$(cat "$tmp/data/port")"
admin=$(cat "$tmp/data/admin.token")
export GPUPOOL_URL=$url GPUPOOL_CA=$tmp/node-ca.pem GPUPOOL_TOKEN=$admin

# status PATH [CURL ARGS...]: the HTTP status of a GET, or "handshake" when TLS refused the client.
status() {
  local path=$1 code; shift
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' --cacert "$tmp/node-ca.pem" "$@" "$url$path") && echo "$code" || echo handshake
}
with() { echo --cert "$tmp/$1.pem" --key "$tmp/$1.key"; }
[ "$(status /v1/jobs)" = 401 ] || fail "no certificate and no token got $(status /v1/jobs), not 401"
[ "$(status /v1/jobs $(with n-0))" = 403 ] || fail "a node's certificate read /v1/jobs: $(status /v1/jobs $(with n-0))"
grep -q "node-agent" "$tmp/body" || fail "the 403 does not say a node agent may not: $(cat "$tmp/body")"
[ "$(status /v1/jobs $(with n-0) -H "Authorization: Bearer $admin")" = 200 ] || fail "a token with a certificate is not the token's caller"
[ "$(status /v1/jobs $(with rogue-n-0))" = handshake ] || fail "a certificate of another CA was accepted"
[ "$(status /v1/jobs $(with server-only-n-0))" = handshake ] || fail "a certificate for server authentication only was accepted"
[ "$(status /healthz)" = 200 ] || fail "healthz without a certificate"
echo "certificates: the CA's are node agents (403 elsewhere), others fail the handshake, none is 401, a token wins"

# The agent with its certificate and no token registers its node and runs a job there.
agent() {  # agent LOG NAME CERT [FLAGS...]; run with & it is a subshell, and exec makes $! the agent
  local log=$1 name=$2 cert=$3; shift 3
  exec env -u GPUPOOL_TOKEN "$bin" agent --server "$url" --name "$name" --client-cert "$tmp/$cert.pem" \
    --client-key "$tmp/$cert.key" --gpus "fake:8xh100-80gb" --work-dir "$tmp/work-$log" --rediscover-interval-s 0 --allow-root a \
    "$@" > "$tmp/agent-$log.log" 2>&1
}
agent n-0 n-0 n-0 &
pids+=($!)
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-n-0.log" || fail "the agent with n-0's certificate did not register"
job=$("$bin" submit --tenant a --name on-cert --flavor h100-80gb --gpus 8 --duration 60 -o json -- sh -c 'echo ran on $CUDA_VISIBLE_DEVICES' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "submit"
job_state() { "$bin" describe job "$job" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
job_done() { [ "$(job_state)" = succeeded ]; }
until_ok 30 job_done || fail "job $job is $(job_state), not succeeded"
until_ok 10 sh -c "'$bin' logs $job | grep -q 'ran on GPU-fake-n-0-0,'" || fail "job $job did not run on n-0: $("$bin" logs "$job")"
echo "agent: registers n-0 with its certificate alone and runs a job there"

# n-0's certificate may not speak for n-1; n-1's CN-only certificate may.
agent as-n-1 n-1 n-0 &
impostor=$!
pids+=($!)
until_ok 20 grep -q "register node n-1" "$tmp/agent-as-n-1.log" || fail "n-0's certificate was not refused for n-1: $(tail -3 "$tmp/agent-as-n-1.log")"
grep -q '"msg":"registered"' "$tmp/agent-as-n-1.log" && fail "n-0's certificate registered n-1"
kill "$impostor" 2> /dev/null
agent n-1 n-1 n-1 &
pids+=($!)
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-n-1.log" || fail "the agent with n-1's CN-only certificate did not register"
echo "agent: a certificate acts for its own node only; a CN names the node when there is no DNS name"

# The agent's own checks, before it connects.
if (agent plain n-0 n-0 --server "http://127.0.0.1:1"); then fail "the agent sent a client certificate over plain http"; fi
grep -q "only over https" "$tmp/agent-plain.log" || fail "plain-http refusal: $(cat "$tmp/agent-plain.log")"
chmod 644 "$tmp/n-0.key"
if (agent readable n-0 n-0); then fail "the agent used a key file others can read"; fi
grep -q "mode 0600" "$tmp/agent-readable.log" || fail "readable-key refusal: $(cat "$tmp/agent-readable.log")"
chmod 600 "$tmp/n-0.key"
if (agent wrong-key n-0 n-0 --client-key "$tmp/n-1.key"); then fail "the agent used a key of another certificate"; fi
grep -q "cannot use the client certificate" "$tmp/agent-wrong-key.log" || fail "mismatched-key refusal: $(cat "$tmp/agent-wrong-key.log")"
echo "agent: refuses a certificate over http, a readable key and a key of another certificate"

# SIGHUP re-reads the client CA: the old CA's certificates stop, the new CA's start.
cp "$tmp/rogue-ca.pem" "$tmp/client-ca.pem"
kill -HUP "$daemon"
swapped() { [ "$(status /v1/jobs $(with rogue-n-0))" = 403 ]; }
until_ok 5 swapped || fail "the new client CA is not used after SIGHUP"
[ "$(status /v1/jobs $(with n-0))" = handshake ] || fail "a certificate of the replaced CA still works"
echo "not a certificate" > "$tmp/client-ca.pem"
kill -HUP "$daemon"
until_ok 5 grep -q '"msg":"TLS certificate reload failed; the previous one stays"' "$tmp/daemon.log" || fail "a broken client CA was not refused"
swapped || fail "a failed reload dropped the working client CA"
echo "SIGHUP: the client CA is re-read; a broken one is refused and the previous one stays"
echo "agent certificates ok"
