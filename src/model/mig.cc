#include "model/mig.h"

#include <algorithm>
#include <vector>

namespace gpupool {

int MigLayout::IndexOfStart(int start) const {
  for (int i = 0; i < size_; ++i) {
    if (instances_[i].start == start) return i;
  }
  return -1;
}

void MigLayout::Add(MigInstance inst) {
  GP_CHECK(size_ < kMaxInstances);
  int pos = size_;
  while (pos > 0 && instances_[pos - 1].start > inst.start) {
    instances_[pos] = instances_[pos - 1];
    --pos;
  }
  instances_[pos] = inst;
  ++size_;
}

void MigLayout::RemoveAt(int i) {
  GP_CHECK(i >= 0 && i < size_);
  for (int j = i; j + 1 < size_; ++j) instances_[j] = instances_[j + 1];
  --size_;
}

uint64_t MigLayout::Encode() const {
  // Instance i occupies bits [7i, 7i+7): profile index + 1 in the high 4 bits (0 = no
  // instance), start in the low 3 bits.
  uint64_t key = 0;
  for (int i = 0; i < size_; ++i) {
    const uint64_t cell = (uint64_t{instances_[i].profile + 1u} << 3) | instances_[i].start;
    key |= cell << (7 * i);
  }
  return key;
}

MigLayout MigLayout::Decode(uint64_t key) {
  MigLayout l;
  for (int i = 0; i < kMaxInstances; ++i) {
    const uint64_t cell = (key >> (7 * i)) & 0x7f;
    if (cell == 0) break;
    l.instances_[l.size_++] = {static_cast<uint8_t>((cell >> 3) - 1),
                               static_cast<uint8_t>(cell & 7)};
  }
  return l;
}

MigMask UsedMask(const GpuModel& model, const MigLayout& layout) {
  MigMask mask = 0;
  for (int i = 0; i < layout.size(); ++i) {
    const MigInstance& inst = layout.at(i);
    mask |= model.profiles[inst.profile].MaskAt(inst.start);
  }
  return mask;
}

Status ValidateLayout(const GpuModel& model, const MigLayout& layout) {
  if (!model.mig_capable()) return InvalidArgument(model.name + " is not MIG-capable");
  if (layout.size() > MigLayout::kMaxInstances) {
    return InvalidArgument("more than 7 GPU instances");
  }
  MigMask used = 0;
  std::vector<int> counts(model.profiles.size(), 0);
  for (int i = 0; i < layout.size(); ++i) {
    const MigInstance& inst = layout.at(i);
    if (inst.profile >= model.profiles.size()) {
      return InvalidArgument("unknown MIG profile index " + std::to_string(inst.profile));
    }
    const MigProfile& p = model.profiles[inst.profile];
    if (!p.ValidStart(inst.start)) {
      return InvalidArgument(p.name + " cannot start at memory slice " +
                             std::to_string(inst.start) + " on " + model.name);
    }
    const MigMask m = p.MaskAt(inst.start);
    if (used & m) {
      return InvalidArgument(p.name + "@" + std::to_string(inst.start) +
                             " overlaps another instance");
    }
    used |= m;
    if (++counts[inst.profile] > p.max_count) {
      return InvalidArgument("more than " + std::to_string(p.max_count) + " x " + p.name);
    }
  }
  return Ok();
}

Result<MigLayout> ParseLayout(const GpuModel& model, std::string_view text) {
  MigLayout layout;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t at = item.find('@');
    if (at == std::string_view::npos || at + 2 != item.size() || item[at + 1] < '0' ||
        item[at + 1] > '7') {
      return InvalidArgument("MIG instance '" + std::string(item) +
                             "' must look like 3g.40gb@4");
    }
    const int index = model.ProfileIndexByName(item.substr(0, at));
    if (index < 0) {
      return InvalidArgument("unknown MIG profile '" + std::string(item.substr(0, at)) +
                             "' for " + model.name);
    }
    if (layout.size() == MigLayout::kMaxInstances) {
      return InvalidArgument("more than 7 GPU instances");
    }
    layout.Add({static_cast<uint8_t>(index), static_cast<uint8_t>(item[at + 1] - '0')});
  }
  GP_RETURN_IF_ERROR(ValidateLayout(model, layout));
  return layout;
}

std::string ToString(const GpuModel& model, const MigLayout& layout) {
  std::string s;
  for (int i = 0; i < layout.size(); ++i) {
    if (i) s += ",";
    s += model.profiles[layout.at(i).profile].name + "@" + std::to_string(layout.at(i).start);
  }
  return s;
}

MigLayout AllBalancedLayout(const GpuModel& model) {
  MigLayout l;
  auto add = [&](uint8_t gi_id, uint8_t start) {
    const int idx = model.ProfileIndexById(gi_id);
    GP_CHECK(idx >= 0) << model.name << " lacks GI profile " << int{gi_id};
    l.Add({static_cast<uint8_t>(idx), start});
  };
  add(19, 0);
  add(19, 1);
  add(14, 2);
  add(9, 4);
  return l;
}

}  // namespace gpupool
