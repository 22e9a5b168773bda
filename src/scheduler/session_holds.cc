// Session's backfill holds (docs/design/backfill.md): a held node is seen whole by jobs that end
// before its hold starts, and through its caps (HeldView) and CPU/memory room by the others.
#include <algorithm>

#include "scheduler/session.h"

namespace gpupool {

uint32_t Session::EffectiveClass(uint32_t node, Time end) const {
  const NodeSlot& s = slots_[node];
  if (!s.held || end <= s.hold_until) return s.cls;
  return s.held_cls;
}

GpuKey Session::HeldView(GpuKey key, GpuKey cap) {
  switch (cap.mode()) {
    case KeyMode::kMig:
      if (key.mode() != KeyMode::kMig || !(key.layout() == cap.layout())) return GpuKey::Unusable();
      return GpuKey::Mig(key.layout(), static_cast<uint8_t>(key.free_mask() & ~cap.free_mask()));
    case KeyMode::kShared: {
      if (key.mode() != KeyMode::kShared) return GpuKey::Unusable();
      uint32_t owner = cap.owner();
      bool allows = cap.owner_allows();
      if (key.owner() != 0 && key.owner() != owner) {
        owner = GpuKey::kMultiOwner;
        allows = allows && key.owner_allows();
      } else if (key.owner() == owner) {
        allows = allows && key.owner_allows();
      }
      return GpuKey::Shared(std::min(key.free_milli(), cap.free_milli()),
                            std::min(key.free_memory_mib(), cap.free_memory_mib()),
                            std::min(key.free_clients(), cap.free_clients()), owner, allows);
    }
    case KeyMode::kWhole:
    case KeyMode::kUnusable: return GpuKey::Unusable();
  }
  return GpuKey::Unusable();
}

void Session::Hold(uint32_t node, uint16_t mask, Time until) {
  Keys caps;
  caps.fill(GpuKey::Unusable());
  Hold(node, mask, caps, until);
}

void Session::Hold(uint32_t node, uint16_t mask, const Keys& caps, Time until, int64_t cpu_room,
                   int64_t mem_room) {
  SaveNode(node);
  const NodeSlot before = slots_[node];
  NodeSlot& s = slots_[node];
  s.held = true;
  s.hold_mask = mask;
  s.hold_cpu = cpu_room;
  s.hold_mem = mem_room;
  s.hold_caps = caps;
  s.hold_until = until;
  Reindex(node, before);
}

void Session::TakeFromHold(uint32_t node, int gpu, const TaskShape& t) {
  NodeSlot& s = slots_[node];
  GP_CHECK((s.hold_mask >> gpu & 1) && s.hold_caps[gpu].mode() == KeyMode::kShared &&
           SharedFits(s.hold_caps[gpu], t));
  SaveNode(node);
  const NodeSlot before = s;
  s.hold_caps[gpu] = SharedAfter(s.hold_caps[gpu], t);
  Reindex(node, before);
}

}  // namespace gpupool
