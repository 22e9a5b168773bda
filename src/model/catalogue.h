// The GPU catalogue: GPU models (flavors) and, for MIG-capable models, their exact MIG geometry.
//
// Profile IDs differ across products (1g.10gb is GI profile 15 on A100-40GB but 19 on
// H100-80GB), so a profile is always looked up through its model: (flavor, GI profile ID).
// Geometry comes from shared/reference/gpu-partitioning.md §1.2; a model marked unverified has
// tables that were not confirmed on hardware (B200, GB200).
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/result.h"

namespace gpupool {

// Bit i set = memory slice i is covered. 7-slice boards have 8 memory slices.
using MigMask = uint8_t;

struct MigProfile {
  uint8_t id = 0;              // GI profile ID as NVML reports it (info.id), e.g. 19.
  std::string name;            // e.g. "1g.10gb"; unique within one model only.
  uint8_t compute_slices = 0;  // of 7; GPU-equivalents = compute_slices / 7.
  uint8_t memory_slices = 0;   // of 8.
  uint8_t max_count = 0;       // per GPU.
  uint8_t start_mask = 0;      // bit s set = s is a valid start (in memory slices).
  uint32_t memory_mib = 0;

  bool ValidStart(int start) const { return start >= 0 && start < 8 && (start_mask >> start) & 1; }
  // REQUIRES: ValidStart(start).
  MigMask MaskAt(int start) const {
    return static_cast<MigMask>(((1u << memory_slices) - 1u) << start);
  }
};

struct GpuModel {
  std::string name;          // flavor name, e.g. "h100-80gb"
  uint32_t memory_mib = 0;   // whole-GPU memory
  bool verified = true;      // false: geometry not confirmed on hardware
  std::vector<MigProfile> profiles;  // empty: not MIG-capable. Ordered by id.

  bool mig_capable() const { return !profiles.empty(); }
  // Index into profiles, or -1.
  int ProfileIndexById(uint8_t id) const;
  int ProfileIndexByName(std::string_view name) const;
};

class Catalogue {
 public:
  // A100-40GB, A100-80GB, H100-80GB, H100-94GB, H200-141GB (verified) and B200-180GB,
  // GB200-186GB (unverified).
  static Catalogue BuiltIn();

  // Adds a model; fails if the name is taken or the geometry is malformed.
  Result<FlavorId> Add(GpuModel model);

  size_t size() const { return models_.size(); }
  // REQUIRES: id.valid() && id.value() < size().
  const GpuModel& model(FlavorId id) const;
  Result<FlavorId> Find(std::string_view name) const;
  const std::vector<GpuModel>& models() const { return models_; }

 private:
  std::vector<GpuModel> models_;
};

}  // namespace gpupool
