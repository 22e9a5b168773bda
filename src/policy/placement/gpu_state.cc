#include "policy/placement/gpu_state.h"

namespace gpupool {

GpuKey GpuKey::Mig(const MigLayout& layout, uint8_t free_mask) {
  return GpuKey(1 | (layout.Encode() << 2) | (uint64_t{free_mask} << 51));
}

GpuKey GpuKey::Shared(uint32_t free_milli, uint32_t free_memory_mib, uint32_t free_clients,
                      uint32_t owner, bool owner_allows) {
  GP_CHECK(free_milli <= 1000 && free_memory_mib < (1u << 18) && free_clients <= 63 &&
           owner <= kMultiOwner);
  return GpuKey(2 | (uint64_t{free_milli} << 2) | (uint64_t{free_memory_mib} << 12) |
                (uint64_t{free_clients} << 30) | (uint64_t{owner} << 36) |
                (uint64_t{owner_allows} << 57));
}

GpuEq FreeEq(const GpuModel& model, GpuKey key) {
  switch (key.mode()) {
    case KeyMode::kWhole: return key.whole_free() ? GpuEq::Gpus(1) : GpuEq();
    case KeyMode::kMig: {
      const MigLayout l = key.layout();
      GpuEq used = GpuEq();
      for (int i = 0; i < l.size(); ++i) {
        if (!((key.free_mask() >> i) & 1)) {
          used += GpuEq::MigSlices(model.profiles[l.at(i).profile].compute_slices);
        }
      }
      return GpuEq::Gpus(1) - used;
    }
    case KeyMode::kShared: return GpuEq::MilliGpus(key.free_milli());
    case KeyMode::kUnusable: return GpuEq();
  }
  return GpuEq();
}

bool SharedFits(GpuKey key, const TaskShape& t) {
  if (key.mode() != KeyMode::kShared) return false;
  if (key.free_milli() < t.milli || key.free_memory_mib() < t.memory_mib) return false;
  if (key.free_clients() == 0) return false;
  if (!t.tenant.valid() || key.owner() == 0 || key.owner() == t.tenant.value() + 1) return true;
  return t.tenant_allows_cotenancy && key.owner_allows();
}

GpuKey SharedAfter(GpuKey key, const TaskShape& t) {
  const uint32_t clients = key.free_clients() == GpuKey::kUncappedClients
                               ? GpuKey::kUncappedClients
                               : key.free_clients() - 1;
  uint32_t owner = t.tenant.value() + 1;
  bool allows = t.tenant_allows_cotenancy;
  if (key.owner() != 0 && key.owner() != owner) {
    owner = GpuKey::kMultiOwner;
    allows = allows && key.owner_allows();
  } else if (key.owner() == owner) {
    allows = key.owner_allows();
  }
  return GpuKey::Shared(key.free_milli() - t.milli, key.free_memory_mib() - t.memory_mib,
                        clients, owner, allows);
}

int FreeInstanceOf(GpuKey key, uint8_t profile) {
  const MigLayout l = key.layout();
  for (int i = 0; i < l.size(); ++i) {
    if (l.at(i).profile == profile && ((key.free_mask() >> i) & 1)) return i;
  }
  return -1;
}

GpuKey MigAfterTake(GpuKey key, int index) {
  return GpuKey::Mig(key.layout(), static_cast<uint8_t>(key.free_mask() & ~(1u << index)));
}

std::vector<GpuKey> ReconfigOptions(const GpuModel& model, GpuKey idle_key, uint8_t profile) {
  std::vector<GpuKey> out;
  const MigProfile& p = model.profiles[profile];
  const MigLayout old = idle_key.layout();
  for (int start = 0; start < 8; ++start) {
    if (!p.ValidStart(start)) continue;
    const MigMask mask = p.MaskAt(start);
    MigLayout next;
    for (int i = 0; i < old.size(); ++i) {
      const MigInstance& inst = old.at(i);
      if (!(model.profiles[inst.profile].MaskAt(inst.start) & mask)) next.Add(inst);
    }
    // Keep the layout within count caps by dropping kept instances of the same profile from
    // the highest start down.
    int same = 0;
    for (int i = 0; i < next.size(); ++i) same += next.at(i).profile == profile;
    for (int i = next.size() - 1; i >= 0 && same + 1 > p.max_count; --i) {
      if (next.at(i).profile == profile) {
        next.RemoveAt(i);
        --same;
      }
    }
    if (next.size() == MigLayout::kMaxInstances) continue;
    next.Add({profile, static_cast<uint8_t>(start)});
    if (!ValidateLayout(model, next).ok()) continue;
    // The freed slices get more instances of the same profile where they fit: the demand that
    // made the scheduler re-partition is likely to ask again.
    for (int more = 0; more < 8 && next.size() < MigLayout::kMaxInstances; ++more) {
      if (!p.ValidStart(more) || next.IndexOfStart(more) >= 0) continue;
      MigLayout bigger = next;
      bigger.Add({profile, static_cast<uint8_t>(more)});
      if (ValidateLayout(model, bigger).ok()) next = bigger;
    }
    const int taken = next.IndexOfStart(start);
    const uint8_t all = static_cast<uint8_t>((1u << next.size()) - 1);
    out.push_back(GpuKey::Mig(next, static_cast<uint8_t>(all & ~(1u << taken))));
  }
  return out;
}

GpuEq UsableBy(const GpuModel& model, GpuKey key, const TaskShape& t, bool reconfig) {
  switch (t.kind) {
    case ShapeKind::kWholeGpus:
      return key.whole_free() ? GpuEq::Gpus(1) : GpuEq();
    case ShapeKind::kMigProfile: {
      if (key.mode() != KeyMode::kMig) return GpuEq();
      if (reconfig && MigIdle(key)) return GpuEq::Gpus(1);
      const MigLayout l = key.layout();
      GpuEq usable;
      for (int i = 0; i < l.size(); ++i) {
        if (l.at(i).profile == t.mig_profile && ((key.free_mask() >> i) & 1)) {
          usable += GpuEq::MigSlices(model.profiles[t.mig_profile].compute_slices);
        }
      }
      return usable;
    }
    case ShapeKind::kGpuFraction:
      return SharedFits(key, t) ? GpuEq::MilliGpus(key.free_milli()) : GpuEq();
  }
  return GpuEq();
}

}  // namespace gpupool
