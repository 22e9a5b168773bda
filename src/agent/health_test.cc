#include "agent/health.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

HealthEvent Event(HealthEventKind kind, uint64_t value) {
  HealthEvent e;
  e.kind = kind;
  e.value = value;
  return e;
}

struct Row {
  HealthEventKind kind;
  uint64_t value;
  HealthAction action;
  bool replace;
};

// DESIGN.md §7, one row per case.
TEST(Health, Table) {
  using A = HealthAction;
  using K = HealthEventKind;
  const Row rows[] = {
      // Application errors: nothing.
      {K::kXid, 13, A::kNone, false},
      {K::kXid, 31, A::kNone, false},
      {K::kXid, 43, A::kNone, false},
      // ECC: drain and reset the GPU.
      {K::kXid, 48, A::kDrainResetGpu, false},
      {K::kXid, 95, A::kDrainResetGpu, false},
      // Fallen off the bus: drain and reboot.
      {K::kXid, 79, A::kDrainReboot, false},
      // Row remapping failure: drain, replacement candidate.
      {K::kXid, 64, A::kDrain, true},
      // NVLink.
      {K::kXid, 74, A::kNvlinkProcedure, false},
      // Watch.
      {K::kXid, 63, A::kWatch, false},
      {K::kXid, 92, A::kWatch, false},
      // Unknown codes, and 999 (NVML could not decode), are watched.
      {K::kXid, 1, A::kWatch, false},
      {K::kXid, 119, A::kWatch, false},
      {K::kXid, 999, A::kWatch, false},
      // Levels.
      {K::kEccUncorrectable, 1, A::kDrain, false},
      {K::kEccUncorrectable, 0, A::kNone, false},
      {K::kRowRemapFailure, 1, A::kDrain, true},
      {K::kRowRemapPending, 1, A::kCordon, false},
      {K::kGpuLost, 0, A::kDrainReboot, false},
      // Temperature with the default thresholds: watch from 85 C, cordon from 90 C.
      {K::kTemperature, 40, A::kNone, false},
      {K::kTemperature, 84, A::kNone, false},
      {K::kTemperature, 85, A::kWatch, false},
      {K::kTemperature, 89, A::kWatch, false},
      {K::kTemperature, 90, A::kCordon, false},
      {K::kTemperature, 120, A::kCordon, false},
  };
  for (const Row& r : rows) {
    const HealthVerdict v = Classify(Event(r.kind, r.value));
    EXPECT_EQ(v.action, r.action) << HealthEventKindName(r.kind) << " " << r.value << ": got "
                                  << HealthActionName(v.action);
    EXPECT_EQ(v.replacement_candidate, r.replace) << HealthEventKindName(r.kind) << " " << r.value;
    // Every XID is explained, even an ignored one; a quiet reading has no reason.
    EXPECT_EQ(v.reason.empty(), r.kind != K::kXid && r.action == A::kNone) << v.reason;
  }
}

TEST(Health, ReasonsNameTheXid) {
  EXPECT_EQ(ClassifyXid(48).reason, "XID 48 (double-bit ECC error)");
  EXPECT_EQ(ClassifyXid(7).reason, "XID 7 (not in the table)");
}

TEST(Health, ThresholdsAreConfigurable) {
  const HealthThresholds t{.watch_celsius = 70, .cordon_celsius = 75};
  EXPECT_EQ(Classify(Event(HealthEventKind::kTemperature, 69), t).action, HealthAction::kNone);
  EXPECT_EQ(Classify(Event(HealthEventKind::kTemperature, 70), t).action, HealthAction::kWatch);
  EXPECT_EQ(Classify(Event(HealthEventKind::kTemperature, 75), t).action, HealthAction::kCordon);
}

TEST(Health, WorseKeepsTheMoreSevereActionAndBothReasons) {
  // XID 64 (drain, replace) then XID 79 (drain and reboot): reboot wins, the replacement
  // flag and the 64's reason survive.
  const HealthVerdict v = Worse(ClassifyXid(64), ClassifyXid(79));
  EXPECT_EQ(v.action, HealthAction::kDrainReboot);
  EXPECT_TRUE(v.replacement_candidate);
  EXPECT_EQ(v.reason, "XID 79 (GPU has fallen off the bus); XID 64 (row remapping failure)");
  // A kNone verdict adds nothing.
  EXPECT_EQ(Worse(ClassifyXid(13), ClassifyXid(63)), ClassifyXid(63));
  EXPECT_EQ(Worse(ClassifyXid(63), HealthVerdict{}), ClassifyXid(63));
  // Ties keep the first.
  EXPECT_EQ(Worse(ClassifyXid(48), ClassifyXid(95)).reason,
            "XID 48 (double-bit ECC error); XID 95 (uncontained ECC error)");
}

TEST(Health, SeverityOrder) {
  // Each action is worse than the one before it.
  const HealthAction order[] = {
      HealthAction::kNone,       HealthAction::kWatch,           HealthAction::kCordon,
      HealthAction::kDrain,      HealthAction::kNvlinkProcedure, HealthAction::kDrainResetGpu,
      HealthAction::kDrainReboot};
  for (size_t i = 1; i < std::size(order); ++i) {
    HealthVerdict lo{order[i - 1], false, "lo"}, hi{order[i], false, "hi"};
    EXPECT_EQ(Worse(lo, hi).action, order[i]) << HealthActionName(order[i]);
    EXPECT_EQ(Worse(hi, lo).action, order[i]) << HealthActionName(order[i]);
  }
}

}  // namespace
}  // namespace gpupool
