#!/usr/bin/env bash
# A first run of gpupool on a real GPU (issue 22), in one call, at most 5 minutes:
#   1. builds gpupool-full and gpupool-nvml-discover (Release) unless GPUPOOL_BIN_DIR holds them;
#   2. records what NVML reports: gpupool-nvml-discover (names, UUIDs, memory, MIG mode and
#      devices, ECC, XIDs, driver and CUDA versions, NVLink) and nvidia-smi's own view;
#   3. starts `gpupool serve` on loopback and `gpupool agent --gpus nvml` against it;
#   4. submits one 1-GPU job that runs `nvidia-smi -L` (and a CUDA program when nvcc is there,
#      else nvidia-smi --query-gpu) and checks it saw exactly the GPU gpupool granted
#      (CUDA_VISIBLE_DEVICES equal to the granted UUID, and nvidia-smi -L listing only it).
# It never changes MIG mode or resets a GPU: the agent runs without --allow-mig-changes, and
# nothing here calls nvidia-smi -mig, -r or any other setter.
# Everything goes to OUT (the argument, else $OUT, else ./real-gpu-out): summary.txt first.
# Rehearsal without a GPU: GPUPOOL_NVML_LIBRARY=<fake libnvidia-ml> with
# GPUPOOL_FAKE_NVML_SCENARIO=one-h200 (tests/gpu/rehearse.sh does this).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-$PWD/real-gpu-out}}
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
deadline=$(( $(date +%s) + ${GPUPOOL_CHECK_SECONDS:-290} ))
left() { echo $(( deadline - $(date +%s) )); }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; sleep 1; for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
fail() { say "FAIL: $*"; exit 1; }

say "real GPU check, $(date -u +%FT%TZ), host $(hostname)"
command -v nvidia-smi > /dev/null && nvidia-smi > "$out/nvidia-smi.txt" 2>&1
command -v nvidia-smi > /dev/null && nvidia-smi -q > "$out/nvidia-smi-q.txt" 2>&1
command -v nvidia-smi > /dev/null && nvidia-smi -L > "$out/nvidia-smi-L.txt" 2>&1
uname -a > "$out/uname.txt"

# 1. Binaries.
bin_dir=${GPUPOOL_BIN_DIR:-}
if [ -z "$bin_dir" ]; then
  build="$here/build-gpu"
  say "building (Release) into $build"
  { cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    timeout "$(( $(left) - 120 ))" cmake --build "$build" -j "$(nproc)" --target gpupool-full gpupool-nvml-discover; } \
    > "$out/build.log" 2>&1 || fail "build failed (build.log)"
  bin_dir="$build/src"
fi
gp=$(find "$bin_dir" -name gpupool-full -type f -perm -u+x | head -1)
disc=$(find "$bin_dir" -name gpupool-nvml-discover -type f -perm -u+x | head -1)
[ -x "$gp" ] && [ -x "$disc" ] || fail "no gpupool-full or gpupool-nvml-discover under $bin_dir"

# 2. What NVML reports, read-only.
timeout 60 "$disc" --wait-ms 200 > "$out/discover.json" 2> "$out/discover.err"
rc=$?
say "gpupool-nvml-discover: exit $rc"
[ $rc = 0 ] || fail "discovery failed: $(head -c 400 "$out/discover.json" "$out/discover.err")"
python3 - "$out/discover.json" << 'EOF' | tee -a "$summary"
import json, sys
d = json.load(open(sys.argv[1]))
for g in d.get("gpus", []):
    print(f"  GPU {g.get('index')}: {g.get('name')} {g.get('uuid')} model={g.get('model') or '(not a catalogue model)'} "
          f"memory={g.get('memory_mib')} MiB mig={g.get('mig_current')}/{g.get('mig_pending')} "
          f"instances={len(g.get('gpu_instances', []))} links={len(g.get('nvlinks', []))} warnings={g.get('warnings', [])}")
for e in d.get("health", []): print("  health:", e)
print("  system:", d.get("system"), " notes:", d.get("notes"))
EOF

# 3. The daemon and the agent. The node is declared with what discovery found.
read -r flavor count uuid0 < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
g = d["gpus"]
print(g[0].get("model") or "unknown", len(g), g[0]["uuid"])' "$out/discover.json")
[ "$flavor" != unknown ] || fail "GPU 0 is not a catalogue model: the agent cannot register it"
mig=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpus"][0].get("mig_current"))' "$out/discover.json")
mig_decl=
if [ "$mig" = enabled ]; then
  layout=$(python3 - "$out/discover.json" << 'EOF'
import json, sys
g = json.load(open(sys.argv[1]))["gpus"][0]
print(",".join("%s@%s" % (i["profile"], i["start"]) for i in g.get("gpu_instances", [])))
EOF
)
  mig_decl=", mig_gpus: $count, mig_layout: \"$layout\""
fi
cat > "$out/config.yaml" << EOF
scheduler: {tick_ms: 100}
tenants:
  - {name: check, quotas: {$flavor: {guaranteed: $count}}}
nodes:
  - {name: gpu, count: 1, flavor: $flavor, gpus: $count$mig_decl}
