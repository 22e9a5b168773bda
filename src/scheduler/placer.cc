// Placer: the gang and its replicas, one node at a time, and what a chosen option does to the
// session (the searches are in placer_search.cc, the options and their scores in
// placer_options.cc).
#include "scheduler/placer.h"

#include <algorithm>
#include <tuple>

namespace gpupool {

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

bool Placer::KeySearchable(const ReplicaShape& rs) const {
  const PlacementPolicy& p = s_.policy();
  return key_search_ && rs.kind != ShapeKind::kWholeGpus && p.ScoresDifferences() &&
         p.HostLevels(rs.flavor) == 1 && !p.ScoresNodes(rs.flavor);
}

bool Placer::PlaceReplica(const Job& job, uint32_t shape_id, const std::vector<uint32_t>& pools,
                          const std::vector<uint32_t>* domain, Time end, Outcome& out) {
  const ReplicaShape& rs = job.spec.shape;
  salt_ = (uint64_t{job.id.value()} << 16) ^ out.placement.size();
  Candidate best;
  auto in_pools = [&](uint32_t p) { return std::find(pools.begin(), pools.end(), p) != pools.end(); };
  if (domain != nullptr) {
    for (uint32_t node : *domain) {
      const Session::NodeSlot& s = s_.slot(node);
      if (in_pools(s.pool)) Consider(node, s_.EffectiveClass(node, end), shape_id, rs, end, best);
    }
  } else if (KeySearchable(rs)) {
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
  if (s_.policy().UsesTags()) s_.AddTag(node, AffinityTag(t));
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
