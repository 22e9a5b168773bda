#!/usr/bin/env bash
# The web console in a real browser (issue 7): `gpupool serve` with three node agents running
# jobs for real on fake GPUs, and playwright-core driving Debian's headless Chromium through
# tests/console/console_test.mjs. Screenshots go to ARTIFACT_DIR.
# Usage: console_test.sh GPUPOOL_BINARY ARTIFACT_DIR
# Exits 77 (skipped) only when Chromium or the npm packages are missing: scripts/setup.sh --test
# installs both, so CI always runs it.
set -u
bin=${1:?usage: console_test.sh GPUPOOL_BINARY ARTIFACT_DIR}
artifacts=${2:?usage: console_test.sh GPUPOOL_BINARY ARTIFACT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
command -v chromium > /dev/null || { echo "skip: no chromium (scripts/setup.sh --test installs it)"; exit 77; }
[ -d "$here/console/node_modules/playwright-core" ] || { echo "skip: run npm ci in tests/console (scripts/setup.sh --test does)"; exit 77; }

. "$here/lib/e2e.sh"

cat > "$tmp/config.yaml" << 'YAML'
scheduler: {tick_ms: 100}
tenants:
  - {name: research, quotas: {h100-80gb: {guaranteed: 2, borrow_limit: 4}}}
  - {name: product, quotas: {h100-80gb: {guaranteed: 2}, a100-40gb: {guaranteed: 2}}}
prices:
  flavors: {h100-80gb: {per_gpu_hour: "2.99"}, a100-40gb: {per_gpu_hour: "1.10"}}
nodes:
  - {name: n, count: 2, flavor: h100-80gb, gpus: 4, block: rack-a}
  - {name: m, count: 1, flavor: a100-40gb, gpus: 2, mig_gpus: 2, block: rack-b}
YAML
"$bin" serve --config "$tmp/config.yaml" --data-dir "$tmp/data" --listen 127.0.0.1:0 \
  --heartbeat-interval-ms 200 --heartbeat-timeout-ms 5000 > "$tmp/daemon.log" 2>&1 &
pids+=($!)
until_ok 20 test -s "$tmp/data/port" || fail "daemon did not start"
url="http://127.0.0.1:$(cat "$tmp/data/port")"
admin=$(cat "$tmp/data/admin.token")
# Jobs run for real through agents on fake GPUs; the MIG node's agent applies the layouts the
# scheduler chooses (a node without an agent would be not_ready).
for n in n-0 n-1 m-0; do
  gpus=fake:4xh100-80gb
  [ "$n" = m-0 ] && gpus="fake:2xa100-40gb:mig --allow-mig-changes"
  # shellcheck disable=SC2086
  GPUPOOL_URL=$url GPUPOOL_TOKEN=$admin "$bin" agent --name "$n" --gpus $gpus \
    --work-dir "$tmp/work-$n" --allow-root '*' > "$tmp/agent-$n.log" 2>&1 &
  pids+=($!)
done
for n in n-0 n-1 m-0; do
  until_ok 20 grep -q '"msg":"registered"' "$tmp/agent-$n.log" || fail "agent $n did not register"
done

mkdir -p "$artifacts"
rm -f "$artifacts"/*.png
node "$here/console/console_test.mjs" "$url" "$admin" "$artifacts" || fail "browser test failed"
echo "screenshots: $artifacts"
