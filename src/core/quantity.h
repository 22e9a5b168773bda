// GPU-equivalents in exact integer arithmetic.
//
// One GPU is kUnitsPerGpu = 7000 units: a MIG compute slice (1/7 GPU) is 1000 units and a
// milli-GPU (1/1000 GPU, the grain of time-sliced fractions) is 7 units. Quota, fair share and
// billing all use this one measure, so sums never drift. See docs/glossary.md.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace gpupool {

class GpuEq {
 public:
  static constexpr int64_t kUnitsPerGpu = 7000;
  static constexpr int64_t kUnitsPerMigSlice = 1000;
  static constexpr int64_t kUnitsPerMilliGpu = 7;

  constexpr GpuEq() = default;
  static constexpr GpuEq Units(int64_t u) { return GpuEq(u); }
  static constexpr GpuEq Gpus(int64_t n) { return GpuEq(n * kUnitsPerGpu); }
  static constexpr GpuEq MigSlices(int64_t n) { return GpuEq(n * kUnitsPerMigSlice); }
  static constexpr GpuEq MilliGpus(int64_t n) { return GpuEq(n * kUnitsPerMilliGpu); }

  constexpr int64_t units() const { return units_; }
  // Whole GPUs, rounded down.
  constexpr int64_t whole_gpus() const { return units_ / kUnitsPerGpu; }
  double ToGpus() const { return static_cast<double>(units_) / kUnitsPerGpu; }

  constexpr GpuEq& operator+=(GpuEq o) { units_ += o.units_; return *this; }
  constexpr GpuEq& operator-=(GpuEq o) { units_ -= o.units_; return *this; }
  friend constexpr GpuEq operator+(GpuEq a, GpuEq b) { return GpuEq(a.units_ + b.units_); }
  friend constexpr GpuEq operator-(GpuEq a, GpuEq b) { return GpuEq(a.units_ - b.units_); }
  friend constexpr GpuEq operator*(GpuEq a, int64_t k) { return GpuEq(a.units_ * k); }
  friend constexpr GpuEq operator*(int64_t k, GpuEq a) { return GpuEq(a.units_ * k); }
  friend constexpr auto operator<=>(GpuEq, GpuEq) = default;

 private:
  constexpr explicit GpuEq(int64_t u) : units_(u) {}
  int64_t units_ = 0;
};

constexpr GpuEq Max(GpuEq a, GpuEq b) { return a < b ? b : a; }
constexpr GpuEq Min(GpuEq a, GpuEq b) { return a < b ? a : b; }

// "8", "0.143", "2.5": at most three decimals, trailing zeros dropped.
std::string ToString(GpuEq q);

}  // namespace gpupool