EOF
work=$(mktemp -d)
"$gp" serve --config "$out/config.yaml" --data-dir "$work/data" --listen 127.0.0.1:0 \
  --heartbeat-interval-ms 500 --heartbeat-timeout-ms 10000 > "$out/daemon.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/data/port" ] && break; sleep 0.1; done
[ -s "$work/data/port" ] || fail "the daemon did not start (daemon.log)"
export GPUPOOL_URL="http://127.0.0.1:$(cat "$work/data/port")"
admin=$(cat "$work/data/admin.token")
(umask 077; echo "$admin" > "$work/agent.token")
env -u GPUPOOL_TOKEN "$gp" agent --name gpu-0 --gpus nvml --token-file "$work/agent.token" \
  --work-dir "$work/agent" --allow-root '*' --rediscover-interval-s 5 > "$out/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q '"msg":"registered"' "$out/agent.log" && break; sleep 0.1; done
grep -q '"msg":"registered"' "$out/agent.log" || fail "the agent did not register: $(tail -n 5 "$out/agent.log")"
say "agent registered: $(grep -o '"flavor":"[^"]*","gpus":[0-9]*' "$out/agent.log" | head -1)"
curl -sf -H "Authorization: Bearer $admin" "$GPUPOOL_URL/v1/nodes/gpu-0" > "$out/node.json" || true

# 4. One job on one GPU (or one MIG device when GPU 0 is in MIG mode with instances).
probe='echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; nvidia-smi -L; '
if [ -n "${GPUPOOL_CHECK_PROBE:-}" ]; then
  probe="$GPUPOOL_CHECK_PROBE; "  # the rehearsal, where there is no nvidia-smi
elif command -v nvcc > /dev/null; then
  cat > "$work/dev.cu" << 'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { printf("cuda: %s\n", cudaGetErrorString(e)); return 2; }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p; cudaGetDeviceProperties(&p, i);
    char uuid[64]; char* o = uuid;
    for (int k = 0; k < 16; ++k) o += sprintf(o, "%02x", (unsigned char)p.uuid.bytes[k]);
    printf("cuda device %d: %s uuid=%s\n", i, p.name, uuid);
  }
  float* d; if (cudaMalloc(&d, 1 << 20) != cudaSuccess) return 3;
  cudaFree(d);
  printf("cuda devices: %d\n", n);
  return 0;
}
EOF
  chmod 755 "$work"
  nvcc -o "$work/dev" "$work/dev.cu" > "$out/nvcc.log" 2>&1 && probe="$probe $work/dev; " || say "nvcc failed (nvcc.log)"
fi
[ -n "${GPUPOOL_CHECK_PROBE:-}" ] && probe="$probe true" ||
  probe="$probe nvidia-smi --query-gpu=index,uuid,name,memory.total,mig.mode.current,driver_version --format=csv"
submit=(submit --tenant check --name real-gpu --flavor "$flavor" --duration 120 -o json)
if [ "$mig" = enabled ]; then
  profile=$(python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpus"][0]; i=g.get("gpu_instances",[]); print(i[0]["profile"] if i else "")' "$out/discover.json")
  [ -n "$profile" ] || fail "GPU 0 is in MIG mode without instances; this check never creates any"
  submit+=(--mig-profile "$profile")
else
  submit+=(--gpus 1)
fi
job=$(GPUPOOL_TOKEN=$admin "$gp" "${submit[@]}" -- sh -c "$probe" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
  fail "submit failed"
say "job $job submitted"
state=
while [ "$(left)" -gt 5 ]; do
  state=$(GPUPOOL_TOKEN=$admin "$gp" describe job "$job" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  case $state in succeeded|failed|cancelled) break ;; esac
  sleep 0.5
done
GPUPOOL_TOKEN=$admin "$gp" describe job "$job" -o json > "$out/job.json" 2>&1
sleep 1
GPUPOOL_TOKEN=$admin "$gp" logs "$job" > "$out/job.stdout" 2>&1
GPUPOOL_TOKEN=$admin "$gp" logs "$job" --stderr > "$out/job.stderr" 2>&1
say "job $job: $state"
sed 's/^/  | /' "$out/job.stdout" | head -20 | tee -a "$summary"
[ "$state" = succeeded ] || fail "the job did not succeed (job.json, job.stderr)"
seen=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$out/job.stdout")
granted=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: r = json.loads(line)
    except ValueError: continue
    if r.get("msg") == "replica started" and r.get("job") == sys.argv[2]: print(",".join(r.get("devices", [])))
' "$out/agent.log" "$job" | tail -1)
say "granted: $granted; the job saw CUDA_VISIBLE_DEVICES=$seen"
[ -n "$granted" ] && [ "$seen" = "$granted" ] || fail "the job saw another device than the one granted"
listed=$(grep -c '^GPU \|^  MIG ' "$out/job.stdout")
say "nvidia-smi -L in the job listed $listed device line(s) (it lists every GPU of the node: CUDA_VISIBLE_DEVICES does not hide GPUs from NVML)"
say "PASS"
