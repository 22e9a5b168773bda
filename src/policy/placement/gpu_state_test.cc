#include "policy/placement/gpu_state.h"

#include <gtest/gtest.h>

namespace gpupool {
namespace {

const GpuModel& H100() {
  static const Catalogue c = Catalogue::BuiltIn();
  return c.model(*c.Find("h100-80gb"));
}

TEST(GpuKey, FieldsRoundTrip) {
  const GpuKey k = GpuKey::Shared(250, 40960, 3, 17, true);
  EXPECT_EQ(k.mode(), KeyMode::kShared);
  EXPECT_EQ(k.free_milli(), 250u);
  EXPECT_EQ(k.free_memory_mib(), 40960u);
  EXPECT_EQ(k.free_clients(), 3u);
  EXPECT_EQ(k.owner(), 17u);
  EXPECT_TRUE(k.owner_allows());
  const MigLayout l = AllBalancedLayout(H100());
  const GpuKey m = GpuKey::Mig(l, 0b0101);
  EXPECT_EQ(m.layout(), l);
  EXPECT_EQ(m.free_mask(), 0b0101);
}

TEST(GpuKey, FreeEqOfMigCountsComputeSlicesOfFreeInstances) {
  // All-balanced: 1g@0, 1g@1, 2g@2, 3g@4 (7 compute slices). Busy: 1g@1 and 3g@4 = 4 slices.
  const GpuKey m = GpuKey::Mig(AllBalancedLayout(H100()), 0b0101);
  EXPECT_EQ(FreeEq(H100(), m), GpuEq::MigSlices(3));
  // 3g + 3g leaves one compute slice that no instance can use: free but unusable.
  const GpuKey two3g = GpuKey::Mig(*ParseLayout(H100(), "3g.40gb@0,3g.40gb@4"), 0b00);
  EXPECT_EQ(FreeEq(H100(), two3g), GpuEq::MigSlices(1));
}

TEST(GpuKey, SharedGpuHonoursOwnershipAndConsent) {
  TaskShape t{.kind = ShapeKind::kGpuFraction, .milli = 300, .memory_mib = 1000,
              .tenant = TenantId(4), .tenant_allows_cotenancy = true};
  const GpuKey empty = GpuKey::Shared(1000, 80000, GpuKey::kUncappedClients, 0, true);
  ASSERT_TRUE(SharedFits(empty, t));
  const GpuKey mine = SharedAfter(empty, t);
  EXPECT_EQ(mine.owner(), 5u);  // tenant id + 1
  EXPECT_EQ(mine.free_milli(), 700u);
  // Another tenant that allows co-tenancy may join; one that does not may not.
  TaskShape other = t;
  other.tenant = TenantId(9);
  EXPECT_TRUE(SharedFits(mine, other));
  other.tenant_allows_cotenancy = false;
  EXPECT_FALSE(SharedFits(mine, other));
  other.tenant_allows_cotenancy = true;
  EXPECT_EQ(SharedAfter(mine, other).owner(), GpuKey::kMultiOwner);
  // A GPU owned by a tenant that did not consent stays its own.
  TaskShape shy = t;
  shy.tenant_allows_cotenancy = false;
  const GpuKey shys = SharedAfter(empty, shy);
  EXPECT_FALSE(SharedFits(shys, other));
}

TEST(GpuKey, ClientCapLimitsSharers) {
  TaskShape t{.kind = ShapeKind::kGpuFraction, .milli = 100, .tenant = TenantId(0)};
  GpuKey k = GpuKey::Shared(1000, 80000, 2, 0, true);
  k = SharedAfter(k, t);
  k = SharedAfter(k, t);
  EXPECT_EQ(k.free_clients(), 0u);
  EXPECT_FALSE(SharedFits(k, t));
}

TEST(GpuKey, ReconfigFillsFreedSlicesWithTheRequestedProfile) {
  // [7g] asked for a 2g: 2g@0, 2g@2, 2g@4 (at most 3 x 2g), one of them taken.
  const GpuModel& m = H100();
  const GpuKey idle = GpuKey::Mig(*ParseLayout(m, "7g.80gb@0"), 0b1);
  const int p2g = m.ProfileIndexByName("2g.20gb");
  const std::vector<GpuKey> opts = ReconfigOptions(m, idle, static_cast<uint8_t>(p2g));
  ASSERT_EQ(opts.size(), 3u);
  for (const GpuKey& k : opts) {
    EXPECT_EQ(ToString(m, k.layout()), "2g.20gb@0,2g.20gb@2,2g.20gb@4");
    EXPECT_EQ(FreeEq(m, k), GpuEq::MigSlices(5));  // two free 2g + the unpartitioned slice
  }
  EXPECT_EQ(opts[1].free_mask(), 0b101);  // the 2g at start 2 is the one taken
}

TEST(GpuKey, ReconfigKeepsInstancesThatDoNotOverlap) {
  // Idle all-balanced GPU asked for a 3g: at start 0 the new 3g overlaps 1g@0, 1g@1, 2g@2
  // and keeps 3g@4; at start 4 it replaces the existing 3g@4 (same layout: skipped by callers).
  const GpuModel& m = H100();
  const MigLayout l = AllBalancedLayout(m);
  const GpuKey idle = GpuKey::Mig(l, 0b1111);
  const int p3g = m.ProfileIndexByName("3g.40gb");
  const std::vector<GpuKey> opts = ReconfigOptions(m, idle, static_cast<uint8_t>(p3g));
  ASSERT_EQ(opts.size(), 2u);
  EXPECT_EQ(ToString(m, opts[0].layout()), "3g.40gb@0,3g.40gb@4");
  EXPECT_EQ(FreeEq(m, opts[0]), GpuEq::MigSlices(4));  // the other 3g + the stranded slice
  EXPECT_EQ(opts[1].layout(), l);
  // A 7g replaces everything.
  const int p7g = m.ProfileIndexByName("7g.80gb");
  const std::vector<GpuKey> full = ReconfigOptions(m, idle, static_cast<uint8_t>(p7g));
  ASSERT_EQ(full.size(), 1u);
  EXPECT_EQ(ToString(m, full[0].layout()), "7g.80gb@0");
  EXPECT_EQ(FreeEq(m, full[0]), GpuEq());
}

}  // namespace
}  // namespace gpupool
