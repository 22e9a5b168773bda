// NvmlProbe against no library, a library that is not NVML, and the fake libnvidia-ml modules
// built from fake_nvml.cc (which node they pretend to be is described there).
#include "agent/nvml_probe.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace gpupool {
namespace {

constexpr const char* kFake = GPUPOOL_FAKE_NVML_PATH;
constexpr const char* kFakeMinimal = GPUPOOL_FAKE_NVML_MINIMAL_PATH;

NvmlProbe Probe(const std::string& path) {
  NvmlProbeOptions o;
  o.library_path = path;
  return NvmlProbe(std::move(o));
}

// A hook of the fake module the probe has loaded (RTLD_NOLOAD: the same instance).
template <class Fn>
Fn Hook(const char* name) {
  void* h = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(h, nullptr) << "the fake NVML is not loaded";
  Fn fn = h ? reinterpret_cast<Fn>(dlsym(h, name)) : nullptr;
  if (h) dlclose(h);
  EXPECT_NE(fn, nullptr) << name;
  return fn;
}

bool HasNote(const NvmlProbe& p, const std::string& part) {
  for (const std::string& n : p.notes()) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(NvmlProbe, MissingLibraryIsAClearError) {
  NvmlProbe p = Probe("/nonexistent/libnvidia-ml.so.1");
  auto gpus = p.Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(gpus.error().message.rfind("/nonexistent/libnvidia-ml.so.1 not found: ", 0), 0u)
      << gpus.error().message;
  auto health = p.PollHealth();  // no crash either; tries again and fails the same way
  ASSERT_FALSE(health.ok());
  EXPECT_EQ(health.error().message, gpus.error().message);
}

TEST(NvmlProbe, DefaultSonameMissingOnThisMachine) {
  if (void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "a real libnvidia-ml.so.1 is installed here";
  }
  NvmlProbe p = Probe(NvmlLibrary::kDefaultPath);
  auto gpus = p.Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.error().message.rfind("libnvidia-ml.so.1 not found: ", 0), 0u)
      << gpus.error().message;
}

TEST(NvmlProbe, ALibraryThatIsNotNvml) {
  NvmlProbe p = Probe("libc.so.6");
  auto gpus = p.Discover();
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.error().message.rfind("libc.so.6 lacks required symbol nvmlInit_v2", 0), 0u)
      << gpus.error().message;
}

TEST(NvmlProbe, EnvironmentOverridesTheDefaultPath) {
  setenv("GPUPOOL_NVML_LIBRARY", kFake, 1);
  NvmlProbe from_env;
  unsetenv("GPUPOOL_NVML_LIBRARY");
  EXPECT_EQ(from_env.library_path(), kFake);
  EXPECT_TRUE(from_env.Discover().ok());
  NvmlProbe default_path;
  EXPECT_EQ(default_path.library_path(), "libnvidia-ml.so.1");
}

