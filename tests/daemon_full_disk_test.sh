#!/usr/bin/env bash
# A real full disk under `gpupool serve`: its data directory on a small tmpfs, jobs submitted
# until the disk is full. While it is full the daemon answers 503 to writes, keeps serving
# reads and /healthz, and every acknowledged job is still there; once there is room again it
# acknowledges writes without a restart; after a kill -9 every acknowledged job is there.
# Needs root and mount (skipped, exit 77, where tmpfs cannot be mounted).
# Usage: daemon_full_disk_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_full_disk_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
disk=$tmp/disk
mkdir -p "$disk"
if ! mount -t tmpfs -o size=3m tmpfs "$disk" 2> /dev/null; then
  echo "SKIP: cannot mount a tmpfs here"
  exit 77
fi
trap 'umount -l "$disk" 2> /dev/null; cleanup' EXIT
one_tenant_config "$tmp/config.yaml"
cat > "$tmp/fill.py" << 'EOF2'
# fill.py URL TOKEN PREFIX MAX IDS: submits (each with a large command, to fill the disk) until
# MAX or the first refusal; appends acknowledged ids to IDS; prints the first refusal's status.
import http.client, json, sys, urllib.parse
url, token, prefix, most, ids = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
with open(ids, "a") as out:
    for i in range(most):
        body = {"tenant": "a", "name": f"{prefix}-{i}", "priority_class": "batch", "replicas": 1,
                "resources": {"flavor": "h100-80gb", "gpus": 1}, "duration_estimate_s": 3600,
                "command": ["echo"] + ["x" * 4000] * 7}
        c.request("POST", "/v1/jobs", json.dumps(body), h)
        r = c.getresponse(); d = r.read()
        if r.status != 201:
            print(r.status, d.decode()[:200]); sys.exit(0)
        out.write(json.loads(d)["id"] + "\n"); out.flush()
print("none")
EOF2
cat > "$tmp/check.py" << 'EOF2'
# check.py URL TOKEN IDS: exits 1 naming what is missing unless every job answers 200.
import http.client, sys, urllib.parse
url, token, ids = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().split()
u = urllib.parse.urlparse(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
missing = []
for i in ids:
    c.request("GET", "/v1/jobs/" + i, headers={"Authorization": "Bearer " + token})
    r = c.getresponse(); r.read()
    if r.status != 200: missing.append(f"{i}: {r.status}")
if missing: sys.exit(f"{len(missing)} of {len(ids)} acknowledged jobs missing, e.g. {missing[:5]}")
print(f"all {len(ids)} acknowledged jobs present")
EOF2
start() {
  rm -f "$disk/data/port"
  "$bin" serve --config "$tmp/config.yaml" --data-dir "$disk/data" --listen 127.0.0.1:0 \
    --snapshot-every-records 20 >> "$tmp/daemon.log" 2>&1 &
  pid=$!
  pids+=($pid)
  until_ok 10 test -s "$disk/data/port" || fail "serve did not start"
  url="http://127.0.0.1:$(cat "$disk/data/port")"
}

start
token=$(cat "$disk/data/admin.token")
: > "$tmp/ids"
refusal=$(python3 "$tmp/fill.py" "$url" "$token" full 2000 "$tmp/ids") || fail "filling: $refusal"
acked=$(wc -l < "$tmp/ids")
echo "disk full after $acked acknowledged jobs: $refusal ($(df -h "$disk" | tail -1 | awk '{print $3 " of " $2}'))"
case $refusal in 503*) ;; *) fail "the full disk did not give 503: $refusal";; esac
[ "$acked" -gt 5 ] || fail "too few jobs fit before the disk was full"
# Full: reads and /healthz still answer; what was acknowledged is there; writes still say 503.
curl -sf -o /dev/null "$url/healthz" || fail "/healthz does not answer on a full disk"
python3 "$tmp/check.py" "$url" "$token" "$tmp/ids" || fail "an acknowledged job is missing on the full disk"
# Still full: writes go on being refused (a refused write may free some space, a failed snapshot
# its .tmp file, so a few more may fit first; each acknowledged one is checked below).
again=$(python3 "$tmp/fill.py" "$url" "$token" again 2000 "$tmp/ids")
case $again in 503*) ;; *) fail "writes on the full disk were not refused: $again";; esac
kill -0 $pid || fail "the daemon died on the full disk"
# Room again: writes are acknowledged without a restart.
mount -o remount,size=64m "$disk" || fail "remount"
sleep 0.5
more=$(python3 "$tmp/fill.py" "$url" "$token" more 20 "$tmp/ids")
[ "$more" = none ] || fail "with room again, writes are still refused: $more"
python3 "$tmp/check.py" "$url" "$token" "$tmp/ids" || fail "an acknowledged job is missing after the disk had room again"
# kill -9: every acknowledged job survives.
kill -9 $pid; wait $pid 2> /dev/null
start
python3 "$tmp/check.py" "$url" "$token" "$tmp/ids" || fail "an acknowledged job is missing after kill -9"
# The snapshot that met the full disk failed, kept the journal, and a later one was written.
grep -q '"snapshot failed; the journal keeps every record.*No space left' "$tmp/daemon.log" ||
  echo "note: no snapshot met the full disk this run"
grep '"snapshot written"' "$tmp/daemon.log" | tail -1 | grep -q . || fail "no snapshot was written"
echo "daemon full disk ok ($(wc -l < "$tmp/ids") acknowledged jobs)"
