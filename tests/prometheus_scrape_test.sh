#!/usr/bin/env bash
# A real Prometheus scrapes a real `gpupool serve --demo` (both on free loopback ports), and its
# query API must show what the daemon exposes at /metrics: the target up, every tenant's guarantee
# equal to what GET /v1/tenants says, the scheduling-cycle histogram growing, the API request
# counter and latency histogram, and GPUs allocated to the demo traffic's jobs.
# Usage: prometheus_scrape_test.sh GPUPOOL_BINARY   (exit 77 when prometheus, curl or python3 is
# missing; the Debian package `prometheus` provides prometheus and promtool)
set -u
bin=${1:?usage: prometheus_scrape_test.sh GPUPOOL_BINARY}
for tool in prometheus promtool curl python3; do
  command -v "$tool" > /dev/null || { echo "skipped: no $tool"; exit 77; }
done
tmp=$(mktemp -d)
daemon=
prom=
cleanup() {
  if [ -n "$prom" ]; then kill "$prom" 2> /dev/null; wait "$prom" 2> /dev/null; fi
  if [ -n "$daemon" ]; then kill "$daemon" 2> /dev/null; wait "$daemon" 2> /dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  if [ -s "$tmp/q.json" ]; then echo "--- last query answer:" >&2; head -c 4000 "$tmp/q.json" >&2; echo >&2; fi
  if [ -s "$tmp/check.err" ]; then echo "--- last check:" >&2; tail -n 5 "$tmp/check.err" >&2; fi
  echo "--- prometheus log (tail):" >&2; tail -n 30 "$tmp/prom.log" >&2 2> /dev/null
  echo "--- daemon log (tail):" >&2; tail -n 30 "$tmp/daemon.log" >&2 2> /dev/null
  exit 1
}
: > "$tmp/q.json"; : > "$tmp/check.err"; : > "$tmp/prom.log"; : > "$tmp/daemon.log"

# --- the daemon: demo cluster (tenants research, product, interns) with demo traffic, port 0.
"$bin" serve --demo --data-dir "$tmp/data" --listen 127.0.0.1:0 > "$tmp/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 1 100); do
  [ -s "$tmp/data/port" ] && [ -s "$tmp/data/admin.token" ] && break
  kill -0 "$daemon" 2> /dev/null || fail "daemon exited"
  sleep 0.1
done
[ -s "$tmp/data/port" ] && [ -s "$tmp/data/admin.token" ] || fail "daemon wrote no port or admin.token in 10 s"
port=$(cat "$tmp/data/port")
url="http://127.0.0.1:$port"
token=$(cat "$tmp/data/admin.token")

# /metrics needs no token (Prometheus scrapes it without one); the tenants are what the guarantees
# are checked against, and this request is one the API counters must show.
code=$(curl -s --max-time 5 -o "$tmp/metrics.txt" -w '%{http_code}' "$url/metrics")
[ "$code" = 200 ] || fail "GET /metrics without a token: HTTP $code"
curl -sf --max-time 5 -H "Authorization: Bearer $token" "$url/v1/tenants" > "$tmp/tenants.json" \
  || fail "GET /v1/tenants failed"
python3 -c "
import json, sys
names = sorted(t['name'] for t in json.load(open(sys.argv[1]))['items'])
assert names == ['interns', 'product', 'research'], names" "$tmp/tenants.json" 2> "$tmp/check.err" \
  || fail "the demo cluster's tenants are not research, product, interns"

# --- Prometheus: scrape the daemon every second. The port comes from binding port 0; another
# process could take it before Prometheus binds it, so a failed start is retried on a new port.
mkdir -p "$tmp/prom"
cat > "$tmp/prometheus.yml" << EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpupool
    metrics_path: /metrics
    static_configs:
      - targets: ['127.0.0.1:$port']
EOF
promtool check config "$tmp/prometheus.yml" > "$tmp/promtool.out" 2>&1 \
  || { cat "$tmp/promtool.out" >&2; fail "promtool check config"; }
free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
ready=
for attempt in 1 2 3; do
  pport=$(free_port)
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prom" \
    --web.listen-address="127.0.0.1:$pport" > "$tmp/prom.log" 2>&1 &
  prom=$!
  for _ in $(seq 1 200); do
    kill -0 "$prom" 2> /dev/null || break
    if curl -sf --max-time 2 "http://127.0.0.1:$pport/-/ready" > /dev/null; then ready=1; break; fi
    sleep 0.05
  done
  [ -n "$ready" ] && break
  kill "$prom" 2> /dev/null; wait "$prom" 2> /dev/null; prom=
  echo "prometheus did not get ready on port $pport (attempt $attempt):" >&2
  tail -n 5 "$tmp/prom.log" >&2
done
[ -n "$ready" ] || fail "prometheus did not get ready"
promurl="http://127.0.0.1:$pport"
echo "daemon at $url, prometheus at $promurl"

