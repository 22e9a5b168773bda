#include "agent/fake_probe.h"

#include <gtest/gtest.h>

#include "agent/health.h"

namespace gpupool {
namespace {

std::unique_ptr<FakeProbe> MakeFake(std::string_view spec, std::string node = "n1") {
  auto p = FakeProbe::Create(std::move(node), spec);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? std::move(*p) : nullptr;
}

std::string ParseError(std::string_view spec) {
  auto r = ParseFakeGpuSpec(Catalogue::BuiltIn(), spec);
  return r.ok() ? "ok" : r.error().message;
}

// "3g.40gb@0,3g.40gb@4": the instances of GpuInfo as profile@start.
std::string Layout(const GpuInfo& g) {
  std::string s;
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    s += (s.empty() ? "" : ",") + gi.profile + "@" + std::to_string(gi.start);
  }
  return s;
}

TEST(FakeProbe, WholeGpus) {
  auto p = MakeFake("8xh100-80gb");
  auto gpus = p->Discover();
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->size(), 8u);
  const GpuInfo& g3 = (*gpus)[3];
  EXPECT_EQ(g3.index, 3u);
  EXPECT_EQ(g3.uuid, "GPU-fake-n1-3");
  EXPECT_EQ(g3.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g3.model, "h100-80gb");
  EXPECT_EQ(g3.memory_mib, 81920u);
  EXPECT_EQ(g3.pci_bus_id, "00000000:04:00.0");
  EXPECT_EQ(g3.mig_current, MigMode::kDisabled);
  EXPECT_TRUE(g3.gpu_instances.empty());
  // All-to-all NVLink: 7 peers, link k to the k-th other GPU (GPU 3 skips itself).
  ASSERT_EQ(g3.nvlinks.size(), 7u);
  EXPECT_EQ(g3.nvlinks[2].remote_uuid, "GPU-fake-n1-2");
  EXPECT_EQ(g3.nvlinks[3].remote_uuid, "GPU-fake-n1-4");
  EXPECT_EQ(g3.nvlinks[3].link, 3u);
  EXPECT_EQ(g3.nvlinks[3].remote_bus_id, "00000000:05:00.0");
}

TEST(FakeProbe, MigWithoutInstances) {
  auto p = MakeFake("2xa100-40gb:mig");
  auto gpus = *p->Discover();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].mig_current, MigMode::kEnabled);
  EXPECT_EQ(gpus[1].mig_pending, MigMode::kEnabled);
  EXPECT_TRUE(gpus[1].gpu_instances.empty());
}

TEST(FakeProbe, MigLayoutIsPlacedAndNamed) {
  auto p = MakeFake("4xa100-80gb:mig=3g.40gb+3g.40gb", "rack1-node07");
  auto gpus = *p->Discover();
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(Layout(gpus[2]), "3g.40gb@0,3g.40gb@4");
  const GpuInstanceInfo& gi = gpus[2].gpu_instances[1];
  EXPECT_EQ(gi.id, 2u);
  EXPECT_EQ(gi.profile_id, 9u);
  EXPECT_EQ(gi.size, 4u);
  ASSERT_EQ(gi.mig_uuids.size(), 1u);
  EXPECT_EQ(gi.mig_uuids[0], "MIG-fake-rack1-node07-2-2");
}

TEST(FakeProbe, ApplyMigLayoutKeepsSharedInstancesAndNamesNewOnes) {
  auto p = MakeFake("2xh100-80gb:mig=3g.40gb+3g.40gb");
  const Catalogue cat = Catalogue::BuiltIn();
  const GpuModel& m = cat.model(*cat.Find("h100-80gb"));
  // 3g@0 becomes 1g@0 + 2g@2; 3g@4 stays. GIs 1 and 2 exist; the new ones are 3 and 4.
  ASSERT_TRUE(p->ApplyMigLayout(1, m, *ParseLayout(m, "1g.10gb@0,2g.20gb@2,3g.40gb@4")).ok());
  auto gpus = *p->Discover();
  EXPECT_EQ(Layout(gpus[1]), "1g.10gb@0,2g.20gb@2,3g.40gb@4");
  ASSERT_EQ(gpus[1].gpu_instances.size(), 3u);
  EXPECT_EQ(gpus[1].gpu_instances[0].mig_uuids[0], "MIG-fake-n1-1-3");
  EXPECT_EQ(gpus[1].gpu_instances[1].mig_uuids[0], "MIG-fake-n1-1-4");
  EXPECT_EQ(gpus[1].gpu_instances[2].mig_uuids[0], "MIG-fake-n1-1-2") << "kept: same GI, same UUID";
  EXPECT_EQ(gpus[1].gpu_instances[2].id, 2u);
  EXPECT_EQ(Layout(gpus[0]), "3g.40gb@0,3g.40gb@4") << "the other GPU is untouched";
  EXPECT_EQ(p->mig_changes(), 1);
  // Back to 3g@0: a new GI id, so a new MIG UUID, never the old one's.
  ASSERT_TRUE(p->ApplyMigLayout(1, m, *ParseLayout(m, "3g.40gb@0,3g.40gb@4")).ok());
  gpus = *p->Discover();
  EXPECT_EQ(gpus[1].gpu_instances[0].mig_uuids[0], "MIG-fake-n1-1-5");
  // The same layout again changes nothing.
  ASSERT_TRUE(p->ApplyMigLayout(1, m, *ParseLayout(m, "3g.40gb@0,3g.40gb@4")).ok());
  EXPECT_EQ(p->mig_changes(), 2);
}

