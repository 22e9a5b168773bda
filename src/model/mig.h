// MIG layouts: which GPU instances exist on one MIG-mode GPU.
//
// A layout is valid iff (1) every instance uses a profile of the GPU's model at one of that
// profile's valid starts, (2) the memory-slice masks of the instances are pairwise disjoint,
// (3) per-profile instance counts stay within max_count, and (4) there are at most 7
// instances. Disjoint memory masks imply disjoint compute slices on 7-slice boards
// (shared/reference/gpu-partitioning.md §1.2.1), so (2) is also the compute check.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "model/catalogue.h"

namespace gpupool {

struct MigInstance {
  uint8_t profile = 0;  // index into GpuModel::profiles (not the GI profile ID)
  uint8_t start = 0;    // first memory slice
  friend bool operator==(const MigInstance&, const MigInstance&) = default;
};

class MigLayout {
 public:
  static constexpr int kMaxInstances = 7;

  MigLayout() = default;

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Instances ordered by start; index i is stable for a given layout.
  const MigInstance& at(int i) const { return instances_[i]; }
  // Index of the instance starting at `start`, or -1.
  int IndexOfStart(int start) const;

  // Inserts keeping start order. REQUIRES: size() < kMaxInstances.
  void Add(MigInstance inst);
  void RemoveAt(int i);

  // A 64-bit key that identifies the layout: 7 bits per instance (4 profile, 3 start) in start
  // order; distinct layouts of one model have distinct keys.
  uint64_t Encode() const;
  static MigLayout Decode(uint64_t key);

  friend bool operator==(const MigLayout& a, const MigLayout& b) {
    if (a.size_ != b.size_) return false;
    for (int i = 0; i < a.size_; ++i) {
      if (!(a.instances_[i] == b.instances_[i])) return false;
    }
    return true;
  }

 private:
  std::array<MigInstance, kMaxInstances> instances_{};
  int size_ = 0;
};

// Memory slices covered by the layout. REQUIRES: layout valid for model.
MigMask UsedMask(const GpuModel& model, const MigLayout& layout);
Status ValidateLayout(const GpuModel& model, const MigLayout& layout);

// "3g.40gb@4,2g.20gb@2,1g.10gb@0,1g.10gb@1" (any order) or "" for no instances.
Result<MigLayout> ParseLayout(const GpuModel& model, std::string_view text);
std::string ToString(const GpuModel& model, const MigLayout& layout);

// mig-parted's all-balanced geometry: 2 x 1g @0,@1, 1 x 2g @2, 1 x 3g @4 (reference §1.2.8).
MigLayout AllBalancedLayout(const GpuModel& model);

}  // namespace gpupool