# query Q: an instant query; the answer lands in $tmp/q.json.
query() {
  curl -sfG --max-time 5 --data-urlencode "query=$1" "$promurl/api/v1/query" > "$tmp/q.json"
}
# check CODE: runs the Python CODE with r = the last query's result list and T = GET /v1/tenants;
# it fails by raising, and prints its transcript line when it passes.
check() {
  python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['status'] == 'success', d
r = d['data']['result']
T = json.load(open(sys.argv[2]))
exec(sys.argv[3])" "$tmp/q.json" "$tmp/tenants.json" "$1" 2> "$tmp/check.err"
}
# poll SECONDS QUERY CODE WHAT: repeats QUERY until CODE passes, failing after SECONDS.
poll() {
  local deadline=$((SECONDS + $1))
  while true; do
    kill -0 "$daemon" 2> /dev/null || fail "daemon exited while waiting for: $4"
    kill -0 "$prom" 2> /dev/null || fail "prometheus exited while waiting for: $4"
    query "$2" && check "$3" && return 0
    [ "$SECONDS" -lt "$deadline" ] || fail "no $4 within $1 s (query: $2)"
    sleep 0.5
  done
}

# --- the scrape works (the first scrape comes a few seconds after start).
poll 60 'up{job="gpupool"}' "
assert len(r) == 1, r
assert float(r[0]['value'][1]) == 1, r
print('up{job=\"gpupool\"} =', r[0]['value'][1], 'instance', r[0]['metric']['instance'])" \
  "successful scrape of the daemon"

# --- guarantees per tenant and flavor equal the daemon's own API.
poll 30 'gpupool_tenant_guaranteed_gpu_eq{job="gpupool"}' "
want = {(t['name'], f): float(q['guaranteed']) for t in T['items'] for f, q in t['quotas'].items()}
got = {(s['metric']['tenant'], s['metric']['flavor']): float(s['value'][1]) for s in r}
assert {t for t, _ in got} == {'research', 'product', 'interns'}, sorted(got)
for k, v in want.items():
    assert k in got, ('no series for tenant/flavor', k, sorted(got))
    assert abs(got[k] - v) <= 1e-9, ('tenant/flavor', k, 'prometheus', got[k], 'api', v)
for k, v in got.items():  # a flavor without a quota (only jobs) has no guarantee
    assert k in want or v == 0, ('series without a quota in the API', k, v)
for (t, f), v in sorted(want.items()):
    print('gpupool_tenant_guaranteed_gpu_eq{tenant=\"%s\",flavor=\"%s\"} = %g (API: %g)' % (t, f, got[(t, f)], v))" \
  "guaranteed GPUs for every tenant"

# --- the scheduler runs: the cycle count grows between two samples.
poll 30 'gpupool_scheduling_cycle_seconds_count{job="gpupool"}' "
assert len(r) == 1 and float(r[0]['value'][1]) > 0, r
open(sys.argv[1] + '.first', 'w').write(r[0]['value'][1])" "scheduling cycles"
first=$(cat "$tmp/q.json.first")
sleep 3
poll 30 'gpupool_scheduling_cycle_seconds_count{job="gpupool"}' "
first = float(open(sys.argv[1] + '.first').read())
now = float(r[0]['value'][1])
assert now > first, ('no new cycles', first, now)
print('gpupool_scheduling_cycle_seconds_count: %g -> %g' % (first, now))" "increase of the scheduling-cycle count over $first"
poll 30 'increase(gpupool_scheduling_cycle_seconds_count{job="gpupool"}[30s])' "
assert len(r) == 1 and float(r[0]['value'][1]) > 0, r
print('increase(gpupool_scheduling_cycle_seconds_count[30s]) = %.3g' % float(r[0]['value'][1]))" \
  "positive increase() of the scheduling-cycle count"

# --- the API metrics: this test's GET /v1/tenants is counted, and its latency observed.
poll 30 'gpupool_api_requests_total{job="gpupool"}' "
n = {(s['metric'].get('route'), s['metric'].get('status')): float(s['value'][1]) for s in r}
assert n.get(('GET /v1/tenants', '200'), 0) >= 1, n
print('gpupool_api_requests_total{route=\"GET /v1/tenants\",status=\"200\"} =', '%g' % n[('GET /v1/tenants', '200')])" \
  "API request counter for GET /v1/tenants"
poll 30 'gpupool_api_request_seconds_bucket{job="gpupool",route="GET /v1/tenants"}' "
b = {s['metric']['le']: float(s['value'][1]) for s in r}
assert b.get('+Inf', 0) >= 1, b
counts = [b[le] for le in sorted(b, key=float)]
assert counts == sorted(counts), ('buckets not cumulative', b)
print('gpupool_api_request_seconds_bucket{route=\"GET /v1/tenants\"}: %d buckets, +Inf = %g' % (len(b), b['+Inf']))" \
  "API latency histogram for GET /v1/tenants"

# --- the demo traffic's jobs hold GPUs.
poll 60 'sum by (tenant) (gpupool_tenant_allocated_gpu_eq{job="gpupool"})' "
a = {s['metric']['tenant']: float(s['value'][1]) for s in r}
assert any(v > 0 for v in a.values()), a
print('gpupool_tenant_allocated_gpu_eq by tenant:', ', '.join('%s=%g' % kv for kv in sorted(a.items())))" \
  "GPUs allocated to any tenant"
poll 60 'sum by (tenant) (gpupool_tenant_active_jobs{job="gpupool"})' "
a = {s['metric']['tenant']: float(s['value'][1]) for s in r}
assert any(v > 0 for v in a.values()), a
print('gpupool_tenant_active_jobs by tenant:', ', '.join('%s=%g' % kv for kv in sorted(a.items())))" \
  "active jobs for any tenant"

echo "prometheus scrape ok"