TEST(NvmlProbe, InitFailureIsReportedAndRetried) {
  setenv("GPUPOOL_FAKE_NVML_SCENARIO", "init-fails", 1);
  NvmlProbe p = Probe(kFake);
  auto gpus = p.Discover();
  unsetenv("GPUPOOL_FAKE_NVML_SCENARIO");
  ASSERT_FALSE(gpus.ok());
  EXPECT_EQ(gpus.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(gpus.error().message, "nvmlInit_v2: Driver Not Loaded (9)");
  EXPECT_TRUE(p.Discover().ok());  // the driver came up: the next call succeeds
}

TEST(NvmlProbe, DiscoverReadsTheFakeNode) {
  NvmlProbe p = Probe(kFake);
  auto r = p.Discover();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::vector<GpuInfo>& gpus = *r;
  ASSERT_EQ(gpus.size(), 2u);

  const GpuInfo& h = gpus[0];
  EXPECT_EQ(h.index, 0u);
  EXPECT_EQ(h.uuid, "GPU-fake-nvml-0");
  EXPECT_EQ(h.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h.model, "h100-80gb");
  EXPECT_EQ(h.memory_mib, 81559u);
  EXPECT_EQ(h.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(h.pci_device_id, 0x233010DEu);
  EXPECT_EQ(h.mig_current, MigMode::kEnabled);
  EXPECT_EQ(h.mig_pending, MigMode::kEnabled);
  // Two 3g instances, ordered by start, each with its MIG device found at a sparse index.
  ASSERT_EQ(h.gpu_instances.size(), 2u);
  EXPECT_EQ(h.gpu_instances[0].id, 1u);
  EXPECT_EQ(h.gpu_instances[0].profile_id, 9u);
  EXPECT_EQ(h.gpu_instances[0].profile, "3g.40gb");
  EXPECT_EQ(h.gpu_instances[0].start, 0u);
  EXPECT_EQ(h.gpu_instances[0].size, 4u);
  EXPECT_EQ(h.gpu_instances[0].mig_uuids, std::vector<std::string>{"MIG-fake-nvml-0-1"});
  EXPECT_EQ(h.gpu_instances[1].id, 2u);
  EXPECT_EQ(h.gpu_instances[1].start, 4u);
  EXPECT_EQ(h.gpu_instances[1].mig_uuids, std::vector<std::string>{"MIG-fake-nvml-0-2"});
  // NVLink: link 0 to GPU 1 (bus id normalised from lower case), link 1 to a switch.
  ASSERT_EQ(h.nvlinks.size(), 2u);
  EXPECT_EQ(h.nvlinks[0].link, 0u);
  EXPECT_EQ(h.nvlinks[0].remote_bus_id, "00000000:2A:00.0");
  EXPECT_EQ(h.nvlinks[0].remote_uuid, "GPU-fake-nvml-1");
  EXPECT_EQ(h.nvlinks[0].remote_type, "gpu");
  EXPECT_EQ(h.nvlinks[1].remote_bus_id, "00000000:C0:00.0");
  EXPECT_EQ(h.nvlinks[1].remote_uuid, "");
  EXPECT_EQ(h.nvlinks[1].remote_type, "switch");
  EXPECT_TRUE(h.warnings.empty()) << h.warnings[0];

  const GpuInfo& a = gpus[1];
  EXPECT_EQ(a.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(a.model, "a100-80gb");
  EXPECT_EQ(a.mig_current, MigMode::kDisabled);
  EXPECT_TRUE(a.gpu_instances.empty());
  ASSERT_EQ(a.nvlinks.size(), 1u);
  EXPECT_EQ(a.nvlinks[0].remote_uuid, "GPU-fake-nvml-0");  // legacy 4-digit domain matched
  EXPECT_TRUE(p.notes().empty()) << p.notes()[0];

  // NVML is initialised once per probe; a second Discover reads again without re-init.
  auto init_count = Hook<int (*)()>("gpupoolFakeNvmlInitCount");
  const int inits = init_count();
  ASSERT_TRUE(p.Discover().ok());
  EXPECT_EQ(init_count(), inits);
}

TEST(NvmlProbe, PollHealthReportsXidsAndRisingLevels) {
  NvmlProbe p = Probe(kFake);
  auto first = p.PollHealth();  // opens the library itself
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::vector<HealthEvent> want = {
      // XIDs in arrival order (the P-state event in between is not an XID).
      {0, "GPU-fake-nvml-0", HealthEventKind::kXid, 31, 1},
      {1, "GPU-fake-nvml-1", HealthEventKind::kXid, 48, kUnknownU32},
      // GPU 0: no ECC errors; remapped rows NOT_SUPPORTED with MIG instances: nothing.
      {0, "GPU-fake-nvml-0", HealthEventKind::kTemperature, 45, kUnknownU32},
      {1, "GPU-fake-nvml-1", HealthEventKind::kEccUncorrectable, 2, kUnknownU32},
      {1, "GPU-fake-nvml-1", HealthEventKind::kRowRemapPending, 1, kUnknownU32},
      {1, "GPU-fake-nvml-1", HealthEventKind::kTemperature, 91, kUnknownU32},
  };
  EXPECT_EQ(*first, want);

  // Nothing new: only the readings.
  auto second = *p.PollHealth();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].kind, HealthEventKind::kTemperature);
  EXPECT_EQ(second[1].kind, HealthEventKind::kTemperature);

  // The ECC count rises, a new XID arrives, GPU 1 falls off the bus.
  Hook<void (*)(int, unsigned long long)>("gpupoolFakeNvmlSetEcc")(1, 5);
  Hook<void (*)(int, unsigned long long)>("gpupoolFakeNvmlPushXid")(0, 79);
  auto third = *p.PollHealth();
  const std::vector<HealthEvent> want3 = {
      {0, "GPU-fake-nvml-0", HealthEventKind::kXid, 79, kUnknownU32},
      {0, "GPU-fake-nvml-0", HealthEventKind::kTemperature, 45, kUnknownU32},
      {1, "GPU-fake-nvml-1", HealthEventKind::kEccUncorrectable, 5, kUnknownU32},
      {1, "GPU-fake-nvml-1", HealthEventKind::kTemperature, 91, kUnknownU32},
  };
  EXPECT_EQ(third, want3);

  Hook<void (*)(int)>("gpupoolFakeNvmlSetLost")(1);
  auto fourth = *p.PollHealth();
  ASSERT_EQ(fourth.size(), 2u);
  EXPECT_EQ(fourth[1].kind, HealthEventKind::kGpuLost);
  EXPECT_EQ(fourth[1].gpu, 1u);
  auto fifth = *p.PollHealth();  // reported once
  ASSERT_EQ(fifth.size(), 1u);
  EXPECT_EQ(fifth[0].gpu, 0u);
}

TEST(NvmlProbe, DeprecatedTemperatureFallsBackToTemperatureV) {
  NvmlProbe p = Probe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  Hook<void (*)()>("gpupoolFakeNvmlDeprecateTemperature")();
  std::vector<uint64_t> readings;
  auto events = p.PollHealth();
  ASSERT_TRUE(events.ok());
  for (const HealthEvent& e : *events) {
    if (e.kind == HealthEventKind::kTemperature) readings.push_back(e.value);
  }
  // The fake's nvmlDeviceGetTemperatureV answers 1 C warmer than its deprecated predecessor.
  EXPECT_EQ(readings, (std::vector<uint64_t>{46, 92}));
}

TEST(NvmlProbe, OptionalSymbolsMissingTurnFeaturesOff) {
  NvmlProbe p = Probe(kFakeMinimal);
  auto r = p.Discover();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  const GpuInfo& h = (*r)[0];
  EXPECT_EQ(h.model, "h100-80gb");
  EXPECT_EQ(h.mig_current, MigMode::kUnsupported);
  EXPECT_TRUE(h.gpu_instances.empty());
  EXPECT_TRUE(h.nvlinks.empty());
  EXPECT_TRUE(HasNote(p, "lacks optional nvmlDeviceGetMigMode; that feature is off"));
  EXPECT_TRUE(HasNote(p, "lacks optional nvmlEventSetWait_v2"));
  auto health = p.PollHealth();
  ASSERT_TRUE(health.ok());
  EXPECT_TRUE(health->empty());
  EXPECT_EQ(p.System(), SystemInfo()) << "no driver calls: nothing known";
}

TEST(NvmlProbe, SystemReadsTheDriverAndCudaVersions) {
  NvmlProbe p = Probe(kFake);
  EXPECT_EQ(p.System(), (SystemInfo{"550.54.15", "12.4"}));
}

TEST(NvmlLibrary, ResolvesReadCallsAndOnlySixMigWrites) {
  // The agent reads, except six calls that create and destroy MIG GPU and compute instances
  // (NvmlProbe::ApplyMigLayout): nothing sets MIG mode or resets.
  const std::vector<std::string> names = NvmlLibrary::SymbolNames();
  ASSERT_EQ(names.size(), 36u);
  const std::vector<std::string> writes = {
      "nvmlDeviceCreateGpuInstanceWithPlacement",     "nvmlGpuInstanceDestroy",
      "nvmlGpuInstanceGetComputeInstanceProfileInfo", "nvmlGpuInstanceCreateComputeInstance",
      "nvmlGpuInstanceGetComputeInstances",           "nvmlComputeInstanceDestroy"};
  int write_calls = 0;
  for (const std::string& n : names) {
    const bool write = std::find(writes.begin(), writes.end(), n) != writes.end();
    write_calls += write;
    const bool allowed = write || n.rfind("nvmlDeviceGet", 0) == 0 || n.rfind("nvmlSystemGet", 0) == 0 ||
                         n.rfind("nvmlGpuInstanceGet", 0) == 0 || n == "nvmlInit_v2" ||
                         n == "nvmlShutdown" || n == "nvmlErrorString" ||
                         n == "nvmlEventSetCreate" || n == "nvmlEventSetWait_v2" ||
                         n == "nvmlEventSetFree" || n == "nvmlDeviceRegisterEvents";
    EXPECT_TRUE(allowed) << n;
    EXPECT_EQ(n.find("Reset"), std::string::npos) << n;
    EXPECT_EQ(n.find("SetMigMode"), std::string::npos) << n;
  }
  EXPECT_EQ(write_calls, 6);
}

const GpuModel& H100() {
  static const Catalogue cat = Catalogue::BuiltIn();
  return cat.model(*cat.Find("h100-80gb"));
}

// "profile@start=uuid,..." of a GPU, in start order.
std::string Instances(const GpuInfo& g) {
  std::string out;
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    out += (out.empty() ? "" : ",") + gi.profile + "@" + std::to_string(gi.start) + "=" +
           (gi.mig_uuids.empty() ? "" : gi.mig_uuids[0]);
  }
  return out;
}

