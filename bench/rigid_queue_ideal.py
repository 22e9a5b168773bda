#!/usr/bin/env python3
"""An idealised yardstick for scripts/pcs_table.sh: the jobs of one VC on a fluid cluster of
CAP GPUs (no nodes, so no fragmentation), every STEP seconds all jobs re-ordered by the policy
and started greedily in that order (a job that does not fit is skipped, a running one that is
not chosen again is preempted at no cost, with its progress kept). Rigid jobs, as gpupool's.
What it prints is what a queue policy can reach on these jobs without elasticity; gpupool's
replay adds nodes of 8 GPUs, minimum runtimes and preemption budgets.

  bench/rigid_queue_ideal.py JOBS.csv [CAP (64)] [STEP (600)]

JOBS.csv: philly_pcs_shared_jobs.csv rows (submit_time_s, num_gpus, duration_s) of one VC."""
import bisect
import csv
import math
import sys


def replay(jobs, key, cap, step):
    for j in jobs:
        j["ran"], j["end"] = 0, None
    t, done = 0, 0
    while done < len(jobs):
        live = sorted((j for j in jobs if j["sub"] <= t and j["end"] is None), key=lambda j: (key(j), j["sub"]))
        free = cap
        for j in live:
            if j["g"] > free:
                continue
            free -= j["g"]
            if j["d"] - j["ran"] <= step:
                j["end"] = t + j["d"] - j["ran"]
                done += 1
            j["ran"] += step
        t += step
    return sum(j["end"] - j["sub"] for j in jobs) / len(jobs)


def gittins(services, width=1.25):
    """Tiresias' Gittins index of a job that has attained `a` GPU-seconds, for the given job
    sizes (GPU-seconds): the best, over quotas D, of P(done within D more) / E[service spent
    within D more], both given S > a. Computed at attained service binned by factors of `width`
    and over at most about 200 quotas; a higher index goes first."""
    s = sorted(services)
    pre = [0.0]
    for v in s:
        pre.append(pre[-1] + v)
    memo = {}

    def index(a):
        k = 0 if a <= 0 else int(math.log(a) / math.log(width)) + 1
        if k not in memo:
            a0 = 0 if k == 0 else width ** (k - 1)
            i = bisect.bisect_right(s, a0)
            m, best = len(s) - i, 0.0
            for j in range(i, len(s), max(1, m // 200)):
                d = s[j] - a0
                jj = bisect.bisect_right(s, a0 + d)
                spent = (pre[jj] - pre[i]) - (jj - i) * a0 + (len(s) - jj) * d
                if d > 0 and spent > 0:
                    best = max(best, (jj - i) / spent)
            memo[k] = best
        return memo[k]

    return index


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    step = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    jobs = [{"sub": int(r["submit_time_s"]), "g": int(r["num_gpus"]), "d": int(r["duration_s"])} for r in rows]
    thresholds = [3600, 36000, 360000]  # gpupool's default las queues, GPU-seconds
    policies = {
        "fifo": lambda j: 0,
        "srsf": lambda j: j["g"] * (j["d"] - j["ran"]),
        "las (gpupool's three thresholds)": lambda j: sum(j["g"] * j["ran"] >= x for x in thresholds),
        "las (continuous)": lambda j: j["g"] * j["ran"],
    }
    # Gittins with the VC's own job sizes known in advance: more than any scheduler could know.
    index = gittins([j["g"] * j["d"] for j in jobs])
    policies["gittins (the sizes known)"] = lambda j: -index(j["g"] * j["ran"])
    for name, key in policies.items():
        print(f"{name}: avg JCT {replay(jobs, key, cap, step):,.0f} s")


if __name__ == "__main__":
    main()
