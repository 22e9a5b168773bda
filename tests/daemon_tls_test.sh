#!/usr/bin/env bash
# HTTPS on the daemon (issue 18 item 1, part), with certificates the openssl CLI makes:
#  - without TLS, `serve` refuses an address that is not loopback unless --insecure-listen;
#  - with --tls-cert/--tls-key it serves HTTPS only: curl, the CLI and the agent get through when
#    they trust the certificate (--ca, GPUPOOL_CA), and are refused, before a token is sent, when not;
#  - SIGHUP re-reads the files: new connections get the new certificate; a reload of a broken
#    file keeps the previous one and logs why.
# Usage: daemon_tls_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_tls_test.sh GPUPOOL_BINARY}
command -v openssl > /dev/null || { echo "skipped: no openssl"; exit 77; }
. "$(dirname "$0")/lib/e2e.sh"
cert() {  # cert NAME: a self-signed P-256 certificate for 127.0.0.1 and localhost
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=gpupool-$1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$tmp/$1.key" -out "$tmp/$1.pem" 2> /dev/null ||
    fail "openssl req"
}
cert a
cert b
one_tenant_config "$tmp/config.yaml"

# 1. Plain HTTP stays on loopback unless asked.
if "$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/plain" --listen 0.0.0.0:0 > "$tmp/plain.log" 2>&1; then
  fail "served plain HTTP on 0.0.0.0 without --insecure-listen"
fi
grep -q "is not a loopback address and there is no TLS" "$tmp/plain.log" || fail "the refusal does not say why: $(cat "$tmp/plain.log")"
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/insecure" --listen 0.0.0.0:0 --insecure-listen > "$tmp/insecure.log" 2>&1 &
insecure=$!
until_ok 20 test -s "$tmp/insecure/port" || fail "--insecure-listen did not start"
grep -q '"tls":"off (--insecure-listen)"' "$tmp/insecure.log" || fail "the start does not say TLS is off"
kill "$insecure"; wait "$insecure"
echo "plain HTTP: refused beyond loopback, served there with --insecure-listen (and said so)"

# 2. HTTPS.
cp "$tmp/a.pem" "$tmp/tls.pem"; cp "$tmp/a.key" "$tmp/tls.key"
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 \
  --tls-cert "$tmp/tls.pem" --tls-key "$tmp/tls.key" >> "$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=($!)
until_ok 20 test -s "$tmp/data/admin.token" || fail "the TLS daemon did not start"
port=$(cat "$tmp/data/port")
url="https://127.0.0.1:$port"
token=$(cat "$tmp/data/admin.token")
grep -q "\"url\":\"$url\"" "$tmp/daemon.log" || fail "the start line does not give the https URL"
curl -sf --cacert "$tmp/a.pem" "$url/healthz" > /dev/null || fail "curl trusting the certificate was refused"
if curl -sf "$url/healthz" > /dev/null 2>&1; then fail "curl got through without trusting the certificate"; fi
if curl -sf "http://127.0.0.1:$port/healthz" > /dev/null 2>&1; then fail "plain HTTP was answered on the TLS port"; fi
"$bin" get nodes --url "$url" --token "$token" --ca "$tmp/a.pem" > /dev/null || fail "the CLI with --ca was refused"
GPUPOOL_CA="$tmp/a.pem" "$bin" get nodes --url "$url" --token "$token" > /dev/null || fail "the CLI with GPUPOOL_CA was refused"
if out=$("$bin" get nodes --url "$url" --token "$token" 2>&1); then fail "the CLI trusted an unknown certificate"; fi
echo "$out" | grep -q "TLS server verification failed" || fail "the CLI's refusal does not say why: $out"
if "$bin" get nodes --url "$url" --token "$token" --ca "$tmp/b.pem" > /dev/null 2>&1; then fail "the CLI trusted another certificate"; fi
echo "HTTPS: curl and the CLI get through trusting the certificate (--ca, GPUPOOL_CA), and are refused otherwise"

# The agent verifies the daemon too: with --ca it registers, without it it is refused before it
# runs anything a reply could ask for.
(umask 077; "$bin" create token n-0 --role node-agent --url "$url" --token "$token" --ca "$tmp/a.pem" -o json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' > "$tmp/agent.token") || fail "no node-agent token"
env -u GPUPOOL_TOKEN "$bin" agent --server "$url" --name n-0 --token-file "$tmp/agent.token" --gpus fake:8xh100-80gb \
  --work-dir "$tmp/work-untrusting" --rediscover-interval-s 0 > "$tmp/agent-untrusting.log" 2>&1 &
untrusting=$!
pids+=($!)
env -u GPUPOOL_TOKEN "$bin" agent --server "$url" --ca "$tmp/a.pem" --name n-0 --token-file "$tmp/agent.token" \
  --gpus fake:8xh100-80gb --work-dir "$tmp/work-n-0" --rediscover-interval-s 0 > "$tmp/agent-n-0.log" 2>&1 &
pids+=($!)
until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-n-0.log" || fail "the agent with --ca did not register"
sleep 1
if grep -q '"msg":"registered"' "$tmp/agent-untrusting.log"; then fail "an agent registered with a server it could not verify"; fi
grep -qi "certificate\|SSL\|could not connect\|cannot reach" "$tmp/agent-untrusting.log" || fail "the untrusting agent does not say why: $(tail -3 "$tmp/agent-untrusting.log")"
kill "$untrusting" 2> /dev/null
echo "the agent registers over HTTPS with --ca, and not without it"

# 3. SIGHUP reloads the certificate.
cp "$tmp/b.pem" "$tmp/tls.pem"; cp "$tmp/b.key" "$tmp/tls.key"
kill -HUP "$daemon"
reloaded() { curl -sf --cacert "$tmp/b.pem" "$url/healthz" > /dev/null; }
until_ok 5 reloaded || fail "the new certificate is not served after SIGHUP"
if curl -sf --cacert "$tmp/a.pem" "$url/healthz" > /dev/null 2>&1; then fail "the old certificate is still served"; fi
grep -q '"msg":"TLS certificate reloaded"' "$tmp/daemon.log" || fail "the reload was not logged"
echo "not a certificate" > "$tmp/tls.pem"
kill -HUP "$daemon"
until_ok 5 grep -q '"msg":"TLS certificate reload failed; the previous one stays"' "$tmp/daemon.log" || fail "a failed reload was not logged"
reloaded || fail "a failed reload dropped the working certificate"
echo "SIGHUP: the new certificate is served; a broken one is refused and the previous one stays"
echo "tls ok"
