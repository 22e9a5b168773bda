#!/usr/bin/env bash
# A PostgreSQL store that goes away, hangs or turns read-only (issue 17, "Bad input and faults"),
# with a PostgreSQL of this test's own (the shared one serves other tests meanwhile):
#  - SIGSTOP of the server: a write fails within the statement timeout (5 s) with 503 and a JSON
#    error, /healthz still answers, and after SIGCONT writes are acknowledged again (the
#    timed-out one, retried with its idempotency key, is there once);
#  - the server stopped and started again: writes fail with 503 meanwhile, and the daemon serves
#    again by itself;
#  - the database turned read-only: writes fail with 503, and succeed once it is writable again;
#  - no write refused before it reached the server is in the store afterwards, everything
#    acknowledged is, once.
# Usage: daemon_postgres_outage_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_postgres_outage_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
pg=$(dirname "$0")/../scripts/test-postgres.sh
export GPUPOOL_TEST_PG_DIR="/tmp/gpupool-outage-pg-$$"  # not under $tmp: the server runs as postgres
pg_url=$("$pg" start) || fail "this test's PostgreSQL did not start"
trap '"$pg" stop > /dev/null 2>&1; cleanup' EXIT
# The server's processes: the postmaster and its children (each connection has its own backend).
pg_pids() { local pm; pm=$(head -1 "$GPUPOOL_TEST_PG_DIR/data/postmaster.pid"); echo "$pm $(pgrep -P "$pm" | tr '\n' ' ')"; }
as_pg=()
[ "$(id -u)" -eq 0 ] && as_pg=(runuser -u postgres --)
pg_ctl() { "${as_pg[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$GPUPOOL_TEST_PG_DIR/data" "$@"; }
psql_do() { "${as_pg[@]}" psql -X -q -h "$GPUPOOL_TEST_PG_DIR" -U postgres -d postgres -c "$1" > /dev/null; }

one_tenant_config "$tmp/config.yaml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --config "$tmp/config.yaml" --store "$pg_url" --data-dir "$tmp/data" --listen "127.0.0.1:$port" \
  --simulate-executor --lease-ms 2000 >> "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/admin.token" || fail "the daemon did not bootstrap"
token=$(cat "$tmp/data/admin.token")
url="http://127.0.0.1:$port"
n=0
submit() {  # submit NAME: prints the HTTP status; the body goes to $tmp/body. Its key is its name.
  curl -s -m 30 -o "$tmp/body" -w '%{http_code}' -X POST -H "Authorization: Bearer $token" -H "Idempotency-Key: $1" \
    -d "{\"tenant\": \"a\", \"name\": \"$1\", \"replicas\": 1, \"resources\": {\"flavor\": \"h100-80gb\", \"gpus\": 1}, \"duration_estimate_s\": 60, \"command\": [\"true\"]}" \
    "$url/v1/jobs"
}
acked=() refused=()
expect_refused() {  # expect_refused NAME WHAT [maybe]: maybe: its commit may still happen (a timeout)
  local t0 code ms
  t0=$(date +%s%N)
  code=$(submit "$1")
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$code" = 503 ] || fail "$2: a write got $code, not 503: $(cat "$tmp/body")"
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["message"]' "$tmp/body" ||
    fail "$2: the 503 is not a JSON error: $(cat "$tmp/body")"
  [ "${3:-}" = maybe ] || refused+=("$1")
  echo "$2: a write got 503 after $ms ms: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["message"][:120])' "$tmp/body")"
}
serving() { [ "$(submit "$1")" = 201 ] && acked+=("$1"); }
until_ok 10 serving ok-0 || fail "no write was acknowledged at the start"

# 1. SIGSTOP of PostgreSQL.
stopped=$(pg_pids)
kill -STOP $stopped
expect_refused stopped-1 "SIGSTOP of PostgreSQL" maybe
curl -sf -m 2 "$url/healthz" > /dev/null || { kill -CONT $stopped; fail "/healthz does not answer while PostgreSQL is stopped"; }
kill -CONT $stopped
until_ok 30 serving ok-1 || fail "no write was acknowledged after SIGCONT of PostgreSQL"
# The timed-out write may have committed when the server went on (nothing was acknowledged, as
# after any timeout): its retry with the same key makes it there exactly once either way.
until_ok 10 serving stopped-1 || fail "the retry of the timed-out write was not acknowledged"
echo "SIGCONT: writes are acknowledged again"

# 2. PostgreSQL down, then up again.
pg_ctl -m immediate -w stop > /dev/null || fail "cannot stop PostgreSQL"
expect_refused down-1 "PostgreSQL stopped"
"$pg" start > /dev/null || fail "PostgreSQL did not start again"
until_ok 30 serving ok-2 || fail "no write was acknowledged after PostgreSQL came back"
echo "PostgreSQL started again: writes are acknowledged again"

# 3. A read-only database (as a standby, or default_transaction_read_only).
psql_do "ALTER DATABASE postgres SET default_transaction_read_only = on" || fail "cannot make the database read-only"
psql_do "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()"
until_ok 10 sh -c "[ \"\$(curl -s -m 30 -o /dev/null -w '%{http_code}' -X POST -H 'Authorization: Bearer $token' -d '{\"tenant\": \"a\", \"name\": \"probe-ro\", \"replicas\": 1, \"resources\": {\"flavor\": \"h100-80gb\", \"gpus\": 1}, \"duration_estimate_s\": 60, \"command\": [\"true\"]}' $url/v1/jobs)\" = 503 ]" ||
  fail "writes are not refused on a read-only database"
expect_refused readonly-1 "a read-only database"
"${as_pg[@]}" psql -X -q -h "$GPUPOOL_TEST_PG_DIR" -U postgres -d postgres -c "SET default_transaction_read_only = off" -c "ALTER DATABASE postgres SET default_transaction_read_only = off" > /dev/null ||
  fail "cannot make the database writable"
psql_do "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND pid <> pg_backend_pid()"
until_ok 30 serving ok-3 || fail "no write was acknowledged once the database was writable"
echo "writable again: writes are acknowledged again"

# Everything acknowledged is there, nothing refused is.
curl -sf -H "Authorization: Bearer $token" "$url/v1/jobs?limit=1000" > "$tmp/jobs.json" || fail "cannot list the jobs"
python3 - "$tmp/jobs.json" "${acked[*]}" "${refused[*]}" << 'EOF' || fail "the store does not hold what was acknowledged, and only that"
import json, sys
names = [j["name"] for j in json.load(open(sys.argv[1]))["items"]]
acked, refused = sys.argv[2].split(), sys.argv[3].split()
missing = [a for a in acked if names.count(a) != 1]
present = [r for r in refused if r in names]
print(f"{len(acked)} acknowledged writes there once each; {len(refused)} refused writes absent")
sys.exit(1 if missing or present else 0)
EOF
echo "postgres outage ok"