TEST(NvmlProbeMig, RefusedUnlessAllowed) {
  NvmlProbe p = Probe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  const Status s = p.ApplyMigLayout(0, H100(), *ParseLayout(H100(), "7g.80gb@0"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(Hook<int (*)()>("gpupoolFakeNvmlMigWrites")(), 0);
  EXPECT_EQ(Instances((*p.Discover())[0]),
            "3g.40gb@0=MIG-fake-nvml-0-1,3g.40gb@4=MIG-fake-nvml-0-2");
}

NvmlProbe AllowedProbe(const std::string& path) {
  NvmlProbeOptions o;
  o.library_path = path;
  o.allow_mig_changes = true;
  return NvmlProbe(std::move(o));
}

TEST(NvmlProbeMig, RepartitionsKeepingWhatStays) {
  NvmlProbe p = AllowedProbe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  // 3g@0 (GI 1) goes: its CI, then the GI. 3g@4 (GI 2) stays. 2g@2 is created before 1g@0
  // (largest first): GI 3, then GI 4, each with a CI spanning it (a new MIG device).
  const Status s =
      p.ApplyMigLayout(0, H100(), *ParseLayout(H100(), "1g.10gb@0,2g.20gb@2,3g.40gb@4"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(Hook<int (*)()>("gpupoolFakeNvmlMigWrites")(), 6);
  auto gpus = p.Discover();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(Instances((*gpus)[0]),
            "1g.10gb@0=MIG-fake-nvml-0-4,2g.20gb@2=MIG-fake-nvml-0-3,3g.40gb@4=MIG-fake-nvml-0-2");
  EXPECT_TRUE((*gpus)[0].warnings.empty()) << (*gpus)[0].warnings[0];
  // The same layout again: nothing to do.
  ASSERT_TRUE(
      p.ApplyMigLayout(0, H100(), *ParseLayout(H100(), "2g.20gb@2,1g.10gb@0,3g.40gb@4")).ok());
  EXPECT_EQ(Hook<int (*)()>("gpupoolFakeNvmlMigWrites")(), 6);
  // Everything goes: one 7g.
  ASSERT_TRUE(p.ApplyMigLayout(0, H100(), *ParseLayout(H100(), "7g.80gb@0")).ok());
  EXPECT_EQ(Instances((*p.Discover())[0]), "7g.80gb@0=MIG-fake-nvml-0-5");
}

TEST(NvmlProbeMig, ErrorsAreClearAndPartialStateShows) {
  NvmlProbe p = AllowedProbe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  const MigLayout seven = *ParseLayout(H100(), "7g.80gb@0");
  EXPECT_EQ(p.ApplyMigLayout(1, H100(), seven).error().code, ErrorCode::kFailedPrecondition)
      << "GPU 1 is not in MIG mode";
  EXPECT_EQ(p.ApplyMigLayout(2, H100(), seven).error().code, ErrorCode::kInvalidArgument);
  MigLayout bad = seven;
  bad.Add(seven.at(0));  // two 7g: invalid
  EXPECT_EQ(p.ApplyMigLayout(0, H100(), bad).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Hook<int (*)()>("gpupoolFakeNvmlMigWrites")(), 0);
  // The driver refuses the create: NVML's words, and the GPU as it was left (both 3g gone).
  Hook<void (*)(int)>("gpupoolFakeNvmlFailNextCreate")(23);
  const Status s = p.ApplyMigLayout(0, H100(), seven);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(s.error().message.find("nvmlDeviceCreateGpuInstanceWithPlacement"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("(23) (7g.80gb at slice 0)"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(Instances((*p.Discover())[0]), "");
  ASSERT_TRUE(p.ApplyMigLayout(0, H100(), seven).ok()) << "a retry completes it";
  EXPECT_EQ(Instances((*p.Discover())[0]), "7g.80gb@0=MIG-fake-nvml-0-3");
}

TEST(NvmlProbeMig, AFailedComputeInstanceTakesItsGpuInstanceBack) {
  NvmlProbe p = AllowedProbe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  const MigLayout seven = *ParseLayout(H100(), "7g.80gb@0");
  auto writes = Hook<int (*)()>("gpupoolFakeNvmlMigWrites");
  auto fail_ci = Hook<void (*)(int)>("gpupoolFakeNvmlFailNextCiCreate");
  // Both 3g go (2 CI and 2 GI destroys), GI 3 (7g@0) is made, its CI is refused, and GI 3 is
  // destroyed again: 6 writes, and no instance is left.
  fail_ci(23);
  Status s = p.ApplyMigLayout(0, H100(), seven);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(s.error().message.rfind("nvmlGpuInstanceCreateComputeInstance: ", 0), 0u)
      << s.error().message;
  EXPECT_NE(s.error().message.find(
                "(23) (CI profile 4); rolled back: its GPU instance (7g.80gb at slice 0) was "
                "destroyed"),
            std::string::npos)
      << s.error().message;
  EXPECT_EQ(writes(), 6);
  EXPECT_EQ(Instances((*p.Discover())[0]), "");
  // Again, and the destroy is refused too (IN_USE, 19): the error says so, and GI 4 stays
  // without a CI (no MIG device) until the next attempt gives it one.
  fail_ci(23);
  Hook<void (*)(int)>("gpupoolFakeNvmlFailNextGiDestroy")(19);
  s = p.ApplyMigLayout(0, H100(), seven);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(CI profile 4); not rolled back: nvmlGpuInstanceDestroy: "),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find(
                "(19), so its GPU instance (7g.80gb at slice 0) is left without a compute "
                "instance"),
            std::string::npos)
      << s.error().message;
  EXPECT_EQ(Instances((*p.Discover())[0]), "7g.80gb@0=");
  ASSERT_TRUE(p.ApplyMigLayout(0, H100(), seven).ok()) << "a retry completes it";
  EXPECT_EQ(Instances((*p.Discover())[0]), "7g.80gb@0=MIG-fake-nvml-0-4");
}

// The catalogue's start slices against the fake's own copy of the board's placement table
// (fake_nvml.cc, kGiProfiles): every start the catalogue allows an H100-80GB profile must be
// created, every other start that fits must be refused, so a mistake in either table fails here.
TEST(NvmlProbeMig, TheCataloguesStartsAreTheBoardsPlacements) {
  NvmlProbe p = AllowedProbe(kFake);
  ASSERT_TRUE(p.Discover().ok());
  // The catalogue's model with every start that fits allowed, so that the probe's own layout
  // check lets the forbidden ones through to the fake.
  GpuModel any_start = H100();
  for (MigProfile& prof : any_start.profiles) {
    prof.start_mask = static_cast<uint8_t>((1u << (9 - prof.memory_slices)) - 1);
  }
  int created = 0, refused = 0;
  for (size_t i = 0; i < H100().profiles.size(); ++i) {
    const MigProfile& prof = H100().profiles[i];
    for (int start = 0; start + prof.memory_slices <= 8; ++start) {
      MigLayout one;
      one.Add({static_cast<uint8_t>(i), static_cast<uint8_t>(start)});
      const std::string at = prof.name + "@" + std::to_string(start);
      const Status s = p.ApplyMigLayout(0, any_start, one);
      if (prof.ValidStart(start)) {
        ++created;
        EXPECT_TRUE(s.ok()) << at << ": the catalogue allows it, the board does not: "
                            << s.error().message;
        EXPECT_EQ(Instances((*p.Discover())[0]).rfind(at + "=MIG-fake-nvml-0-", 0), 0u) << at;
      } else {
        ++refused;
        EXPECT_FALSE(s.ok()) << at << ": the board allows it, the catalogue does not";
        if (s.ok()) continue;
        EXPECT_NE(s.error().message.find("Invalid Argument (2) (" + prof.name + " at slice " +
                                         std::to_string(start) + ")"),
                  std::string::npos)
            << s.error().message;
        EXPECT_EQ(Instances((*p.Discover())[0]), "") << at;
      }
    }
  }
  // Starts on the board: 1g and 1g+me 7 each, 1g.20gb 4, 2g 3, 3g 2, 4g and 7g 1 each: 25. The
  // other 16 that fit: 1g and 1g+me @7, 1g.20gb and 2g at odd starts (and 2g@6), 3g @1..3, 4g
  // @1..4.
  EXPECT_EQ(created, 25);
  EXPECT_EQ(refused, 16);
}

TEST(NvmlProbeMig, ALibraryWithoutTheMigCallsCannotChangeMig) {
  NvmlProbe p = AllowedProbe(kFakeMinimal);
  const Status s = p.ApplyMigLayout(0, H100(), *ParseLayout(H100(), "7g.80gb@0"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("lacks nvmlDeviceGetMigMode: cannot change MIG"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace gpupool
