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

void Backfill::AddPlaced(const Job& job, const std::vector<ReplicaPlacement>& placement) {
  placed_.push_back({&job, placement});
  built_ = false;
}

void Backfill::BuildTimeline() {
  timeline_.clear();
  const State& state = s_.state();
  for (JobId id : state.active()) {
    if (std::find(released_.begin(), released_.end(), id) != released_.end()) continue;
    const Job& j = *state.FindJob(id);
    const Time end = std::max(j.ExpectedEnd(), s_.now());
    if (end.is_never()) continue;
    for (const ReplicaPlacement& rp : j.placement) timeline_.push_back({end, id, &j, &rp});
  }
  for (const auto& [job, placement] : placed_) {
    const Time end = s_.now() + job->spec.estimated_duration;
    if (end.is_never()) continue;
    for (const ReplicaPlacement& rp : placement) timeline_.push_back({end, job->id, job, &rp});
  }
  std::sort(timeline_.begin(), timeline_.end(), [](const End& a, const End& b) {
    if (a.at != b.at) return a.at < b.at;
    if (a.job != b.job) return a.job < b.job;
    return a.replica->node < b.replica->node;
  });
  built_ = true;
}

Time Backfill::HoldFor(const Job& job, const std::vector<uint32_t>& pools) {
  const TopologyConstraint& topo = job.spec.topology;
  if (topo.level == TopologyLevel::kNode && job.spec.replicas > 1) return Time::Never();
  if (!built_) BuildTimeline();

  // Candidate nodes, grouped by the domain the gang must share (one group without a
  // constraint).
  const bool grouped = topo.level != TopologyLevel::kNone && topo.required;
  std::map<uint32_t, int> group_of;  // node -> group
  int groups = 0;
  auto eligible = [&](uint32_t n) {
    const Session::NodeSlot& sl = s_.slot(n);
    return sl.hold_mask == 0 &&
           std::find(pools.begin(), pools.end(), sl.pool) != pools.end();
  };
  if (grouped) {
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
    groups = 1;
  }

  struct Scratch {
    Session::Keys keys;
    int64_t cpu, mem;
  };
  std::map<uint32_t, Scratch> scratch;
  std::vector<std::vector<uint32_t>> fitted(groups);
  const int need = job.spec.replicas;
  int done_group = -1;
  Time start = Time::Never();
  auto check = [&](uint32_t n, Time at) {
    const Scratch& sc = scratch.at(n);
    if (!placer_.FitsKeys(job, sc.keys, s_.slot(n).n, sc.cpu, sc.mem)) return;
    std::vector<uint32_t>& f = fitted[group_of.at(n)];
    if (std::find(f.begin(), f.end(), n) != f.end()) return;
    f.push_back(n);
    if (static_cast<int>(f.size()) >= need && done_group < 0) {
      done_group = group_of.at(n);
      start = at;
    }
  };
  for (const auto& [n, g] : group_of) {
    const Session::NodeSlot& sl = s_.slot(n);
    scratch[n] = {sl.keys, sl.cpu_free, sl.mem_free};
    check(n, s_.now());
  }
  for (size_t i = 0; i < timeline_.size() && done_group < 0; ++i) {
    const End& e = timeline_[i];
    const uint32_t n = e.replica->node.value();
    auto it = scratch.find(n);
    if (it == scratch.end()) continue;
    for (const GpuGrant& g : e.replica->grants) {
      it->second.keys[g.gpu] = Freed(it->second.keys[g.gpu], *e.spec, g);
    }
    if (it->second.cpu != Session::kUntracked) it->second.cpu += e.spec->spec.shape.cpu_milli;
    if (it->second.mem != Session::kUntracked) it->second.mem += e.spec->spec.shape.memory_mib;
    check(n, e.at);
  }
  if (done_group < 0 || start <= s_.now()) return Time::Never();

  const std::vector<uint32_t>& nodes = fitted[done_group];
  for (int r = 0; r < need; ++r) {
    const uint32_t n = nodes[r];
    const Session::NodeSlot& sl = s_.slot(n);
    uint16_t mask = 0;
    for (int g : placer_.GpusFor(job, scratch.at(n).keys, sl.n)) {
      const GpuKey now_key = sl.keys[g];
      const bool free_now = now_key.mode() == KeyMode::kWhole ? now_key.whole_free()
                                                              : FreeEq(s_.model(s_.pool(sl.pool).flavor), now_key) > GpuEq();
      if (free_now) mask |= static_cast<uint16_t>(1u << g);
    }
    if (mask) s_.Hold(n, mask, start);
  }
  return start;
}

}  // namespace gpupool
