// Placer's searches for one replica's best (score, node): over node classes (their first member
// that fits, or every member where members differ: host levels, node-scored policies), over GPU
// states (KeyIndex), and over single nodes (held nodes, topology domains).
#include <algorithm>
#include <array>
#include <tuple>

#include "scheduler/placer.h"

namespace gpupool {

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


void Placer::SearchNodes(const std::vector<uint32_t>& classes, uint32_t shape_id, const ReplicaShape& rs,
                         Time end, Candidate& best) {
  // Every member scores on its own. The class's option at its own level bounds them all: the
  // classes are walked by that bound, and the walk ends at the first that cannot win.
  const PlacementPolicy& policy = s_.policy();
  const TaskShape& t = shapes_[shape_id];
  const int64_t gpu_milli = GpuMilli(t);
  const bool levels = rs.cpu_milli > 0 && policy.HostLevels(rs.flavor) > 1;
  const bool by_host = policy.ScoresHostOnly(rs.flavor);
  std::vector<std::pair<int64_t, uint32_t>>& order = bound_scratch_;
  order.clear();
  for (uint32_t cls : classes) {
    const Option& o = OptionFor(shape_id, cls);
    if (!o.fits) continue;
    const FlavorId f = s_.pool(s_.cls(cls).pool).flavor;
    order.push_back({policy.NodeScoreBound(f, t, o.from, o.to, gpu_milli) + o.penalty, cls});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [bound, cls] : order) {
    if (best.node != Session::kNone && bound > best.option.score) break;
    const Option o = OptionFor(shape_id, cls);
    // Members of a class differ only in free CPU and memory, and for most policies those decide
    // their score: of members with the same, the first (lowest id) is the only one that can
    // win. The first kMaxHostStates distinct ones are remembered; past them every member is
    // scored (and every member for a policy whose score depends on the node itself).
    std::vector<std::pair<int64_t, int64_t>>& seen = host_scratch_;
    seen.clear();
    for (uint32_t n : s_.members(cls)) {
      // Members come in id order: past the best's node, a member at the bound can only tie,
      // and ties go to the lower id.
      if (best.node != Session::kNone && n > best.node && bound >= best.option.score) break;
      const Session::NodeSlot& slot = s_.slot(n);
      const std::pair<int64_t, int64_t> host{slot.cpu_free, slot.mem_free};
      if (by_host) {
        if (std::find(seen.begin(), seen.end(), host) != seen.end()) continue;
        if (seen.size() < kMaxHostStates) seen.push_back(host);
      }
      if (!HostFits(slot, rs, end)) continue;
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


}  // namespace gpupool
