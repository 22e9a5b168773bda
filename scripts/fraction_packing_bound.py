#!/usr/bin/env python3
"""How well can the fractions of one packing run be packed at all (issue 21 item 4).

For each seed, the openb pods that arrive by 100% in the packing protocol (the same shuffle and
re-sampling as src/sim/packing/experiment.cc, with its mt19937_64 and rejection sampling) are
taken, and their fractions (one GPU, under 1000 milli) packed onto 1000-milli GPUs three ways:
best fit decreasing, minimum bin slack (the pairing table's packer, pairing.h), and optimally,
by an integer program over every maximal pattern of the sizes solved by GLPK (`apt-get install
glpk-utils`; skipped when glpsol is missing). Every GPU a placed fraction uses wastes what the
fractions leave on it, so the optimum is a floor under "unallocated at 100%" for any run that
places every fraction. Prints the waste of each as % of the cluster's GPUs.

  scripts/fraction_packing_bound.py [LIST (default)] [SEEDS (42-51)]
"""
import bisect, collections, csv, os, shutil, subprocess, sys, tempfile

MASK = (1 << 64) - 1
CAP = 1000


class Mt64:  # std::mt19937_64
    def __init__(self, seed):
        self.mt = [seed & MASK] + [0] * 311
        for i in range(1, 312):
            self.mt[i] = (6364136223846793005 * (self.mt[i - 1] ^ (self.mt[i - 1] >> 62)) + i) & MASK
        self.i = 312

    def __call__(self):
        if self.i >= 312:
            for k in range(312):
                y = (self.mt[k] & 0xFFFFFFFF80000000) | (self.mt[(k + 1) % 312] & 0x7FFFFFFF)
                self.mt[k] = self.mt[(k + 156) % 312] ^ (y >> 1) ^ (0xB5026F5AA96619E9 if y & 1 else 0)
            self.i = 0
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & MASK


def below(rng, n):  # experiment.cc's Below
    limit = MASK - MASK % n
    while True:
        x = rng()
        if x < limit:
            return x % n


def arrived(pods, cap, seed):
    rng = Mt64(seed)
    rng()
    order = list(pods)
    for i in range(len(order), 1, -1):
        j = below(rng, i)
        order[i - 1], order[j] = order[j], order[i - 1]
    target, total = round(1.3 * cap), sum(n * m for _, n, m in pods)
    while total < target:
        c = pods[below(rng, len(pods))]
        if total + c[2] > target:
            break
        total += c[1] * c[2]
        order.append(c)
    out, t = [], 0
    for p in order:
        if t + p[1] * p[2] > cap:
            break
        t += p[1] * p[2]
        out.append(p)
    return out


def bfd_bins(req):
    rooms = []
    for q in sorted(req, reverse=True):
        i = bisect.bisect_left(rooms, q)
        if i == len(rooms):
            bisect.insort(rooms, CAP - q)
        else:
            bisect.insort(rooms, rooms.pop(i) - q)
    return len(rooms)


def mbs_bins(req):
    left = collections.Counter(req)
    bins = 0
    while sum(left.values()):
        big = max(s for s in left if left[s])
        left[big] -= 1
        room, best = CAP - big, {0: ()}
        live = sorted((s for s in left if left[s]), reverse=True)
        for s in live:
            nxt = {}
            for tot, pat in best.items():
                for k in range(min(left[s], (room - tot) // s) + 1):
                    if tot + k * s not in nxt or pat + (k,) > nxt[tot + k * s]:
                        nxt[tot + k * s] = pat + (k,)
            best = nxt
        for s, k in zip(live, best[max(best)]):
            left[s] -= k
        bins += 1
    return bins


def optimal_bins(req):
    if shutil.which("glpsol") is None:
        return None
    count = collections.Counter(req)
    sizes = sorted(count, reverse=True)
    pats = []

    def walk(i, room, cur):
        if i == len(sizes):
            if any(cur) and all(s > room or cur[j] >= count[s] for j, s in enumerate(sizes)):
                pats.append(tuple(cur))
            return
        for k in range(min(room // sizes[i], count[sizes[i]]), -1, -1):
            walk(i + 1, room - k * sizes[i], cur + [k])

    walk(0, CAP, [])
    with tempfile.TemporaryDirectory() as d:
        lp, out = os.path.join(d, "m.lp"), os.path.join(d, "m.txt")
        with open(lp, "w") as f:
            f.write("Minimize\n obj: " + " + ".join(f"x{p}" for p in range(len(pats))) + "\nSubject To\n")
            for j, s in enumerate(sizes):
                terms = " + ".join(f"{pats[p][j]} x{p}" for p in range(len(pats)) if pats[p][j])
                f.write(f" c{j}: {terms} >= {count[s]}\n")
            f.write("General\n " + " ".join(f"x{p}" for p in range(len(pats))) + "\nEnd\n")
        subprocess.run(["glpsol", "--lp", lp, "--tmlim", "300", "-o", out], capture_output=True, check=True)
        status = next(l for l in open(out) if l.startswith("Status:"))
        objective = next(l for l in open(out) if l.startswith("Objective:"))
        if "INTEGER OPTIMAL" not in status:
            return None
        return int(objective.split("=")[1].split()[0])


def main():
    lst = sys.argv[1] if len(sys.argv) > 1 else "default"
    lo, _, hi = (sys.argv[2] if len(sys.argv) > 2 else "42-51").partition("-")
    root = os.environ.get("GPUPOOL_TRACES", os.path.join(os.path.dirname(__file__), "../../shared/traces"))
    csvdir = os.path.join(root, "alibaba-gpu-v2023-openb/csv")
    cap = sum(int(r["gpu"]) * CAP for r in csv.DictReader(open(f"{csvdir}/openb_node_list_gpu_node.csv")) if int(r["gpu"]) > 0)
    pods = sorted(((r["name"], int(r["num_gpu"]), int(r["gpu_milli"]))
                   for r in csv.DictReader(open(f"{csvdir}/openb_pod_list_{lst}.csv"))), key=lambda p: p[0].encode())
    sums = collections.Counter()
    seeds = range(int(lo), int(hi or lo) + 1)
    print("seed  fractions  bfd_gpus  mbs_gpus  optimal_gpus  bfd_waste%  mbs_waste%  optimal_waste%")
    for seed in seeds:
        req = [m for _, n, m in arrived(pods, cap, seed) if n == 1 and 0 < m < CAP]
        used = sum(req)
        b, m, o = bfd_bins(req), mbs_bins(req), optimal_bins(req)
        pct = lambda bins: 100.0 * (bins * CAP - used) / cap
        sums["b"] += pct(b); sums["m"] += pct(m); sums["o"] += pct(o) if o else float("nan")
        print(f"{seed:4d}  {len(req):9d}  {b:8d}  {m:8d}  {o if o else '-':>12}  {pct(b):10.3f}  {pct(m):10.3f}  "
              f"{pct(o) if o else float('nan'):14.3f}")
    n = len(seeds)
    print(f"mean{'':31}  {sums['b'] / n:10.3f}  {sums['m'] / n:10.3f}  {sums['o'] / n:14.3f}")


main()
