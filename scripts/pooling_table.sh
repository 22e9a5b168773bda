#!/usr/bin/env bash
# Pooled against partitioned under every queue policy (issue 19 item 3): the nine Philly VCs
# overlaid from t = 0 (docs/design/simulator.md), at capacity scale 1.0 and 0.5, replayed pooled
# and partitioned under fifo, las, srsf and sjf. Prints, per scale, the overall figures and each
# tenant's p95 wait pooled and partitioned, and whether pooling was no worse for every tenant.
#
#   scripts/pooling_table.sh [SCALES ("1 0.5")] [POLICIES ("fifo las srsf sjf")]
#   (GPUPOOL=path/to/gpupool to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
scales=${1:-1 0.5}
policies=${2:-fifo las srsf sjf}
traces=${GPUPOOL_TRACES:-../shared/traces}/philly-pcs-per-vc
if [ -z "${GPUPOOL:-}" ]; then
  ./scripts/build.sh >/dev/null
  GPUPOOL=./build/src/cli/gpupool
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Two runs at a time (the machine this was measured on has two cores).
for scale in $scales; do
  for policy in $policies; do
    for mode in pooled partitioned; do
      extra=()
      [ "$mode" = partitioned ] && extra=(--partitioned)
      "$GPUPOOL" sim replay --jobs "$traces/philly_pcs_shared_jobs.csv" --tenants "$traces/tenants.csv" \
        --capacity-scale "$scale" --queue-policy "$policy" --no-timing \
        --json "$work/$scale-$policy-$mode.json" "${extra[@]}" >/dev/null &
    done
    wait
  done
done

python3 - "$work" "$scales" "$policies" <<'EOF'
import json, os, sys
work, scales, policies = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
h = lambda s: f"{float(s) / 3600:.2f} h"
for scale in scales:
    runs = {(p, m): json.load(open(os.path.join(work, f"{scale}-{p}-{m}.json")))
            for p in policies for m in ["pooled", "partitioned"]}
    any_run = runs[(policies[0], "pooled")]
    print(f"\n**Capacity scale {scale}** ({any_run['capacity_gpus']} GPUs)\n")
    print("| queue policy | avg JCT pooled | avg JCT partitioned | p95 wait pooled | p95 wait partitioned "
          "| preemptions pooled | tenants no worse pooled (p95 wait) |")
    print("|---|---:|---:|---:|---:|---:|:---:|")
    for p in policies:
        po, pa = runs[(p, "pooled")], runs[(p, "partitioned")]
        tenants = sorted(po["tenants"])
        ok = [t for t in tenants
              if po["tenants"][t]["p95_wait_s"] <= pa["tenants"][t]["p95_wait_s"] + 1e-9]
        print(f"| {p} | {h(po['overall']['avg_jct_s'])} | {h(pa['overall']['avg_jct_s'])} | "
              f"{h(po['overall']['p95_wait_s'])} | {h(pa['overall']['p95_wait_s'])} | "
              f"{po['overall']['preemptions']} | {len(ok)} of {len(tenants)} |")
    print()
    print("| tenant | " + " | ".join(f"{p} pooled / partitioned" for p in policies) + " |")
    print("|---|" + "---:|" * len(policies))
    for t in sorted(any_run["tenants"]):
        cells = []
        for p in policies:
            a = runs[(p, "pooled")]["tenants"][t]["p95_wait_s"]
            b = runs[(p, "partitioned")]["tenants"][t]["p95_wait_s"]
            cells.append(f"{h(a)} / {h(b)}" + ("" if a <= b + 1e-9 else " **worse**"))
        print(f"| {t} | " + " | ".join(cells) + " |")
EOF
