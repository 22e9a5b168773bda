#include "scheduler/backfill.h"

#include <algorithm>
#include <map>

namespace gpupool {
namespace {

// The key of one GPU after `job` leaves it (on a scratch copy; owners are not recomputed, so a
// shared GPU keeps its owner unless it becomes empty). `idle`: the GPU's key when nothing holds
// it (Session::IdleKey), which a dynamic GPU returns to.
GpuKey Freed(GpuKey key, const Job& job, const GpuGrant& g, GpuKey idle) {
  switch (key.mode()) {
    case KeyMode::kWhole: return idle;
    case KeyMode::kMig: {
      const int idx = key.layout().IndexOfStart(g.mig_start);
      if (idx < 0) return key;
      return GpuKey::Mig(key.layout(), static_cast<uint8_t>(key.free_mask() | (1u << idx)));
    }
    case KeyMode::kShared: {
      const uint32_t milli = std::min(1000u, key.free_milli() + job.spec.shape.milli);
      const uint32_t clients = key.free_clients() == GpuKey::kUncappedClients
                                   ? GpuKey::kUncappedClients
                                   : key.free_clients() + 1;
      const bool empty = milli == 1000;
      if (empty && idle.flex()) return idle;
      return GpuKey::Shared(milli, key.free_memory_mib() + job.spec.shape.gpu_memory_mib,
                            clients, empty ? 0 : key.owner(), empty || key.owner_allows());
    }
    case KeyMode::kUnusable: return key;
  }
  return key;
}

// The key of one GPU after a replica of `t` takes it (the inverse of Freed, for counting how
// many replicas a node's GPUs hold).
// REQUIRES: the GPU is one Placer::GpusFor chose for `t` (so a flex GPU is taken in the use
// the task asks for).
GpuKey Taken(GpuKey key, const TaskShape& t) {
  switch (t.kind) {
    case ShapeKind::kWholeGpus: return GpuKey::Whole(true);
    case ShapeKind::kMigProfile: {
      // No free instance of the profile: the replica re-partitions the idle GPU, and nothing
      // else is counted on it.
      const int idx = FreeInstanceOf(key, t.mig_profile);
      return idx < 0 ? GpuKey::Unusable() : MigAfterTake(key, idx);
    }
    case ShapeKind::kGpuFraction: return SharedAfter(key, t);
  }
  return key;
}

}  // namespace

Backfill::Backfill(Session& session, Placer& placer) : s_(session), placer_(placer) {}

int Backfill::Fits(const TaskShape& task, const ReplicaShape& rs, Session::Keys keys, int64_t cpu, int64_t mem,
                   int n, int most, Session::Keys* after) const {
  int fit = 0;
  for (; fit < most; ++fit) {
    if (cpu < rs.cpu_milli || mem < rs.memory_mib) break;
    const std::vector<int> g = placer_.GpusFor(task, keys, n);
    if (g.empty() && !Placer::HostOnly(task)) break;
    for (int i : g) keys[i] = Taken(keys[i], task);
    if (cpu != Session::kUntracked) cpu -= rs.cpu_milli;
    if (mem != Session::kUntracked) mem -= rs.memory_mib;
  }
  if (after != nullptr) *after = keys;
  return fit;
}

namespace {

// What a hold keeps of one GPU for the held job's replicas: the GPU's key `then`, when the
// hold starts, becomes `after` once they are on it (Session::NodeSlot::hold_caps).
GpuKey HoldCap(GpuKey then, GpuKey after) {
  if (then.mode() == KeyMode::kMig && after.mode() == KeyMode::kMig && then.layout() == after.layout()) {
    return GpuKey::Mig(then.layout(), static_cast<uint8_t>(then.free_mask() & ~after.free_mask()));
  }
  if (then.mode() == KeyMode::kShared && after.mode() == KeyMode::kShared) return after;
  return GpuKey::Unusable();  // whole GPUs, and a MIG GPU the job re-partitions
}

bool EndsBefore(const Backfill::End& a, const Backfill::End& b) {
  if (a.at != b.at) return a.at < b.at;
  if (a.job != b.job) return a.job < b.job;
  return a.replica->node < b.replica->node;
}

}  // namespace

void Backfill::AddPlaced(const Job& job, const std::vector<ReplicaPlacement>& placement) {
  const Time end = s_.now() + job.spec.estimated_duration;
  if (end.is_never()) return;
  placements_.push_back(placement);
  for (const ReplicaPlacement& rp : placements_.back()) placed_.push_back({end, job.id, &job, &rp});
}

void Backfill::SortPlaced() {
  if (placed_sorted_ == placed_.size()) return;
  std::sort(placed_.begin() + static_cast<long>(placed_sorted_), placed_.end(), EndsBefore);
  std::inplace_merge(placed_.begin(), placed_.begin() + static_cast<long>(placed_sorted_),
                     placed_.end(), EndsBefore);
  placed_sorted_ = placed_.size();
}

void Backfill::BuildTimeline() {
  // Jobs released (preempted) in this cycle are skipped when the timeline is read.
  timeline_.clear();
  const State& state = s_.state();
  for (JobId id : state.active()) {
    const Job& j = *state.FindJob(id);
    const Time end = std::max(j.ExpectedEnd(), s_.now());
    if (end.is_never()) continue;
    for (const ReplicaPlacement& rp : j.placement) timeline_.push_back({end, id, &j, &rp});
  }
  std::sort(timeline_.begin(), timeline_.end(), EndsBefore);
  built_ = true;
}

Time Backfill::HoldFor(const Job& job, const std::vector<uint32_t>& pools) {
  const TopologyConstraint& topo = job.spec.topology;
  if (!built_) BuildTimeline();
  SortPlaced();
  const TaskShape task = Placer::TaskOf(s_.state(), job);
  const ReplicaShape& rs = job.spec.shape;

  // Candidate nodes, grouped by the domain the gang must share (one group without a
  // constraint); -1 = not a candidate.
  const bool grouped = topo.level != TopologyLevel::kNone && topo.required;
  std::vector<int> group_of(s_.num_nodes(), -1);
  int groups = 1;
  auto eligible = [&](uint32_t n) {
    const Session::NodeSlot& sl = s_.slot(n);
    return sl.pool != Session::kNone && sl.hold_mask == 0 &&
           std::find(pools.begin(), pools.end(), sl.pool) != pools.end();
  };
  if (grouped) {
    groups = 0;
    for (const auto& [name, nodes] : s_.Domains(topo.level)) {
      for (uint32_t n : nodes) {
        if (eligible(n)) group_of[n] = groups;
      }
      ++groups;
    }
  } else {
    for (uint32_t n = 0; n < s_.num_nodes(); ++n) {
      if (eligible(n)) group_of[n] = 0;
    }
  }

  // Scratch copies of the nodes the timeline touches, made on first touch.
  struct Scratch {
    Session::Keys keys;
    int64_t cpu, mem;
  };
  std::vector<int32_t> scratch_of(s_.num_nodes(), -1);
  std::vector<Scratch> scratch;
  // How many replicas each node holds so far on the timeline (a node may take several), and
  // per group the nodes that hold any, in the order they came to, and the replicas they hold.
  const int need = job.spec.replicas;
  std::vector<int> fit_on(s_.num_nodes(), 0);
  std::vector<std::vector<uint32_t>> fitted(groups);
  std::vector<int> fitted_replicas(groups, 0);
  int done_group = -1;
  Time start = Time::Never();
  auto check = [&](uint32_t n, const Session::Keys& keys, int64_t cpu, int64_t mem, Time at) {
    if (fit_on[n] >= need) return;
    const int fit = Fits(task, rs, keys, cpu, mem, s_.slot(n).n, need, nullptr);
    if (fit <= fit_on[n]) return;
    const int g = group_of[n];
    if (fit_on[n] == 0) fitted[g].push_back(n);
    fitted_replicas[g] += fit - fit_on[n];
    fit_on[n] = fit;
    if (fitted_replicas[g] >= need && done_group < 0) {
      done_group = g;
      start = at;
    }
  };
  for (uint32_t n = 0; n < s_.num_nodes(); ++n) {
    if (group_of[n] < 0) continue;
    const Session::NodeSlot& sl = s_.slot(n);
    check(n, sl.keys, sl.cpu_free, sl.mem_free, s_.now());
  }
  // Walk both timelines in end order.
  size_t a = 0, b = 0;
  while (done_group < 0 && (a < timeline_.size() || b < placed_.size())) {
    const bool from_running =
        b == placed_.size() || (a < timeline_.size() && EndsBefore(timeline_[a], placed_[b]));
    const End& e = from_running ? timeline_[a++] : placed_[b++];
    const uint32_t n = e.replica->node.value();
    if (group_of[n] < 0 || fit_on[n] >= need) continue;
    if (from_running &&
        std::find(released_.begin(), released_.end(), e.job) != released_.end()) {
      continue;
    }
    if (scratch_of[n] < 0) {
      const Session::NodeSlot& sl = s_.slot(n);
      scratch_of[n] = static_cast<int32_t>(scratch.size());
      scratch.push_back({sl.keys, sl.cpu_free, sl.mem_free});
    }
    Scratch& sc = scratch[scratch_of[n]];
    for (const GpuGrant& g : e.replica->grants) {
      sc.keys[g.gpu] = Freed(sc.keys[g.gpu], *e.spec, g, s_.IdleKey(n, g.gpu));
    }
    if (sc.cpu != Session::kUntracked) sc.cpu += e.spec->spec.shape.cpu_milli;
    if (sc.mem != Session::kUntracked) sc.mem += e.spec->spec.shape.memory_mib;
    check(n, sc.keys, sc.cpu, sc.mem, e.at);
  }
  if (done_group < 0) return Time::Never();
  // Jobs past their estimate are expected to end at any moment: the hold starts right away.
  start = std::max(start, s_.now() + Duration::Millis(1));

  // The replicas go to the group's nodes in the order they fitted, as many on each as fit
  // there then; each node holds, of the GPUs its replicas will use that have free capacity
  // now, what they will take: whole GPUs whole, MIG instances by instance, fractions by room;
  // and the node's CPU and memory that they will need.
  const GpuModel& model = s_.model(rs.flavor);
  int left = need;
  for (uint32_t n : fitted[done_group]) {
    if (left == 0) break;
    const Session::NodeSlot& sl = s_.slot(n);
    const bool touched = scratch_of[n] >= 0;
    const Session::Keys& then = touched ? scratch[scratch_of[n]].keys : sl.keys;
    Session::Keys after;
    const int64_t cpu = touched ? scratch[scratch_of[n]].cpu : sl.cpu_free;
    const int64_t mem = touched ? scratch[scratch_of[n]].mem : sl.mem_free;
    const int here = Fits(task, rs, then, cpu, mem, sl.n, left, &after);
    left -= here;
    uint16_t mask = 0;
    Session::Keys caps;
    caps.fill(GpuKey::Unusable());
    for (int g = 0; g < sl.n; ++g) {
      if (after[g] == then[g] || !(FreeEq(model, sl.keys[g]) > GpuEq())) continue;
      mask |= static_cast<uint16_t>(1u << g);
      caps[g] = HoldCap(then[g], after[g]);
    }
    // The CPU and memory the node will have left once the replicas are on it: jobs that end
    // later may take only that much, whatever else is free now.
    const int64_t cpu_room = cpu == Session::kUntracked ? cpu : cpu - here * rs.cpu_milli;
    const int64_t mem_room = mem == Session::kUntracked ? mem : mem - here * rs.memory_mib;
    const bool host = (rs.cpu_milli > 0 && cpu_room != Session::kUntracked) ||
                      (rs.memory_mib > 0 && mem_room != Session::kUntracked);
    if (mask || host) s_.Hold(n, mask, caps, start, cpu_room, mem_room);
  }
  return start;
}

}  // namespace gpupool
