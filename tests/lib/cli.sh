# Shared by the client-verb scripts (cli_client_test.sh, cli_admin_test.sh); source it after
# `set -u` with $bin set to the gpupool binary. Gives $tmp (removed at exit), gp ARGS... (runs the
# client: stdout in $tmp/out, stderr in $tmp/err, exit code in $rc), the checks expect_rc,
# out_has, out_lacks, err_has and json (a Python expression over the JSON on stdout, as d), and
# start_daemon CONFIG [SERVE FLAGS...] (a real `gpupool serve` on a free loopback port, stopped at
# exit; sets $url and the admin $token). Exits 77 (skipped) without python3.
command -v python3 > /dev/null || { echo "skipped: no python3"; exit 77; }
tmp=$(mktemp -d)
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2> /dev/null; wait "$daemon" 2> /dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- last command: ${last[*]}  (exit $rc)" >&2
  echo "--- stdout:" >&2; cat "$tmp/out" >&2
  echo "--- stderr:" >&2; cat "$tmp/err" >&2
  exit 1
}
# gp ARGS...: runs the client; its output lands in $tmp/out and $tmp/err, its exit code in $rc.
gp() {
  last=("$@")
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
}
expect_rc() { [ "$rc" -eq "$1" ] || fail "$2: want exit $1"; }
out_has() { grep -qE -- "$1" "$tmp/out" || fail "stdout lacks /$1/"; }
out_lacks() { ! grep -qE -- "$1" "$tmp/out" || fail "stdout has /$1/"; }
err_has() { grep -qE -- "$1" "$tmp/err" || fail "stderr lacks /$1/"; }
json() { python3 -c "import json,sys; d=json.load(open('$tmp/out')); $1" || fail "JSON check: $1"; }
last=(); rc=0; : > "$tmp/out"; : > "$tmp/err"

start_daemon() {
  local config=$1
  shift
  "$bin" serve --config "$config" --data-dir "$tmp/data" --listen 127.0.0.1:0 "$@" > "$tmp/daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 100); do
    [ -s "$tmp/data/port" ] && [ -s "$tmp/data/admin.token" ] && break
    kill -0 "$daemon" 2> /dev/null || { cat "$tmp/daemon.log" >&2; echo "FAIL: daemon exited" >&2; exit 1; }
    sleep 0.1
  done
  [ -s "$tmp/data/port" ] || { cat "$tmp/daemon.log" >&2; echo "FAIL: no port file" >&2; exit 1; }
  url="http://127.0.0.1:$(cat "$tmp/data/port")"
  token=$(cat "$tmp/data/admin.token")
}
