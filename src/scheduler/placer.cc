#include "scheduler/placer.h"

#include <algorithm>
#include <tuple>

namespace gpupool {
namespace {

// Added to the score of re-partitioning options: larger than any score difference a policy
// produces, so an existing instance anywhere always wins over a reconfiguration.
constexpr int64_t kReconfigurePenalty = int64_t{1} << 50;

}  // namespace

bool Placer::Better(const Option& o, uint32_t node, const Candidate& best) {
  if (best.node == Session::kNone) return true;
  return std::tie(o.score, node, o.before, o.after) <
         std::tie(best.option.score, best.node, best.option.before, best.option.after);
}

Placer::Placer(Session& session, bool mig_reconfigure, bool key_search)
    : s_(session), reconfigure_(mig_reconfigure), key_search_(key_search) {}

TaskShape Placer::TaskOf(const State& state, const Job& job) {
  const ReplicaShape& s = job.spec.shape;
  TaskShape t;
  t.kind = s.kind;
  switch (s.kind) {
    case ShapeKind::kWholeGpus: t.gpus = s.gpus; break;
    case ShapeKind::kMigProfile: t.mig_profile = s.mig_profile; break;
    case ShapeKind::kGpuFraction:
      t.milli = s.milli;
      t.memory_mib = s.gpu_memory_mib;
      t.tenant = job.spec.tenant;
      t.tenant_allows_cotenancy = state.tenant(job.spec.tenant).allow_gpu_cotenancy;
      break;
  }
  return t;
}

size_t Placer::ShapeHash::operator()(const TaskShape& t) const {
  uint64_t h = (uint64_t{static_cast<uint8_t>(t.kind)} << 56) | (uint64_t{t.gpus} << 48) |
               (uint64_t{t.mig_profile} << 40) | (uint64_t{t.milli} << 24) |
               (uint64_t{t.tenant_allows_cotenancy} << 23);
  h ^= (uint64_t{t.memory_mib} << 1) * 0x9e3779b97f4a7c15ull;
  h ^= uint64_t{t.tenant.value()} * 0xc2b2ae3d27d4eb4full;
  return static_cast<size_t>(h);
}

uint32_t Placer::ShapeId(const TaskShape& t) {
  auto [it, fresh] = shape_ids_.try_emplace(t, static_cast<uint32_t>(shapes_.size()));
  if (fresh) {
    shapes_.push_back(t);
    memo_.emplace_back();
    key_memo_.emplace_back();
  }
  return it->second;
}

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
  m.gpu_milli = t.kind == ShapeKind::kWholeGpus ? int64_t{1000} * t.gpus
                : t.kind == ShapeKind::kGpuFraction ? t.milli : 0;
  m.cpu_milli = rs.cpu_milli;
  m.memory_mib = rs.memory_mib;
  Option out = o;
  // Keep what the class's score adds beyond the policy's (the re-partitioning penalty).
  const int64_t penalty = o.score - policy.Score(f, o.from, o.to);
  out.score = policy.NodeScore(f, t, o.from, o.to, m) + (HostOnly(t) ? 0 : penalty);
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
    const int64_t score = policy.Score(flavor, before_value, after_value) + penalty;
    if (!best.fits || score < best.score ||
        (score == best.score && std::pair(before, after) < std::pair(best.before, best.after))) {
      best.fits = true;
      best.score = score;
      best.before = before;
      best.after = after;
      best.from = before_value;
      best.to = after_value;
    }
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

bool Placer::HostFits(const Session::NodeSlot& s, const ReplicaShape& shape, Time end) const {
  if (s.cpu_free < shape.cpu_milli || s.mem_free < shape.memory_mib) return false;
  // Past a hold, only the room the held job leaves at its start.
  return !s.held || end <= s.hold_until || (s.hold_cpu >= shape.cpu_milli && s.hold_mem >= shape.memory_mib);
}

void Placer::Consider(uint32_t node, uint32_t cls, uint32_t shape_id, const ReplicaShape& rs, Time end,
                      Candidate& best) {
  if (!HostFits(s_.slot(node), rs, end)) return;
  const Option& o = NodeOption(node, cls, shape_id, rs);
  if (!o.fits) return;
  if (s_.policy().ScoresNodes(rs.flavor)) {
    const Option scored = OnNode(o, node, cls, shapes_[shape_id], rs);
    if (Better(scored, node, best)) best = {node, scored};
    return;
  }
  if (Better(o, node, best)) best = {node, o};
}

bool Placer::PlaceReplica(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                          const std::vector<uint32_t>* domain, Time end, Outcome& out) {
  const ReplicaShape& rs = job.spec.shape;
  Candidate best;
  auto in_pools = [&](uint32_t p) { return std::find(pools.begin(), pools.end(), p) != pools.end(); };
  if (domain != nullptr) {
    for (uint32_t node : *domain) {
      const Session::NodeSlot& s = s_.slot(node);
      if (in_pools(s.pool)) Consider(node, s_.EffectiveClass(node, end), shape_id, rs, end, best);
    }
  } else if (key_search_ && rs.kind != ShapeKind::kWholeGpus && s_.policy().ScoresDifferences() &&
             s_.policy().HostLevels(rs.flavor) == 1 && !s_.policy().ScoresNodes(rs.flavor)) {
    SearchKeys(job, shape_id, pools, best);
    if (rs.kind == ShapeKind::kGpuFraction) {
      for (uint32_t p : pools) SearchClasses(s_.flex_active(p), shape_id, rs, end, best);
    }
    for (uint32_t node : s_.held_nodes()) {
      if (in_pools(s_.slot(node).pool)) {
        Consider(node, s_.EffectiveClass(node, end), shape_id, rs, end, best);
      }
    }
  } else {
    const bool host_only = HostOnly(shapes_[shape_id]);
    for (uint32_t p : pools) SearchClasses(host_only ? s_.linked(p) : s_.active(p, rs.kind), shape_id, rs, end, best);
    for (uint32_t node : s_.held_nodes()) {
      if (in_pools(s_.slot(node).pool)) {
        Consider(node, s_.EffectiveClass(node, end), shape_id, rs, end, best);
      }
    }
  }
  if (best.node == Session::kNone) return false;
  out.score += best.option.score;
  Apply(best.node, best.option, job, shapes_[shape_id], end, out);
  return true;
}

void Placer::SearchNodes(const std::vector<uint32_t>& classes, uint32_t shape_id, const ReplicaShape& rs,
                         Time end, Candidate& best) {
  // Every member scores on its own. The class's option at its own level bounds them all: the
  // classes are walked by that bound, and the walk ends at the first that cannot win.
  const PlacementPolicy& policy = s_.policy();
  const TaskShape& t = shapes_[shape_id];
  const int64_t gpu_milli = t.kind == ShapeKind::kWholeGpus ? int64_t{1000} * t.gpus
                            : t.kind == ShapeKind::kGpuFraction ? t.milli : 0;
  const bool levels = rs.cpu_milli > 0 && policy.HostLevels(rs.flavor) > 1;
  std::vector<std::pair<int64_t, uint32_t>>& order = bound_scratch_;
  order.clear();
  for (uint32_t cls : classes) {
    const Option& o = OptionFor(shape_id, cls);
    if (!o.fits) continue;
    const FlavorId f = s_.pool(s_.cls(cls).pool).flavor;
    const int64_t penalty = HostOnly(t) ? 0 : o.score - policy.Score(f, o.from, o.to);
    order.push_back({policy.NodeScoreBound(f, t, o.from, o.to, gpu_milli) + penalty, cls});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [bound, cls] : order) {
    if (best.node != Session::kNone && bound > best.option.score) break;
    const Option o = OptionFor(shape_id, cls);
    for (uint32_t n : s_.members(cls)) {
      if (!HostFits(s_.slot(n), rs, end)) continue;
      const Option& at = levels ? OptionAt(shape_id, cls, AfterLevel(n, rs)) : o;
      if (!at.fits) continue;
      const Option scored = OnNode(at, n, cls, t, rs);
      if (Better(scored, n, best)) best = {n, scored};
    }
  }
}

void Placer::SearchClasses(const std::vector<uint32_t>& classes, uint32_t shape_id, const ReplicaShape& rs,
                           Time end, Candidate& best) {
  const bool host = rs.cpu_milli > 0 || rs.memory_mib > 0;
  const bool levels = rs.cpu_milli > 0 && s_.policy().HostLevels(rs.flavor) > 1;
  if (s_.policy().ScoresNodes(rs.flavor)) {
    SearchNodes(classes, shape_id, rs, end, best);
    return;
  }
  for (uint32_t cls : classes) {
    const Option& o = OptionFor(shape_id, cls);
    if (!o.fits) continue;
    // The class's option at its own level bounds its members' from below (PlacementPolicy).
    if (best.node != Session::kNone && o.score > best.option.score) continue;
    const std::set<uint32_t>& members = s_.members(cls);
    if (levels) {
      // A member whose CPU the job takes below the class's level scores worse; the first one
      // that stays at it scores the class's option, and later members cannot beat it.
      const Level own = s_.cls(cls).level;
      for (uint32_t n : members) {
        if (!HostFits(s_.slot(n), rs, end)) continue;
        const Level after = AfterLevel(n, rs);
        const Option& at = after >= own ? o : OptionAt(shape_id, cls, after);
        if (at.fits && Better(at, n, best)) best = {n, at};
        if (after >= own) break;
      }
      continue;
    }
    uint32_t node = *members.begin();
    if (host) {
      auto it = std::find_if(members.begin(), members.end(),
                             [&](uint32_t n) { return HostFits(s_.slot(n), rs, end); });
      if (it == members.end()) continue;
      node = *it;
    }
    if (Better(o, node, best)) best = {node, o};
  }
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

void Placer::SearchKeys(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                        Candidate& best) {
  const TaskShape& t = shapes_[shape_id];
  const ReplicaShape& rs = job.spec.shape;
  const bool host = rs.cpu_milli > 0 || rs.memory_mib > 0;
  std::array<uint32_t, 3> buckets{};
  int nb = 0;
  if (t.kind == ShapeKind::kMigProfile) {
    buckets[nb++] = KeyIndex::kMig;
  } else {
    buckets[nb++] = KeyIndex::kOpen;
    buckets[nb++] = KeyIndex::kOwnerBase + t.tenant.value();
    if (t.tenant_allows_cotenancy) buckets[nb++] = KeyIndex::kAllows;
  }
  for (uint32_t p : pools) {
    for (int b = 0; b < nb; ++b) {
      for (uint32_t id : s_.keys().active(p, buckets[b])) {
        const Option& o = KeyOptionFor(shape_id, id);
        if (!o.fits) continue;
        if (best.node != Session::kNone && o.score > best.option.score) continue;
        const std::set<uint32_t>& nodes = s_.keys().entry(id).nodes;
        uint32_t node = *nodes.begin();
        if (host) {
          auto it = std::find_if(nodes.begin(), nodes.end(),
                                 [&](uint32_t n) { return HostFits(s_.slot(n), rs, s_.now()); });  // unheld nodes only
          if (it == nodes.end()) continue;
          node = *it;
        }
        if (Better(o, node, best)) best = {node, o};
      }
    }
  }
}

void Placer::Apply(uint32_t node, const Option& opt, const Job& job, const TaskShape& t, Time end,
                   Outcome& out) {
  const Session::NodeSlot& slot = s_.slot(node);
  const bool past_hold = slot.held && end > slot.hold_until;
  auto held = [&](int g) { return (slot.hold_mask >> g & 1) != 0; };
  ReplicaPlacement rp;
  rp.node = NodeId(node);
  if (t.kind == ShapeKind::kWholeGpus) {
    for (int g = 0; g < slot.n && static_cast<int>(rp.grants.size()) < t.gpus; ++g) {
      if (slot.keys[g].whole_free() && !held(g)) rp.grants.push_back({.gpu = static_cast<uint16_t>(g)});
    }
    // A job that ends before a hold may also use the held GPUs.
    for (int g = 0; !past_hold && g < slot.n && static_cast<int>(rp.grants.size()) < t.gpus; ++g) {
      if (slot.keys[g].whole_free() && held(g)) rp.grants.push_back({.gpu = static_cast<uint16_t>(g)});
    }
    GP_CHECK(static_cast<int>(rp.grants.size()) == t.gpus);
    for (const GpuGrant& g : rp.grants) SwitchIfNeeded(node, g.gpu, GpuMode::kWhole, out);
    s_.SetKeys(node, rp.grants, GpuKey::Whole(true));
  } else {
    // The option was computed on what each GPU offers this job: an unheld GPU first, then a
    // held one (all of it before the hold starts, its HeldView past it).
    auto offered = [&](int g) {
      return past_hold && held(g) ? Session::HeldView(slot.keys[g], slot.hold_caps[g]) : slot.keys[g];
    };
    int gpu = -1;
    for (int g = 0; g < slot.n && gpu < 0; ++g) {
      if (!held(g) && slot.keys[g] == opt.before) gpu = g;
    }
    for (int g = 0; g < slot.n && gpu < 0; ++g) {
      if (held(g) && offered(g) == opt.before) gpu = g;
    }
    GP_CHECK(gpu >= 0);
    GpuGrant grant{.gpu = static_cast<uint16_t>(gpu)};
    if (t.kind == ShapeKind::kMigProfile) {
      const MigLayout from = opt.before.layout(), to = opt.after.layout();
      int taken = -1;
      for (int i = 0; i < to.size(); ++i) {
        const bool now_busy = !((opt.after.free_mask() >> i) & 1);
        const bool was_free = !(from == to) || ((opt.before.free_mask() >> i) & 1);
        if (now_busy && was_free) taken = i;
      }
      GP_CHECK(taken >= 0);
      grant.mig_start = static_cast<int8_t>(to.at(taken).start);
      if (!(from == to)) {
        out.reconfigurations.push_back({NodeId(node), static_cast<uint16_t>(gpu), from, to});
        s_.SetKey(node, gpu, opt.after);
      } else {
        // The GPU's own key, which may have more free than what was offered (kept instances).
        s_.SetKey(node, gpu, MigAfterTake(slot.keys[gpu], taken));
      }
    } else {
      grant.milli = t.milli;
      grant.memory_mib = t.memory_mib;
      SwitchIfNeeded(node, gpu, GpuMode::kShared, out);
      if (past_hold && held(gpu)) s_.TakeFromHold(node, gpu, t);
      s_.AddShared(node, {static_cast<uint16_t>(gpu), job.id, job.spec.tenant, t.milli,
                          t.memory_mib});
    }
    rp.grants.push_back(grant);
  }
  s_.TakeHost(node, job.spec.shape.cpu_milli, job.spec.shape.memory_mib, past_hold);
  out.placement.push_back(std::move(rp));
}

void Placer::SwitchIfNeeded(uint32_t node, int gpu, GpuMode use, Outcome& out) const {
  // Only an idle dynamic GPU has a flex key; the state still has the mode it was last used in
  // (its jobs may be preempted by this plan, so it is idle when the switch applies).
  if (!s_.slot(node).keys[gpu].flex()) return;
  const GpuMode was = s_.state().node(NodeId(node)).gpus[gpu].mode;
  if (was != use) out.mode_changes.push_back({NodeId(node), static_cast<uint16_t>(gpu), was, use});
}

Placer::Outcome Placer::PlaceInDomains(const Job& job, uint32_t shape_id,
                                       const std::vector<uint32_t>& pools, Time end) {
  Outcome out;
  const TopologyLevel level = job.spec.topology.level;
  const GpuEq demand = job.Eq(s_.state().catalogue());
  // Tightest domain first: the least free capacity that still covers the demand.
  std::vector<std::pair<GpuEq, const std::vector<uint32_t>*>> order;
  for (const auto& [name, nodes] : s_.Domains(level)) {
    GpuEq free;
    for (uint32_t n : nodes) {
      const uint32_t p = s_.slot(n).pool;
      if (std::find(pools.begin(), pools.end(), p) == pools.end()) continue;
      free += s_.cls(s_.EffectiveClass(n, end)).free;
    }
    if (free >= demand) order.push_back({free, &nodes});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [free, nodes] : order) {
    const size_t mark = s_.Mark();
    Outcome attempt;
    bool ok = true;
    for (int r = 0; r < job.spec.replicas && ok; ++r) {
      ok = PlaceReplica(job, shape_id, pools, nodes, end, attempt);
    }
    if (ok) {
      attempt.ok = true;
      return attempt;
    }
    s_.RollbackTo(mark);
  }
  out.code = ReasonCode::kTopology;
  out.detail = "no single " + std::string(TopologyLevelName(level)) + " has room for all " +
               std::to_string(job.spec.replicas) + " replicas";
  return out;
}

Placer::Outcome Placer::PlaceGang(const Job& job, const std::vector<uint32_t>& pools, Time end) {
  const uint32_t shape_id = ShapeId(TaskOf(s_.state(), job));
  const TopologyConstraint& topo = job.spec.topology;
  if (topo.level != TopologyLevel::kNone) {
    Outcome o = PlaceInDomains(job, shape_id, pools, end);
    if (o.ok || topo.required) return o;
  }
  Outcome out;
  const size_t mark = s_.Mark();
  for (int r = 0; r < job.spec.replicas; ++r) {
    if (!PlaceReplica(job, shape_id, pools, nullptr, end, out)) {
      s_.RollbackTo(mark);
      out.placement.clear();
      out.reconfigurations.clear();
      out.mode_changes.clear();
      out.code = ReasonCode::kInsufficientCapacity;
      out.detail = job.spec.replicas == 1
                       ? "no node has room"
                       : std::to_string(r) + " of " + std::to_string(job.spec.replicas) +
                             " replicas fit";
      return out;
    }
  }
  out.ok = true;
  return out;
}

std::vector<int> Placer::GpusFor(const TaskShape& t, const Session::Keys& keys, int n) const {
  std::vector<int> out;
  for (int g = 0; g < n; ++g) {
    const GpuKey k = keys[g];
    bool fits = false;
    switch (t.kind) {
      case ShapeKind::kWholeGpus: fits = k.whole_free(); break;
      case ShapeKind::kMigProfile:
        fits = k.mode() == KeyMode::kMig &&
               (FreeInstanceOf(k, t.mig_profile) >= 0 || (reconfigure_ && MigIdle(k)));
        break;
      case ShapeKind::kGpuFraction: fits = SharedFits(k, t); break;
    }
    if (!fits) continue;
    out.push_back(g);
    if (t.kind != ShapeKind::kWholeGpus || static_cast<int>(out.size()) == t.gpus) return out;
  }
  return {};
}

}  // namespace gpupool
