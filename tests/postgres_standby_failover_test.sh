#!/usr/bin/env bash
# PostgreSQL's own failover under gpupool (issue 17 item 4; docs/design/daemon.md, "PostgreSQL's
# own failover"): a primary with a synchronous standby (streaming replication,
# synchronous_commit=on, synchronous_standby_names), gpupool on the multi-host URL
# host=PRIMARY,STANDBY&target_session_attrs=read-write, four clients submitting with idempotency
# keys (a refused submission is retried with its key). During the storm the primary crashes
# (pg_ctl -m immediate: no shutdown, as a kill) and the standby is promoted (pg_ctl promote, as
# an operator or an HA manager would). gpupool reconnects through the URL by itself, and every
# acknowledged submission is in the store exactly once afterwards.
# Usage: postgres_standby_failover_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: postgres_standby_failover_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
pgbin=/usr/lib/postgresql/15/bin
[ -x "$pgbin/postgres" ] || fail "$pgbin/postgres is missing (apt-get install postgresql-15)"
base=/tmp/gpupool-standby-$$  # not under $tmp (mode 0700): the servers run as postgres
as_pg=()
[ "$(id -u)" -eq 0 ] && as_pg=(runuser -u postgres --)
pg() { "${as_pg[@]}" "$pgbin/$1" "${@:2}"; }
stop_servers() {
  for d in "$base/primary" "$base/standby"; do [ -f "$d/data/PG_VERSION" ] && pg pg_ctl -D "$d/data" -m immediate -w stop > /dev/null 2>&1; done
  rm -rf "$base"
}
trap 'stop_servers; cleanup' EXIT
mkdir -p "$base/primary" "$base/standby"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$base" "$base/primary" "$base/standby"
pg initdb -D "$base/primary/data" -A trust -U postgres --no-sync > "$base/initdb.log" 2>&1 || fail "initdb: $(tail -3 "$base/initdb.log")"
pg pg_ctl -D "$base/primary/data" -l "$base/primary/log" -w start -o "-k $base/primary -c listen_addresses= -c fsync=off \
  -c wal_level=replica -c max_wal_senders=4 -c synchronous_commit=on -c synchronous_standby_names=standby1" > /dev/null ||
  fail "the primary did not start: $(tail -5 "$base/primary/log")"
pg pg_basebackup -h "$base/primary" -U postgres -D "$base/standby/data" -R -X stream > "$base/basebackup.log" 2>&1 ||
  fail "pg_basebackup: $(tail -3 "$base/basebackup.log")"
echo "primary_conninfo = 'host=$base/primary user=postgres application_name=standby1'" >> "$base/standby/data/postgresql.auto.conf"
pg pg_ctl -D "$base/standby/data" -l "$base/standby/log" -w start -o "-k $base/standby -c listen_addresses= -c fsync=off" > /dev/null ||
  fail "the standby did not start: $(tail -5 "$base/standby/log")"
sync_state() { "${as_pg[@]}" psql -X -tA -h "$base/primary" -U postgres -d postgres -c "SELECT sync_state FROM pg_stat_replication"; }
synchronous() { [ "$(sync_state)" = sync ]; }
until_ok 20 synchronous || fail "the standby is not synchronous: $(sync_state)"
echo "primary and synchronous standby up"

one_tenant_config "$tmp/config.yaml"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
store="postgresql:///postgres?host=$base/primary,$base/standby&user=postgres&target_session_attrs=read-write"
"$bin" serve --config "$tmp/config.yaml" --store "$store" --data-dir "$tmp/data" --listen "127.0.0.1:$port" \
  --simulate-executor >> "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/admin.token" || fail "the daemon did not bootstrap"
export GPUPOOL_URL="http://127.0.0.1:$port" GPUPOOL_TOKEN="$(cat "$tmp/data/admin.token")"

client() { keyed_client "$bin" "$1" 400 a h100-80gb; }
client_pids=()
for i in 1 2 3 4; do client "$i" & client_pids+=($!); pids+=($!); done
sleep 3
acked_before=$(cat "$tmp"/acked-* 2>/dev/null | wc -l)
[ "$acked_before" -gt 0 ] || fail "no submission was acknowledged before the failover"
t0=$(date +%s%N)
pg pg_ctl -D "$base/primary/data" -m immediate -w stop > /dev/null || fail "cannot crash the primary"
sleep 1
pg pg_ctl -D "$base/standby/data" -w promote > /dev/null || fail "cannot promote the standby"
submitted() { "$bin" submit --tenant a --name probe --flavor h100-80gb --gpus 1 --duration 60 --idempotency-key probe -- true; }
until_ok 30 submitted || fail "gpupool does not take writes after the standby's promotion"
echo "primary crashed after $acked_before acknowledged submissions; standby promoted; gpupool takes writes again $(( ($(date +%s%N) - t0) / 1000000 )) ms after the crash"
sleep 3
touch "$tmp/stop"
for p in "${client_pids[@]}"; do wait "$p"; done
cat "$tmp"/acked-* > "$tmp/acked"
"$bin" get jobs -o json > "$tmp/jobs.json" || fail "cannot list the jobs"
python3 - "$tmp/acked" "$tmp/jobs.json" "$acked_before" << 'EOF' || fail "acknowledged submissions are missing or doubled after PostgreSQL's failover"
import collections, json, sys
acked = dict(line.split() for line in open(sys.argv[1]) if line.strip())
doc = json.load(open(sys.argv[2]))
by_name = collections.defaultdict(list)
for j in doc["items"]:
    by_name[j["name"]].append(str(j["id"]))
missing = [k for k in acked if acked[k] not in by_name.get(k, [])]
doubled = {k: v for k, v in by_name.items() if len(v) > 1}
print(f"{len(acked)} acknowledged submissions ({sys.argv[3]} before the crash), all there once: {not missing and not doubled}")
if missing: print("missing:", missing[:10])
if doubled: print("doubled:", list(doubled.items())[:10])
sys.exit(1 if missing or doubled or len(acked) <= int(sys.argv[3]) else 0)
EOF
echo "standby failover ok"
