// Placer's options: the best single-node option of a shape on a node class (memoised per
// class and, for jobs whose CPU moves a node down a host level, per level), the same on one GPU
// state for the key search, and an option as scored on one node (policies that score nodes).
#include <algorithm>
#include <tuple>

#include "scheduler/placer.h"

namespace gpupool {
namespace {

// Added to the score of re-partitioning options: larger than any score difference a policy
// produces, so an existing instance anywhere always wins over a reconfiguration.
constexpr int64_t kReconfigurePenalty = int64_t{1} << 50;

}  // namespace

const Placer::Option& Placer::OptionFor(uint32_t shape, uint32_t cls) {
  // Rows are indexed by the class's dense index for the shape's kind: a fraction shape's row
  // only spans classes that have shared GPUs.
  static const Option kNoFit{true, false};
  if (HostOnly(shapes_[shape])) {
    host_only_ = Compute(shapes_[shape], cls, s_.cls(cls).level);
    return host_only_;
  }
  const int32_t idx = s_.cls(cls).kind_index[Session::KindIndex(shapes_[shape].kind)];
  if (idx < 0) return kNoFit;
  std::vector<Option>& row = memo_[shape];
  if (row.size() <= static_cast<size_t>(idx)) row.resize(static_cast<size_t>(idx) * 2 + 16);
  if (!row[idx].computed) row[idx] = Compute(shapes_[shape], cls, s_.cls(cls).level);
  return row[idx];
}

const Placer::Option& Placer::OptionAt(uint32_t shape, uint32_t cls, Level after) {
  if (after >= s_.cls(cls).level) return OptionFor(shape, cls);
  auto [it, fresh] = level_memo_.try_emplace(std::tuple(shape, cls, after));
  if (fresh) it->second = Compute(shapes_[shape], cls, after);
  return it->second;
}

const Placer::Option& Placer::NodeOption(uint32_t node, uint32_t cls, uint32_t shape_id,
                                         const ReplicaShape& rs) {
  return OptionAt(shape_id, cls, AfterLevel(node, rs));
}

Placer::Option Placer::OnNode(const Option& o, uint32_t node, uint32_t cls, const TaskShape& t,
                              const ReplicaShape& rs) const {
  const PlacementPolicy& policy = s_.policy();
  const FlavorId f = s_.pool(s_.cls(cls).pool).flavor;
  const Session::NodeSlot& slot = s_.slot(node);
  HostMove m;
  m.idle_milli = s_.cls(cls).free.units() / (GpuEq::kUnitsPerGpu / 1000);
  m.cpu_free = slot.cpu_free;
  m.mem_free = slot.mem_free;
  m.gpu_milli = GpuMilli(t);
  m.cpu_milli = rs.cpu_milli;
  m.memory_mib = rs.memory_mib;
  m.node = node;
  m.tags = slot.tags;
  m.salt = salt_;
  m.model = &s_.model(f);
  m.keys = s_.cls(cls).keys.data();
  m.gpus = s_.cls(cls).n;
  Option out = o;
  out.score = policy.NodeScore(f, t, o.from, o.to, m) + o.penalty;
  if (t.kind == ShapeKind::kGpuFraction && policy.DrawsGpus()) {
    // The GPU the policy draws among those with room, instead of the class's best; a node's
    // GPUs of one key are alike, so the key is what the option names.
    uint64_t lowest = UINT64_MAX;
    for (int g = 0; g < m.gpus; ++g) {
      const GpuKey k = m.keys[g];
      if (!SharedFits(k, t)) continue;
      const uint64_t draw = policy.GpuDraw(m, g);
      if (draw < lowest) lowest = draw, out.before = k, out.after = SharedAfter(k, t);
    }
  }
  return out;
}

Placer::Level Placer::AfterLevel(uint32_t node, const ReplicaShape& rs) const {
  const Session::NodeSlot& slot = s_.slot(node);
  if (rs.cpu_milli == 0 || slot.cpu_free == Session::kUntracked) return slot.level;
  return s_.LevelOf(slot.pool, slot.cpu_free - rs.cpu_milli);
}

int64_t Placer::ValueAt(uint32_t cls, Level level) {
  if (level >= s_.cls(cls).level) return s_.Value(cls);
  auto [it, fresh] = value_memo_.try_emplace(std::pair(cls, level), 0);
  if (fresh) {
    NodeClassView v = s_.View(cls);
    v.level = level;
    it->second = s_.policy().Value(v);
  }
  return it->second;
}

Placer::Option Placer::Compute(const TaskShape& t, uint32_t cls, Level level) {
  Option best;
  best.computed = true;
  const Session::ClassInfo& info = s_.cls(cls);
  const GpuModel& m = s_.model(s_.pool(info.pool).flavor);
  const PlacementPolicy& policy = s_.policy();
  const FlavorId flavor = s_.pool(info.pool).flavor;
  // The node goes from the class's value to that of its keys after the placement at the host
  // level its CPU is left at: `level`, the class's own when the job's CPU does not move it.
  const int64_t before_value = s_.Value(cls);
  const int64_t base = ValueAt(cls, level);
  if (HostOnly(t)) {
    // No GPU: every class fits, and its GPUs stay as they are (the host decides, HostFits). A
    // policy that sees CPU scores what the node's lower level costs; for the others, its CPU
    // and memory may strand the node's free GPUs: the least free GPU capacity first.
    const int64_t score = policy.HostLevels(flavor) > 1 ? policy.Score(flavor, before_value, base) : info.free.units();
    return {true, true, score, GpuKey(), GpuKey(), before_value, base};
  }
  int free_whole = 0;
  for (int i = 0; i < info.n; ++i) free_whole += info.keys[i].whole_free();
  // `count` GPUs go from `before` to `after`; the value changes by the keys' difference, plus
  // the whole-GPU term when whole GPUs are taken (PlacementPolicy's additive form).
  auto consider = [&](GpuKey before, GpuKey after, int64_t penalty, int count) {
    int64_t after_value = base + count * (policy.KeyValue(flavor, m, after, level) -
                                          policy.KeyValue(flavor, m, before, level));
    if (before.whole_free()) {
      after_value += policy.WholeTerm(flavor, free_whole - count, level) -
                     policy.WholeTerm(flavor, free_whole, level);
    }
    Keep({true, true, policy.Score(flavor, before_value, after_value) + penalty, before, after,
          before_value, after_value, penalty},
         best);
  };
  if (t.kind == ShapeKind::kWholeGpus) {
    // A node's free whole GPUs are all whole-mode or all idle dynamic ones (State::AddNode), so
    // they share one key.
    const GpuKey* free = std::find_if(info.keys.begin(), info.keys.begin() + info.n,
                                      [](GpuKey k) { return k.whole_free(); });
    if (free_whole >= t.gpus) consider(*free, GpuKey::Whole(true), 0, t.gpus);
    return best;
  }
  for (int i = 0; i < info.n; ++i) {
    const GpuKey k = info.keys[i];
    if (i > 0 && k == info.keys[i - 1]) continue;  // sorted: same state, same options
    if (t.kind == ShapeKind::kGpuFraction) {
      if (SharedFits(k, t)) consider(k, SharedAfter(k, t), 0, 1);
      continue;
    }
    if (k.mode() != KeyMode::kMig) continue;
    const int idx = FreeInstanceOf(k, t.mig_profile);
    if (idx >= 0) consider(k, MigAfterTake(k, idx), 0, 1);
    if (reconfigure_ && MigIdle(k)) {
      for (GpuKey after : ReconfigOptions(m, k, t.mig_profile)) {
        if (after.layout() == k.layout()) continue;  // same as taking the instance
        consider(k, after, kReconfigurePenalty, 1);
      }
    }
  }
  return best;
}


void Placer::Keep(const Option& o, Option& best) const {
  if (!best.fits || std::tie(o.score, o.before, o.after) < std::tie(best.score, best.before, best.after)) {
    best = o;
  }
}

const Placer::Option& Placer::KeyOptionFor(uint32_t shape, uint32_t key_id) {
  const KeyIndex::Entry& e = s_.keys().entry(key_id);
  std::vector<Option>& row = key_memo_[shape];
  if (row.size() <= static_cast<size_t>(e.index)) row.resize(static_cast<size_t>(e.index) * 2 + 16);
  Option& slot = row[e.index];
  if (slot.computed) return slot;
  const TaskShape& t = shapes_[shape];
  const FlavorId flavor = s_.pool(e.pool).flavor;
  const GpuModel& m = s_.model(flavor);
  const PlacementPolicy& policy = s_.policy();
  Option best;
  auto consider = [&](GpuKey after, int64_t penalty) {
    Option o{true, true,
             policy.Score(flavor, 0, policy.KeyValue(flavor, m, after, PlacementPolicy::kAllFit) -
                                 policy.KeyValue(flavor, m, e.key, PlacementPolicy::kAllFit)) +
                 penalty,
             e.key, after};
    Keep(o, best);
  };
  if (t.kind == ShapeKind::kGpuFraction) {
    if (SharedFits(e.key, t)) consider(SharedAfter(e.key, t), 0);
  } else if (e.key.mode() == KeyMode::kMig) {
    const int idx = FreeInstanceOf(e.key, t.mig_profile);
    if (idx >= 0) consider(MigAfterTake(e.key, idx), 0);
    if (reconfigure_ && MigIdle(e.key)) {
      for (GpuKey after : ReconfigOptions(m, e.key, t.mig_profile)) {
        if (!(after.layout() == e.key.layout())) consider(after, kReconfigurePenalty);
      }
    }
  }
  best.computed = true;
  slot = best;
  return slot;
}


}  // namespace gpupool
