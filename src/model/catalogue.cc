#include "model/catalogue.h"

#include <algorithm>
#include <array>

namespace gpupool {
namespace {

// The 7-slice placement table shared by A100, H100, H200 (and, unverified, B200/GB200):
// shared/reference/gpu-partitioning.md §1.2.1.
struct SliceShape {
  uint8_t id, compute, memory, max_count, start_mask;
};
constexpr std::array<SliceShape, 7> kSevenSliceTable = {{
    {0, 7, 8, 1, 0b0000'0001},   // 7g: start 0
    {5, 4, 4, 1, 0b0000'0001},   // 4g: start 0
    {9, 3, 4, 2, 0b0001'0001},   // 3g: starts 0, 4
    {14, 2, 2, 3, 0b0001'0101},  // 2g: starts 0, 2, 4
    {15, 1, 2, 4, 0b0101'0101},  // 1g with 2 memory slices: starts 0, 2, 4, 6
    {19, 1, 1, 7, 0b0111'1111},  // 1g: starts 0..6
    {20, 1, 1, 1, 0b0111'1111},  // 1g+me: starts 0..6, one per GPU
}};

// Names per model, in kSevenSliceTable order: 7g, 4g, 3g, 2g, 1g(2 mem), 1g, 1g+me.
GpuModel SevenSliceModel(std::string name, uint32_t memory_mib,
                         const std::array<const char*, 7>& names, bool verified) {
  GpuModel m;
  m.name = std::move(name);
  m.memory_mib = memory_mib;
  m.verified = verified;
  for (size_t i = 0; i < kSevenSliceTable.size(); ++i) {
    if (names[i] == nullptr) continue;  // profile absent on this product
    const SliceShape& s = kSevenSliceTable[i];
    MigProfile p;
    p.id = s.id;
    p.name = names[i];
    p.compute_slices = s.compute;
    p.memory_slices = s.memory;
    p.max_count = s.max_count;
    p.start_mask = s.start_mask;
    p.memory_mib = static_cast<uint32_t>(uint64_t{memory_mib} * s.memory / 8);
    m.profiles.push_back(std::move(p));
  }
  std::sort(m.profiles.begin(), m.profiles.end(),
            [](const MigProfile& a, const MigProfile& b) { return a.id < b.id; });
  return m;
}

Status ValidateModel(const GpuModel& m) {
  if (m.name.empty()) return InvalidArgument("GPU model needs a name");
  if (m.memory_mib == 0) return InvalidArgument("GPU model " + m.name + " needs memory_mib > 0");
  for (size_t i = 0; i < m.profiles.size(); ++i) {
    const MigProfile& p = m.profiles[i];
    if (p.compute_slices < 1 || p.compute_slices > 7 || p.memory_slices < 1 ||
        p.memory_slices > 8 || p.max_count < 1 || p.start_mask == 0) {
      return InvalidArgument("MIG profile " + p.name + " of " + m.name + " is malformed");
    }
    for (int s = 0; s < 8; ++s) {
      if (p.ValidStart(s) && s + p.memory_slices > 8) {
        return InvalidArgument("MIG profile " + p.name + " start " + std::to_string(s) +
                               " runs past memory slice 7");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (m.profiles[j].id == p.id || m.profiles[j].name == p.name) {
        return InvalidArgument("duplicate MIG profile " + p.name + " in " + m.name);
      }
    }
  }
  return Ok();
}

}  // namespace

int GpuModel::ProfileIndexById(uint8_t id) const {
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

int GpuModel::ProfileIndexByName(std::string_view n) const {
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

Catalogue Catalogue::BuiltIn() {
  Catalogue c;
  auto add = [&c](GpuModel m) { GP_CHECK(c.Add(std::move(m)).ok()); };
  add(SevenSliceModel("a100-40gb", 40960,
                      {"7g.40gb", "4g.20gb", "3g.20gb", "2g.10gb", "1g.10gb", "1g.5gb",
                       "1g.5gb+me"},
                      true));
  add(SevenSliceModel("a100-80gb", 81920,
                      {"7g.80gb", "4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb",
                       "1g.10gb+me"},
                      true));
  add(SevenSliceModel("h100-80gb", 81920,
                      {"7g.80gb", "4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb",
                       "1g.10gb+me"},
                      true));
  add(SevenSliceModel("h100-94gb", 96256,
                      {"7g.94gb", "4g.47gb", "3g.47gb", "2g.24gb", "1g.24gb", "1g.12gb",
                       "1g.12gb+me"},
                      true));
  add(SevenSliceModel("h200-141gb", 144384,
                      {"7g.141gb", "4g.71gb", "3g.71gb", "2g.35gb", "1g.35gb", "1g.18gb",
                       "1g.18gb+me"},
                      true));
  // Placements for Blackwell are expected to match the 7-slice table but were not confirmed
  // with nvmlDeviceGetGpuInstancePossiblePlacements_v2 (reference §1.2.7).
  add(SevenSliceModel("b200-180gb", 184320,
                      {"7g.180gb", "4g.90gb", "3g.90gb", "2g.45gb", "1g.45gb", "1g.23gb",
                       "1g.23gb+me"},
                      false));
  add(SevenSliceModel("gb200-186gb", 190464,
                      {"7g.189gb", "4g.95gb", "3g.95gb", "2g.47gb", "1g.47gb", "1g.24gb",
                       nullptr},
                      false));
  return c;
}

Result<FlavorId> Catalogue::Add(GpuModel m) {
  GP_RETURN_IF_ERROR(ValidateModel(m));
  if (Find(m.name).ok()) return AlreadyExists("GPU model " + m.name + " already exists");
  if (models_.size() >= FlavorId::kInvalid) return InvalidArgument("too many GPU models");
  models_.push_back(std::move(m));
  return FlavorId(static_cast<uint16_t>(models_.size() - 1));
}

const GpuModel& Catalogue::model(FlavorId id) const {
  GP_CHECK(id.valid() && id.value() < models_.size()) << "flavor " << id.value();
  return models_[id.value()];
}

Result<FlavorId> Catalogue::Find(std::string_view name) const {
  for (size_t i = 0; i < models_.size(); ++i) {
    if (models_[i].name == name) return FlavorId(static_cast<uint16_t>(i));
  }
  return NotFound("unknown GPU model '" + std::string(name) + "'");
}

}  // namespace gpupool
