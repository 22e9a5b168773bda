#!/usr/bin/env bash
# Hygiene found by an attack (issue 18 item 5), against a real daemon:
#  - failed authentication is limited per source address: past 20 failures in 10 s the source
#    gets 429 with Retry-After before any token is looked at (a good one too), the daemon logs it
#    once, without the token, and the source may try again after the window;
#  - what other users wrote cannot drive the terminal: a job whose command carries escape
#    sequences prints with them replaced, in tables and in describe;
#  - /metrics can require a token (--metrics-require-token): a metrics-reader's or an admin's.
# (The data directory's modes: daemon_journal_test.sh.) Usage: daemon_hygiene_test.sh GPUPOOL_BINARY
set -u
bin=${1:?usage: daemon_hygiene_test.sh GPUPOOL_BINARY}
. "$(dirname "$0")/lib/e2e.sh"
one_tenant_config "$tmp/config.yaml"
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 >> "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/admin.token" || fail "the daemon did not start"
url="http://127.0.0.1:$(cat "$tmp/data/port")"
token=$(cat "$tmp/data/admin.token")
code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$url/v1/jobs"; }

# 1. Failed authentication, limited per source.
bad=wrong-token-$RANDOM$RANDOM
codes=
for i in $(seq 1 21); do codes+="$(code "$bad") "; done
[ "$(echo "$codes" | tr ' ' '\n' | grep -c 401)" = 21 ] || fail "the first 21 wrong tokens did not all get 401: $codes"
[ "$(code "$bad")" = 429 ] || fail "the 22nd wrong token did not get 429"
[ "$(code "$token")" = 429 ] || fail "a good token from a refused source was looked at"
retry=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $bad" "$url/v1/jobs" | tr -d '\r' | sed -n 's/^Retry-After: //p')
[ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 10 ] || fail "no Retry-After of 1..10 s: '$retry'"
grep -q '"msg":"repeated failed authentication' "$tmp/daemon.log" || fail "the refusal was not logged"
[ "$(grep -c '"msg":"repeated failed authentication' "$tmp/daemon.log")" = 1 ] || fail "the refusal was logged more than once"
if grep -q "$bad" "$tmp/daemon.log"; then fail "the log holds the wrong token"; fi
[ "$(curl -sf "$url/healthz")" != "" ] || fail "/healthz is refused too"
echo "21 wrong tokens: 401; then 429 (Retry-After $retry s), a good token too; logged once, without the token"
sleep "$retry"
until_ok 3 test "$(code "$token")" = 200 || fail "the source is still refused after its window"
echo "after the window the source is served again"

# 2. Escape sequences in what other users wrote.
esc=$(printf '\033[2J\033]0;pwned\007')
export GPUPOOL_URL="$url" GPUPOOL_TOKEN="$token"
id=$("$bin" submit --tenant a --name hostile --flavor h100-80gb --gpus 1 --duration 60 -o json -- echo "$esc" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') || fail "cannot submit"
for view in "get jobs" "describe job $id" "get job $id -o yaml"; do
  out=$("$bin" $view 2>&1) || fail "gpupool $view failed: $out"
  if printf '%s' "$out" | grep -q "$(printf '\033')"; then fail "gpupool $view printed an ESC"; fi
  if printf '%s' "$out" | grep -q "$(printf '\007')"; then fail "gpupool $view printed a BEL"; fi
done
"$bin" describe job "$id" | grep -q '?\[2J?\]0;pwned?' || fail "describe does not show the replaced sequence: $("$bin" describe job "$id")"
"$bin" get job "$id" -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "\x1b[2J" in " ".join(d["command"])' ||
  fail "JSON output lost the command's escape (it is escaped, not replaced)"
echo "escape sequences print as '?' in tables, describe and YAML; JSON keeps them escaped"

# 3. /metrics behind a token (issue 18 item 1): --metrics-require-token.
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data-m" --listen 127.0.0.1:0 --metrics-require-token \
  >> "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data-m/admin.token" || fail "the second daemon did not start"
murl="http://127.0.0.1:$(cat "$tmp/data-m/port")"
madmin=$(cat "$tmp/data-m/admin.token")
reader=$("$bin" create token scraper --role metrics-reader --url "$murl" --token "$madmin" -o json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])') || fail "no metrics-reader token"
mcode() { curl -s -o "$tmp/mbody" -w '%{http_code}' ${1:+-H "Authorization: Bearer $1"} "$murl${2:-/metrics}"; }
[ "$(mcode "")" = 401 ] || fail "/metrics answered without a token"
[ "$(mcode "$reader")" = 200 ] && grep -q '^gpupool_' "$tmp/mbody" || fail "/metrics refused the metrics-reader"
[ "$(mcode "$madmin")" = 200 ] || fail "/metrics refused the cluster admin"
[ "$(mcode "$reader" /v1/jobs)" = 403 ] || fail "a metrics-reader token opened /v1/jobs"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")" = 200 ] || fail "/metrics needs a token without the flag"
echo "/metrics with --metrics-require-token: 401 without a token, 200 for metrics-reader and admin; the reader gets 403 elsewhere"
echo "hygiene ok"
