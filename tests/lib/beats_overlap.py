# The beats of the end-to-end tests' replicas ("JOB ATTEMPT DEVICE NANOS" lines, one every 0.1 s
# from each running attempt): no two attempts of a job, and no two replicas on one GPU, may have
# beaten in overlapping intervals. Prints the attempts per job and the closest handovers; exits
# 1 on an overlap. Usage: beats_overlap.py BEATS_FILE
import collections, sys
spans = collections.defaultdict(lambda: [None, None])  # (job, attempt, device) -> [first, last]
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) != 4: continue
    s = spans[(w[0], w[1], w[2])]
    t = int(w[3])
    s[0] = t if s[0] is None else min(s[0], t)
    s[1] = t if s[1] is None else max(s[1], t)
def check(groups, what):
    closest = None
    for key, items in groups.items():
        items.sort(key=lambda x: x[1][0])
        last_name, last_end = items[0][0], items[0][1][1]
        for name, (first, end) in items[1:]:
            gap = first - last_end
            if gap <= 0:
                print(f"{what} {key}: {last_name} beat until {last_end}, {name} from {first}")
                return False
            closest = gap if closest is None else min(closest, gap)
            if end > last_end: last_name, last_end = name, end
    print(f"{what}: no overlap; closest handover {closest / 1e6 if closest else 0:.0f} ms")
    return True
by_job = collections.defaultdict(list)
by_device = collections.defaultdict(list)
for (job, attempt, device), s in spans.items():
    by_job[job].append(((attempt, device), s))
    by_device[device].append(((job, attempt), s))
attempts = {j: len(v) for j, v in by_job.items()}
print("attempts per job:", attempts)
ok = check(by_job, "attempts of job") and check(by_device, "replicas on GPU")
sys.exit(0 if ok else 1)