TEST(FakeProbe, ApplyMigLayoutRefusesBadRequestsAndChangesNothing) {
  auto p = MakeFake("1xh100-80gb:mig=7g.80gb,1xh100-80gb");
  const Catalogue cat = Catalogue::BuiltIn();
  const GpuModel& h100 = cat.model(*cat.Find("h100-80gb"));
  const GpuModel& a100 = cat.model(*cat.Find("a100-80gb"));
  const MigLayout two = *ParseLayout(h100, "3g.40gb@0,3g.40gb@4");
  MigLayout overlapping = two;
  overlapping.Add({overlapping.at(0).profile, 4});  // a third 3g over the second
  EXPECT_EQ(p->ApplyMigLayout(1, h100, two).error().code, ErrorCode::kFailedPrecondition)
      << "GPU 1 is not in MIG mode";
  EXPECT_EQ(p->ApplyMigLayout(2, h100, two).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(p->ApplyMigLayout(0, a100, *ParseLayout(a100, "7g.80gb@0")).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(p->ApplyMigLayout(0, h100, overlapping).ok());
  EXPECT_EQ(Layout((*p->Discover())[0]), "7g.80gb@0");
  EXPECT_EQ(p->mig_changes(), 0);
}

TEST(FakeProbe, PlacementSearchFindsAllBalancedInAnyOrder) {
  // 3g first-fit at 0 would strand the 1g's; the search places largest first at the highest
  // free start: 3g@4, 2g@2, 1g@1, 1g@0 (mig-parted all-balanced).
  for (const char* spec : {"1xh100-80gb:mig=3g.40gb+2g.20gb+1g.10gb+1g.10gb",
                           "1xh100-80gb:mig=1g.10gb+1g.10gb+2g.20gb+3g.40gb"}) {
    auto gpus = *MakeFake(spec)->Discover();
    EXPECT_EQ(Layout(gpus[0]), "1g.10gb@0,1g.10gb@1,2g.20gb@2,3g.40gb@4") << spec;
  }
  // Explicit starts are kept; the rest fits around them.
  auto gpus = *MakeFake("1xh100-80gb:mig=3g.40gb@0+1g.10gb+1g.10gb+1g.10gb")->Discover();
  EXPECT_EQ(Layout(gpus[0]), "3g.40gb@0,1g.10gb@4,1g.10gb@5,1g.10gb@6");
  // "+me" belongs to the profile name.
  gpus = *MakeFake("1xh100-80gb:mig=1g.10gb+me+3g.40gb")->Discover();
  EXPECT_EQ(Layout(gpus[0]), "1g.10gb+me@3,3g.40gb@4");
}

TEST(FakeProbe, MixedGroupsOfOneModel) {
  auto gpus = *MakeFake("1xh100-80gb:mig=7g.80gb,2xh100-80gb")->Discover();
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(Layout(gpus[0]), "7g.80gb@0");
  EXPECT_EQ(gpus[1].mig_current, MigMode::kDisabled);
  EXPECT_EQ(gpus[2].uuid, "GPU-fake-n1-2");
}

TEST(FakeSpec, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(ParseError("8yh100-80gb"),
            "fake GPU spec '8yh100-80gb': at position 2: expected 'x' after the GPU count, "
            "found 'y'");
  EXPECT_EQ(ParseError("xh100-80gb"),
            "fake GPU spec 'xh100-80gb': at position 1: expected a GPU count, found 'x'");
  EXPECT_EQ(ParseError("0xh100-80gb"),
            "fake GPU spec '0xh100-80gb': at position 1: the GPU count must be at least 1");
  EXPECT_NE(ParseError("2xh100").find("at position 3: unknown GPU model 'h100' (known: "),
            std::string::npos);
  EXPECT_EQ(ParseError("2xh100-80gb:"),
            "fake GPU spec '2xh100-80gb:': at position 13: expected 'mig' after ':', found the "
            "end of the spec");
  EXPECT_EQ(ParseError("2xh100-80gb:mig="),
            "fake GPU spec '2xh100-80gb:mig=': at position 17: expected a MIG profile name, "
            "found the end of the spec");
  // 3g.20gb is an A100-40GB name, not an A100-80GB one.
  EXPECT_NE(ParseError("1xa100-80gb:mig=3g.20gb")
                .find("at position 17: '3g.20gb' is not a MIG profile of a100-80gb (profiles: "),
            std::string::npos);
  EXPECT_EQ(ParseError("1xa100-80gb:mig=3g.40gb@2"),
            "fake GPU spec '1xa100-80gb:mig=3g.40gb@2': at position 25: 3g.40gb cannot start at "
            "memory slice 2 on a100-80gb");
  EXPECT_EQ(ParseError("1xa100-80gb:mig=3g.40gb@x"),
            "fake GPU spec '1xa100-80gb:mig=3g.40gb@x': at position 25: expected a start memory "
            "slice 0-7 after '@', found 'x'");
  EXPECT_EQ(ParseError("1xa100-80gb:mig=3g.40gb+3g.40gb+3g.40gb"),
            "fake GPU spec '1xa100-80gb:mig=3g.40gb+3g.40gb+3g.40gb': at position 33: more than "
            "2 x 3g.40gb on a100-80gb");
  EXPECT_EQ(ParseError("1xa100-80gb:mig=4g.40gb+3g.40gb@0"),
            "fake GPU spec '1xa100-80gb:mig=4g.40gb+3g.40gb@0': at position 17: these MIG "
            "instances do not fit together on one a100-80gb");
  EXPECT_EQ(ParseError("1xa100-80gb,1xh100-80gb"),
            "fake GPU spec '1xa100-80gb,1xh100-80gb': at position 15: all GPUs of a node are one "
            "model: 'h100-80gb' after 'a100-80gb'");
  EXPECT_EQ(ParseError("1xa100-80gb:migx"),
            "fake GPU spec '1xa100-80gb:migx': at position 16: expected ',' or the end of the "
            "spec, found 'x'");
  EXPECT_EQ(ParseError("60xa100-80gb,5xa100-80gb"),
            "fake GPU spec '60xa100-80gb,5xa100-80gb': at position 14: more than 64 GPUs");
  EXPECT_EQ(ParseError(""),
            "fake GPU spec '': at position 1: expected a GPU count, found the end of the spec");
}

TEST(FakeProbe, RejectsABadNodeName) {
  EXPECT_FALSE(FakeProbe::Create("a/b", "1xh100-80gb").ok());
  EXPECT_FALSE(FakeProbe::Create("", "1xh100-80gb").ok());
}

TEST(FakeProbe, PollHealthReturnsAndClearsInjectedEvents) {
  auto p = MakeFake("2xh100-80gb:mig=3g.40gb+3g.40gb");
  p->InjectXid(1, 48);
  p->InjectXid(0, 31, 2);
  p->InjectEcc(1, 3);
  p->InjectRowRemapFailure(0);
  p->InjectRowRemapPending(1);
  p->InjectGpuLost(1);
  p->SetTemperature(0, 91);
  auto events = p->PollHealth();
  ASSERT_TRUE(events.ok());
  const std::vector<HealthEvent> want = {
      {1, "GPU-fake-n1-1", HealthEventKind::kXid, 48, kUnknownU32},
      {0, "GPU-fake-n1-0", HealthEventKind::kXid, 31, 2},
      {1, "GPU-fake-n1-1", HealthEventKind::kEccUncorrectable, 3, kUnknownU32},
      {0, "GPU-fake-n1-0", HealthEventKind::kRowRemapFailure, 1, kUnknownU32},
      {1, "GPU-fake-n1-1", HealthEventKind::kRowRemapPending, 1, kUnknownU32},
      {1, "GPU-fake-n1-1", HealthEventKind::kGpuLost, 0, kUnknownU32},
      {0, "GPU-fake-n1-0", HealthEventKind::kTemperature, 91, kUnknownU32},
      {1, "GPU-fake-n1-1", HealthEventKind::kTemperature, 40, kUnknownU32},
  };
  EXPECT_EQ(*events, want);
  // Injected events are gone; the temperatures are readings and stay.
  auto again = *p->PollHealth();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].kind, HealthEventKind::kTemperature);
  EXPECT_EQ(again[0].value, 91u);
  EXPECT_EQ(Classify(again[0]).action, HealthAction::kCordon);
}

TEST(FakeProbe, HeartbeatFlag) {
  auto p = MakeFake("1xh100-80gb");
  EXPECT_FALSE(p->heartbeat_lost());
  p->SetHeartbeatLost(true);
  EXPECT_TRUE(p->heartbeat_lost());
  p->SetHeartbeatLost(false);
  EXPECT_FALSE(p->heartbeat_lost());
}

TEST(FakeProbeDeathTest, InjectingIntoAMissingGpuIsABug) {
  auto p = MakeFake("1xh100-80gb");
  EXPECT_DEATH(p->InjectXid(1, 48), "fake GPU 1 of 1");
}

}  // namespace
}  // namespace gpupool
