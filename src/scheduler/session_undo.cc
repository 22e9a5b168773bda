// Session's undoable mutations: every change to a node saves its slot first, re-interns its
// class and relinks it (class sets, key index, held list); RollbackTo replays the saves backwards.
#include <algorithm>

#include "scheduler/session.h"

namespace gpupool {

void Session::Unlink(uint32_t node, const NodeSlot& s) {
  if (s.pool == kNone) return;
  if (s.held) {
    held_.erase(std::find(held_.begin(), held_.end(), node));
    return;
  }
  key_index_.Remove(s.pool, node, s.keys.data(), s.n);
  std::set<uint32_t>& m = members_[s.cls];
  m.erase(node);
  if (m.empty()) {
    for (int k = 0; k < kLists; ++k) {
      if (!(classes_[s.cls].kinds >> k & 1)) continue;
      std::vector<uint32_t>& act = active_[s.pool * kLists + k];
      const int32_t pos = active_pos_[s.cls][k];
      act[pos] = act.back();
      active_pos_[act[pos]][k] = pos;
      act.pop_back();
      active_pos_[s.cls][k] = -1;
    }
  }
}

void Session::Link(uint32_t node, const NodeSlot& s) {
  if (s.pool == kNone) return;
  if (s.held) {
    held_.push_back(node);
    return;
  }
  key_index_.Add(s.pool, node, s.keys.data(), s.n);
  std::set<uint32_t>& m = members_[s.cls];
  if (m.empty()) {
    for (int k = 0; k < kLists; ++k) {
      if (!(classes_[s.cls].kinds >> k & 1)) continue;
      std::vector<uint32_t>& act = active_[s.pool * kLists + k];
      active_pos_[s.cls][k] = static_cast<int32_t>(act.size());
      act.push_back(s.cls);
    }
  }
  m.insert(node);
}

void Session::SaveNode(uint32_t node) {
  Undo u;
  u.node = node;
  u.slot = slots_[node];
  u.shared = shared_[node];
  undo_.push_back(std::move(u));
}

void Session::Reindex(uint32_t node, const NodeSlot& before) {
  NodeSlot& s = slots_[node];
  if (s.pool != kNone) {
    s.level = LevelOf(s.pool, s.cpu_free);
    s.cls = Intern(s.pool, s.keys, s.n, s.level);
    if (s.held) {
      Keys held = s.keys;
      for (int g = 0; g < s.n; ++g) {
        if ((s.hold_mask >> g) & 1) held[g] = HeldView(s.keys[g], s.hold_caps[g]);
      }
      s.held_cls = Intern(s.pool, held, s.n, s.level);
    } else {
      s.held_cls = kNone;
    }
  }
  if (before.cls != s.cls || before.held != s.held || before.pool != s.pool) {
    Unlink(node, before);
    Link(node, s);
  }
}

void Session::RollbackTo(size_t mark) {
  GP_CHECK(mark <= undo_.size());
  while (undo_.size() > mark) {
    Undo& u = undo_.back();
    if (u.kind == Undo::kQuota) {
      quota_.Add(u.tenant, u.flavor, GpuEq() - u.amount, GpuEq() - u.on_capacity);
    } else if (u.kind == Undo::kRunningQuota) {
      running_.Add(u.tenant, u.flavor, GpuEq() - u.amount, GpuEq() - u.on_capacity);
    } else {
      const NodeSlot before = slots_[u.node];
      slots_[u.node] = u.slot;
      shared_[u.node] = std::move(u.shared);
      Reindex(u.node, before);
    }
    undo_.pop_back();
  }
}

void Session::SetKey(uint32_t node, int gpu, GpuKey key) {
  SaveNode(node);
  const NodeSlot before = slots_[node];
  slots_[node].keys[gpu] = key;
  Reindex(node, before);
}

void Session::SetKeys(uint32_t node, const std::vector<GpuGrant>& gpus, GpuKey key) {
  SaveNode(node);
  const NodeSlot before = slots_[node];
  for (const GpuGrant& g : gpus) slots_[node].keys[g.gpu] = key;
  Reindex(node, before);
}

void Session::TakeHost(uint32_t node, int64_t cpu_milli, int64_t memory_mib, bool past_hold) {
  if (cpu_milli == 0 && memory_mib == 0) return;
  SaveNode(node);
  const NodeSlot before = slots_[node];
  NodeSlot& s = slots_[node];
  if (s.cpu_free != kUntracked) s.cpu_free -= cpu_milli;
  if (s.mem_free != kUntracked) s.mem_free -= memory_mib;
  if (past_hold && s.hold_cpu != kUntracked) s.hold_cpu -= cpu_milli;
  if (past_hold && s.hold_mem != kUntracked) s.hold_mem -= memory_mib;
  // Only CPU and memory changed: the class changes only with the host level.
  if (s.pool != kNone && LevelOf(s.pool, s.cpu_free) != before.level) Reindex(node, before);
}

GpuKey Session::IdleKey(uint32_t node, int gpu) const {
  const Node& n = state_.node(NodeId(node));
  const Gpu& g = n.gpus[gpu];
  if (!g.dynamic) return GpuKey::Whole(false);
  const uint32_t clients = g.max_clients == 0 ? GpuKey::kUncappedClients
                                              : std::min<uint32_t>(g.max_clients, GpuKey::kUncappedClients);
  return GpuKey::Flex(GpuKey::Shared(1000, model(n.flavor).memory_mib, clients, 0, true));
}

GpuKey Session::SharedKey(uint32_t node, int gpu) const {
  const Node& n = state_.node(NodeId(node));
  const Gpu& g = n.gpus[gpu];
  if (!g.healthy) return GpuKey::Unusable();
  uint32_t milli = 0, mem = 0, count = 0, owner = 0;
  bool allows = true;
  for (const SharedOcc& o : shared_[node]) {
    if (o.gpu != gpu) continue;
    milli += o.milli;
    mem += o.memory_mib;
    ++count;
    const uint32_t who = o.tenant.value() + 1;
    owner = owner == 0 || owner == who ? who : GpuKey::kMultiOwner;
    allows = allows && state_.tenant(o.tenant).allow_gpu_cotenancy;
  }
  if (count == 0 && g.dynamic) return IdleKey(node, gpu);
  const uint32_t clients = g.max_clients == 0 ? GpuKey::kUncappedClients
                                              : (count >= g.max_clients ? 0 : g.max_clients - count);
  const uint32_t mem_total = model(n.flavor).memory_mib;
  return GpuKey::Shared(1000 - std::min(milli, 1000u), mem_total - std::min(mem, mem_total),
                        std::min(clients, uint32_t{GpuKey::kUncappedClients}), owner,
                        count == 0 ? true : allows);
}

void Session::AddShared(uint32_t node, const SharedOcc& occ) {
  SaveNode(node);
  const NodeSlot before = slots_[node];
  shared_[node].push_back(occ);
  slots_[node].keys[occ.gpu] = SharedKey(node, occ.gpu);
  Reindex(node, before);
}

void Session::AddTag(uint32_t node, uint16_t tag) {
  if ((slots_[node].tags & tag) == tag) return;
  SaveNode(node);
  slots_[node].tags |= tag;  // not part of the class: no re-index
}

void Session::QuotaAdd(TenantId t, FlavorId f, GpuEq amount, GpuEq on_capacity) {
  Undo u;
  u.kind = Undo::kQuota;
  u.tenant = t;
  u.flavor = f;
  u.amount = amount;
  u.on_capacity = on_capacity;
  undo_.push_back(std::move(u));
  quota_.Add(t, f, amount, on_capacity);
}

void Session::Release(const Job& job, const std::vector<ReplicaPlacement>& placement) {
  const ReplicaShape& shape = job.spec.shape;
  released_ = true;
  for (const ReplicaPlacement& rp : placement) {
    const uint32_t node = rp.node.value();
    SaveNode(node);
    const NodeSlot before = slots_[node];
    NodeSlot& s = slots_[node];
    const Node& n = state_.node(rp.node);
    for (const GpuGrant& g : rp.grants) {
      if (!n.gpus[g.gpu].healthy) continue;  // stays unusable
      GpuKey& key = s.keys[g.gpu];
      switch (shape.kind) {
        case ShapeKind::kWholeGpus: key = IdleKey(node, g.gpu); break;
        case ShapeKind::kMigProfile: {
          const int idx = key.layout().IndexOfStart(g.mig_start);
          GP_CHECK(idx >= 0);
          key = GpuKey::Mig(key.layout(), static_cast<uint8_t>(key.free_mask() | (1u << idx)));
          break;
        }
        case ShapeKind::kGpuFraction: {
          std::vector<SharedOcc>& occ = shared_[node];
          auto it = std::find_if(occ.begin(), occ.end(), [&](const SharedOcc& o) {
            return o.job == job.id && o.gpu == g.gpu;
          });
          GP_CHECK(it != occ.end());
          occ.erase(it);
          key = SharedKey(node, g.gpu);
          break;
        }
      }
    }
    if (s.cpu_free != kUntracked) s.cpu_free += shape.cpu_milli;
    if (s.mem_free != kUntracked) s.mem_free += shape.memory_mib;
    Reindex(node, before);
  }
  if (job.admitted_as != AdmissionKind::kDedicated) {
    const GpuEq eq = job.Eq(state_.catalogue());
    GpuEq on_capacity;
    for (const ReplicaPlacement& rp : placement) on_capacity += OnCapacity(state_, job, rp);
    QuotaAdd(job.spec.tenant, shape.flavor, GpuEq() - eq, GpuEq() - on_capacity);
    Undo u;
    u.kind = Undo::kRunningQuota;
    u.tenant = job.spec.tenant;
    u.flavor = shape.flavor;
    u.amount = GpuEq() - eq;
    u.on_capacity = GpuEq() - on_capacity;
    undo_.push_back(u);
    running_.Add(job.spec.tenant, shape.flavor, u.amount, u.on_capacity);
  }
}

}  // namespace gpupool
