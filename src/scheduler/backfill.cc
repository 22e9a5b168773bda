#include "scheduler/backfill.h"

#include <algorithm>
#include <map>

namespace gpupool {
namespace {

// The key of one GPU after `job` leaves it (on a scratch copy; owners are not recomputed, so a
// shared GPU keeps its owner unless it becomes empty).
GpuKey Freed(GpuKey key, const Job& job, const GpuGrant& g) {
  switch (key.mode()) {
    case KeyMode::kWhole: return GpuKey::Whole(false);
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
      return GpuKey::Shared(milli, key.free_memory_mib() + job.spec.shape.gpu_memory_mib,
                            clients, empty ? 0 : key.owner(), empty || key.owner_allows());
    }
    case KeyMode::kUnusable: return key;
  }
  return key;
}

}  // namespace

Backfill::Backfill(Session& session, Placer& placer) : s_(session), placer_(placer) {}

namespace {

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
  if (topo.level == TopologyLevel::kNode && job.spec.replicas > 1) return Time::Never();
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
  std::vector<char> fitted_flag(s_.num_nodes(), 0);
  std::vector<std::vector<uint32_t>> fitted(groups);
  const int need = job.spec.replicas;
  int done_group = -1;
  Time start = Time::Never();
  auto check = [&](uint32_t n, const Session::Keys& keys, int64_t cpu, int64_t mem, Time at) {
    if (fitted_flag[n] || cpu < rs.cpu_milli || mem < rs.memory_mib) return;
    if (placer_.GpusFor(task, keys, s_.slot(n).n).empty()) return;
    fitted_flag[n] = 1;
    std::vector<uint32_t>& f = fitted[group_of[n]];
    f.push_back(n);
    if (static_cast<int>(f.size()) >= need && done_group < 0) {
      done_group = group_of[n];
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
    if (group_of[n] < 0 || fitted_flag[n]) continue;
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
    for (const GpuGrant& g : e.replica->grants) sc.keys[g.gpu] = Freed(sc.keys[g.gpu], *e.spec, g);
    if (sc.cpu != Session::kUntracked) sc.cpu += e.spec->spec.shape.cpu_milli;
    if (sc.mem != Session::kUntracked) sc.mem += e.spec->spec.shape.memory_mib;
    check(n, sc.keys, sc.cpu, sc.mem, e.at);
  }
  if (done_group < 0) return Time::Never();
  // Jobs past their estimate are expected to end at any moment: the hold starts right away.
  start = std::max(start, s_.now() + Duration::Millis(1));

  const std::vector<uint32_t>& nodes = fitted[done_group];
  const GpuModel& model = s_.model(rs.flavor);
  for (int r = 0; r < need; ++r) {
    const uint32_t n = nodes[r];
    const Session::NodeSlot& sl = s_.slot(n);
    const Session::Keys& then = scratch_of[n] < 0 ? sl.keys : scratch[scratch_of[n]].keys;
    uint16_t mask = 0;
    for (int g : placer_.GpusFor(task, then, sl.n)) {
      if (FreeEq(model, sl.keys[g]) > GpuEq()) mask |= static_cast<uint16_t>(1u << g);
    }
    if (mask) s_.Hold(n, mask, start);
  }
  return start;
}

}  // namespace gpupool
