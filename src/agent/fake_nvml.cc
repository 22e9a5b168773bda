// A fake libnvidia-ml for nvml_probe_test: a shared module exporting the NVML symbols the agent
// uses (nvml_types.h), with canned answers, so the dlopen/dlsym path and the probe's reading
// logic run without a GPU. Built twice: in full, and with FAKE_NVML_MINIMAL (only the required
// symbols, like a very old driver).
//
// The node it pretends to be (nvmlInit_v2 resets it):
//   GPU 0  "NVIDIA H100 80GB HBM3", 0x233010DE, bus 00000000:18:00.0, MIG on, GIs 3g@0 (id 1)
//          and 3g@4 (id 2); MIG device indexes 0 -> GI 2, 1 absent, 2 -> GI 1; remapped rows
//          NOT_SUPPORTED (MIG with instances); 45 C; NVLink 0 -> GPU 1 (bus id in lower case),
//          NVLink 1 -> an NVSwitch; one pending XID 31 attributed to GI 1, one P-state event.
//   GPU 1  "NVIDIA A100-SXM4-80GB", 0x20B210DE, bus 00000000:2A:00.0, MIG off; 2 volatile
//          uncorrectable ECC errors; a row remap pending; 91 C; NVLink 0 -> GPU 0; one XID 48.
// $GPUPOOL_FAKE_NVML_SCENARIO=init-fails makes nvmlInit_v2 return DRIVER_NOT_LOADED.
// MIG writes on GPU 0 (GPU 1 answers NOT_SUPPORTED): GIs are created with a placement (profile,
// size and start checked against the H100's own placement table, kGiProfiles below, else
// INVALID_ARGUMENT, nvml.h's code for bad arguments; no overlap, else INSUFFICIENT_RESOURCES),
// get new ids (3, 4, ...; never reused) and no CI; one CI per GI, of a CI profile no larger than
// the GI, which makes a MIG device "MIG-fake-nvml-0-<GI id>" at the lowest free MIG device index;
// a GI with a CI cannot be destroyed (IN_USE).
// Test hooks (extern "C", found with dlsym): gpupoolFakeNvmlPushXid, gpupoolFakeNvmlSetEcc,
// gpupoolFakeNvmlSetLost, gpupoolFakeNvmlDeprecateTemperature (nvmlDeviceGetTemperature then
// answers DEPRECATED, as NVML 13 may), gpupoolFakeNvmlInitCount, gpupoolFakeNvmlMigWrites (how
// many create/destroy calls succeeded), gpupoolFakeNvmlFailNextCreate (the next GI create
// answers the given error), gpupoolFakeNvmlFailNextCiCreate (the next CI create does),
// gpupoolFakeNvmlFailNextGiDestroy (the next GI destroy does).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "agent/nvml_types.h"

using namespace gpupool::nvml;  // NOLINT

namespace {

struct FakeDev {
  // Physical GPU fields.
  const char* name = "";
  std::string uuid;
  unsigned long long memory_mib = 0;
  const char* bus_id = "";
  unsigned int pci_device_id = 0;
  unsigned int mig_mode = 0;
  unsigned long long ecc = 0;
  unsigned int remap_pending = 0;
  unsigned int temperature = 0;
  bool lost = false;
  bool registered = false;
  // MIG device fields (is_mig: this is a MIG device handle of GPU 0, of the GI in slot gi_slot).
  bool is_mig = false;
  unsigned int gi_id = 0;
};

constexpr int kSlots = 7;  // GI slots of GPU 0; MIG device of slot k: g_dev[2 + k]

struct FakeGi {
  unsigned int id = 0, profile_id = 0, start = 0, size = 0;
  bool alive = false;
  int ci_profile = -1;  // the CI's profile; -1: no CI
};
struct FakeCi {
  int slot;
};

struct FakeEvent {
  int gpu;
  unsigned long long type, data;
  unsigned int gi;
};

FakeDev g_dev[2 + kSlots];  // 0, 1: GPUs; 2..: MIG devices of GPU 0, one per GI slot
FakeGi g_gi[kSlots];
[[maybe_unused]] FakeCi g_ci[kSlots] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}};
int g_mig_index[kSlots];  // MIG device index -> GI slot, -1: no device there
unsigned int g_next_gi_id = 3;
int g_mig_writes = 0;
[[maybe_unused]] nvmlReturn_t g_fail_next_create = NVML_SUCCESS;
[[maybe_unused]] nvmlReturn_t g_fail_next_ci_create = NVML_SUCCESS;
[[maybe_unused]] nvmlReturn_t g_fail_next_gi_destroy = NVML_SUCCESS;
std::deque<FakeEvent> g_events;
bool g_init = false;
int g_init_count = 0;
[[maybe_unused]] int g_event_set_token = 0;
[[maybe_unused]] bool g_temperature_deprecated = false;

nvmlDevice_t Handle(int i) { return reinterpret_cast<nvmlDevice_t>(&g_dev[i]); }
FakeDev* Dev(nvmlDevice_t h) {
  for (FakeDev& d : g_dev) {
    if (reinterpret_cast<nvmlDevice_t>(&d) == h) return &d;
  }
  return nullptr;
}
[[maybe_unused]] int IndexOf(nvmlDevice_t h) {
  for (int i = 0; i < 2; ++i) {
    if (Handle(i) == h) return i;
  }
  return -1;
}

bool g_one_gpu = false;

void Reset() {
  g_dev[0] = {.name = "NVIDIA H100 80GB HBM3",
              .uuid = "GPU-fake-nvml-0",
              .memory_mib = 81559,
              .bus_id = "00000000:18:00.0",
              .pci_device_id = 0x233010DE,
              .mig_mode = 1,
              .temperature = 45};
  g_dev[1] = {.name = "NVIDIA A100-SXM4-80GB",
              .uuid = "GPU-fake-nvml-1",
              .memory_mib = 81920,
              .bus_id = "00000000:2A:00.0",
              .pci_device_id = 0x20B210DE,
              .ecc = 2,
              .remap_pending = 1,
              .temperature = 91};
  for (int k = 0; k < kSlots; ++k) {
    g_dev[2 + k] = {.name = "", .uuid = "", .bus_id = "", .is_mig = true};
    g_gi[k] = FakeGi{};
    g_mig_index[k] = -1;
  }
  // GI 1 (3g@0) in slot 0, GI 2 (3g@4) in slot 1, each with its 3-slice CI (profile 2); MIG
  // device indexes 0 -> GI 2, 1 absent, 2 -> GI 1.
  g_gi[0] = {.id = 1, .profile_id = 9, .start = 0, .size = 4, .alive = true, .ci_profile = 2};
  g_gi[1] = {.id = 2, .profile_id = 9, .start = 4, .size = 4, .alive = true, .ci_profile = 2};
  g_dev[2].uuid = "MIG-fake-nvml-0-1";
  g_dev[2].gi_id = 1;
  g_dev[3].uuid = "MIG-fake-nvml-0-2";
  g_dev[3].gi_id = 2;
  g_mig_index[0] = 1;
  g_mig_index[2] = 0;
  g_next_gi_id = 3;
  g_mig_writes = 0;
  g_fail_next_create = NVML_SUCCESS;
  g_fail_next_ci_create = NVML_SUCCESS;
  g_fail_next_gi_destroy = NVML_SUCCESS;
  g_temperature_deprecated = false;
  g_events = {{0, 0x4, 0, 0xFFFFFFFFu},
              {0, nvmlEventTypeXidCriticalError, 31, 1},
              {1, nvmlEventTypeXidCriticalError, 48, 0xFFFFFFFFu}};
  // GPUPOOL_FAKE_NVML_SCENARIO=one-h200: a single healthy H200 without MIG, no events (what
  // tests/gpu/real_gpu_check.sh expects of the device machine, rehearsed here).
  const char* scenario = std::getenv("GPUPOOL_FAKE_NVML_SCENARIO");
  g_one_gpu = scenario != nullptr && std::string(scenario) == "one-h200";
  if (g_one_gpu) {
    g_dev[0] = {.name = "NVIDIA H200",
                .uuid = "GPU-fake-nvml-h200-0",
                .memory_mib = 143771,
                .bus_id = "00000000:19:00.0",
                .pci_device_id = 0x233510DE,
                .mig_mode = 0,
                .temperature = 33};
    for (int k = 0; k < kSlots; ++k) {
      g_gi[k] = FakeGi{};
      g_mig_index[k] = -1;
    }
    g_events.clear();
  }
}

void CopyString(const char* s, char* out, unsigned int len) {
  const size_t n = std::min<size_t>(std::strlen(s), len - 1);
  std::memcpy(out, s, n);
  out[n] = '\0';
}

// A GPU handle that answers, or the error to return.
nvmlReturn_t Gpu(nvmlDevice_t h, FakeDev** out) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  FakeDev* d = Dev(h);
  if (d == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (d->lost) return NVML_ERROR_GPU_IS_LOST;
  *out = d;
  return NVML_SUCCESS;
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT nvmlReturn_t nvmlInit_v2() {
  const char* scenario = std::getenv("GPUPOOL_FAKE_NVML_SCENARIO");
  if (scenario != nullptr && std::string(scenario) == "init-fails") {
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  Reset();
  g_init = true;
  ++g_init_count;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown() {
  g_init = false;
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

#ifndef FAKE_NVML_MINIMAL  // optional: the driver's versions
FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int len) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  CopyString("550.54.15", version, len);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  *version = 12040;
  return NVML_SUCCESS;
}
#endif

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  *count = g_one_gpu ? 1 : 2;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  if (index >= (g_one_gpu ? 1u : 2u)) return NVML_ERROR_INVALID_ARGUMENT;
  *device = Handle(static_cast<int>(index));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* name, unsigned int len) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  CopyString(d->name, name, len);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* uuid, unsigned int len) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  CopyString(d->uuid.c_str(), uuid, len);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* mem) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  mem->total = d->memory_mib << 20;
  mem->used = 1ULL << 20;
  mem->free = mem->total - mem->used;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* pci) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  std::memset(pci, 0, sizeof *pci);
  CopyString(d->bus_id + 4, pci->busIdLegacy, sizeof pci->busIdLegacy);
  CopyString(d->bus_id, pci->busId, sizeof pci->busId);
  pci->pciDeviceId = d->pci_device_id;
  pci->pciSubSystemId = 0x16C110DE;
  return NVML_SUCCESS;
}

#ifndef FAKE_NVML_MINIMAL

// MIG.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int* current,
                                              unsigned int* pending) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (d->is_mig) return NVML_ERROR_NOT_SUPPORTED;
  *current = *pending = d->mig_mode;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t h, unsigned int* count) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  *count = d->mig_mode ? 7 : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t h, unsigned int index,
                                                             nvmlDevice_t* mig) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (IndexOf(h) != 0 || index >= static_cast<unsigned int>(kSlots)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (g_mig_index[index] < 0) return NVML_ERROR_NOT_FOUND;
  *mig = Handle(2 + g_mig_index[index]);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned int* id) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (!d->is_mig) return NVML_ERROR_INVALID_ARGUMENT;
  *id = d->gi_id;
  return NVML_SUCCESS;
}

// Enum -> GI profile ID on 7-slice boards (reference §1.1); other enums are not supported.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t h, unsigned int profile,
                                                             nvmlGpuInstanceProfileInfo_t* info) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
  static constexpr unsigned int kIds[NVML_GPU_INSTANCE_PROFILE_COUNT] = {
      19, 14, 9, 5, 0, 99, 99, 20, 99, 15, 99, 99, 99, 99, 99, 99, 99, 99};
  if (kIds[profile] == 99) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(info, 0, sizeof *info);
  info->id = kIds[profile];
  info->instanceCount = 7;
  info->memorySizeMB = 9856;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t h, unsigned int profile_id,
                                                   nvmlGpuInstance_t* gis, unsigned int* count) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  unsigned int n = 0;
  for (FakeGi& gi : g_gi) {
    if (IndexOf(h) == 0 && gi.alive && gi.profile_id == profile_id) {
      if (n == *count) return NVML_ERROR_INSUFFICIENT_SIZE;
      gis[n++] = reinterpret_cast<nvmlGpuInstance_t>(&gi);
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

namespace {

// The live GI behind a handle, or null.
FakeGi* Gi(nvmlGpuInstance_t h) {
  for (FakeGi& gi : g_gi) {
    if (reinterpret_cast<nvmlGpuInstance_t>(&gi) == h) return gi.alive ? &gi : nullptr;
  }
  return nullptr;
}

// The GI profiles of GPU 0, an H100 80GB HBM3, with the placements the board itself lists
// (reference §1.2.4 and the `nvidia-smi mig -lgipp` output of §1.2.1; start and size in memory
// slices). Written out here, not taken from the catalogue: nvml_probe_test applies every start
// the catalogue allows, and tries every one it forbids, against this table.
struct FakeGiProfile {
  unsigned int id, memory, compute;
  unsigned int start_count, starts[7];
};
constexpr FakeGiProfile kGiProfiles[] = {
    {19, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}},  // 1g.10gb
    {20, 1, 1, 7, {0, 1, 2, 3, 4, 5, 6}},  // 1g.10gb+me
    {15, 2, 1, 4, {0, 2, 4, 6}},           // 1g.20gb
    {14, 2, 2, 3, {0, 2, 4}},              // 2g.20gb
    {9, 4, 3, 2, {0, 4}},                  // 3g.40gb
    {5, 4, 4, 1, {0}},                     // 4g.40gb
    {0, 8, 7, 1, {0}},                     // 7g.80gb
};

const FakeGiProfile* GiProfile(unsigned int profile_id) {
  for (const FakeGiProfile& p : kGiProfiles) {
    if (p.id == profile_id) return &p;
  }
  return nullptr;
}

// Whether the board can place a GI of this profile there.
bool ValidPlacement(unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement) {
  const FakeGiProfile* p = GiProfile(profile_id);
  if (p == nullptr || placement == nullptr || placement->size != p->memory) return false;
  const unsigned int* end = p->starts + p->start_count;
  return std::find(p->starts, end, placement->start) != end;
}

// GI profile ID -> memory slices and compute slices; false for an unknown ID.
bool GiShape(unsigned int profile_id, unsigned int* memory, unsigned int* compute) {
  const FakeGiProfile* p = GiProfile(profile_id);
  if (p == nullptr) return false;
  *memory = p->memory;
  *compute = p->compute;
  return true;
}

// CI profile enum (= CI profile ID) -> compute slices; 0 for those this board lacks.
unsigned int CiSlices(unsigned int profile) {
  static constexpr unsigned int kSlices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7,
                                                                                0, 0, 0, 0};
  return profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? kSlices[profile] : 0;
}

}  // namespace

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t* info) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  const FakeGi* g = Gi(gi);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  info->device = Handle(0);
  info->id = g->id;
  info->profileId = g->profile_id;
  info->placement = {g->start, g->size};
  return NVML_SUCCESS;
}

// MIG writes.
FAKE_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t h, unsigned int profile_id, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* out) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (IndexOf(h) != 0) return NVML_ERROR_NOT_SUPPORTED;  // GPU 1: MIG off
  if (g_fail_next_create != NVML_SUCCESS) {
    const nvmlReturn_t rc = g_fail_next_create;
    g_fail_next_create = NVML_SUCCESS;
    return rc;
  }
  if (!ValidPlacement(profile_id, placement)) return NVML_ERROR_INVALID_ARGUMENT;
  const unsigned int memory = placement->size;
  int free_slot = -1;
  for (int k = 0; k < kSlots; ++k) {
    const FakeGi& gi = g_gi[k];
    if (!gi.alive) {
      if (free_slot < 0) free_slot = k;
      continue;
    }
    if (placement->start < gi.start + gi.size && gi.start < placement->start + memory) {
      return NVML_ERROR_INSUFFICIENT_RESOURCES;  // overlaps an existing GI
    }
  }
  if (free_slot < 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  g_gi[free_slot] = {.id = g_next_gi_id++, .profile_id = profile_id, .start = placement->start,
                     .size = memory, .alive = true, .ci_profile = -1};
  *out = reinterpret_cast<nvmlGpuInstance_t>(&g_gi[free_slot]);
  ++g_mig_writes;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t h) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  FakeGi* gi = Gi(h);
  if (gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_fail_next_gi_destroy != NVML_SUCCESS) {
    const nvmlReturn_t rc = g_fail_next_gi_destroy;
    g_fail_next_gi_destroy = NVML_SUCCESS;
    return rc;
  }
  if (gi->ci_profile >= 0) return NVML_ERROR_IN_USE;
  gi->alive = false;
  ++g_mig_writes;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t h, unsigned int profile, unsigned int eng_profile,
    nvmlComputeInstanceProfileInfo_t* info) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  const FakeGi* gi = Gi(h);
  if (gi == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
      eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned int memory = 0, compute = 0;
  GiShape(gi->profile_id, &memory, &compute);
  const unsigned int slices = CiSlices(profile);
  if (slices == 0 || slices > compute) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(info, 0, sizeof *info);
  info->id = profile;
  info->sliceCount = slices;
  info->instanceCount = compute / slices;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t h,
                                                              unsigned int profile,
                                                              nvmlComputeInstance_t* out) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  FakeGi* gi = Gi(h);
  if (gi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g_fail_next_ci_create != NVML_SUCCESS) {
    const nvmlReturn_t rc = g_fail_next_ci_create;
    g_fail_next_ci_create = NVML_SUCCESS;
    return rc;
  }
  unsigned int memory = 0, compute = 0;
  GiShape(gi->profile_id, &memory, &compute);
  const unsigned int slices = CiSlices(profile);
  if (slices == 0 || slices > compute) return NVML_ERROR_NOT_SUPPORTED;
  if (gi->ci_profile >= 0) return NVML_ERROR_INSUFFICIENT_RESOURCES;  // one CI per GI here
  int index = 0;
  while (index < kSlots && g_mig_index[index] >= 0) ++index;
  if (index == kSlots) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  const int slot = static_cast<int>(gi - g_gi);
  gi->ci_profile = static_cast<int>(profile);
  g_mig_index[index] = slot;
  g_dev[2 + slot] = {.name = "", .uuid = "MIG-fake-nvml-0-" + std::to_string(gi->id),
                     .bus_id = "", .is_mig = true, .gi_id = gi->id};
  *out = reinterpret_cast<nvmlComputeInstance_t>(&g_ci[slot]);
  ++g_mig_writes;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t h,
                                                            unsigned int profile,
                                                            nvmlComputeInstance_t* cis,
                                                            unsigned int* count) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  const FakeGi* gi = Gi(h);
  if (gi == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned int n = 0;
  if (gi->ci_profile == static_cast<int>(profile)) {
    if (*count < 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    cis[n++] = reinterpret_cast<nvmlComputeInstance_t>(&g_ci[gi - g_gi]);
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t h) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  for (FakeCi& ci : g_ci) {
    if (reinterpret_cast<nvmlComputeInstance_t>(&ci) != h) continue;
    FakeGi& gi = g_gi[ci.slot];
    if (!gi.alive || gi.ci_profile < 0) return NVML_ERROR_INVALID_ARGUMENT;
    gi.ci_profile = -1;
    for (int& slot : g_mig_index) {
      if (slot == ci.slot) slot = -1;
    }
    g_dev[2 + ci.slot].uuid = "";
    ++g_mig_writes;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

// NVLink: 18 links per GPU; GPU 0 links 0 (GPU 1) and 1 (switch) active, GPU 1 link 0 active.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned int link, int* active) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (link >= 18) return NVML_ERROR_INVALID_ARGUMENT;
  const int gpu = IndexOf(h);
  *active = (link == 0 || (gpu == 0 && link == 1)) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned int link,
                                                             nvmlPciInfo_t* pci) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  std::memset(pci, 0, sizeof *pci);
  const int gpu = IndexOf(h);
  const char* remote = gpu == 0 ? (link == 0 ? "00000000:2a:00.0" : "00000000:c0:00.0")
                                : "0000:18:00.0";  // legacy 4-digit domain
  CopyString(remote, pci->busId, sizeof pci->busId);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t h, unsigned int link,
                                                             int* type) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  *type =
      (IndexOf(h) == 0 && link == 1) ? NVML_NVLINK_DEVICE_TYPE_SWITCH : NVML_NVLINK_DEVICE_TYPE_GPU;
  return NVML_SUCCESS;
}

// Health.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int* t) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (g_temperature_deprecated) return NVML_ERROR_DEPRECATED;
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *t = d->temperature;
  return NVML_SUCCESS;
}

// The NVML 13 successor; answers 1 C warmer so a test can tell which call answered.
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t h, nvmlTemperature_v1_t* t) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (t->version != StructVersion<nvmlTemperature_v1_t>(1) ||
      t->sensorType != NVML_TEMPERATURE_GPU) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  t->temperature = static_cast<int>(d->temperature) + 1;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter,
                                                     unsigned long long* count) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) return NVML_ERROR_INVALID_ARGUMENT;
  *count = counter == NVML_VOLATILE_ECC ? d->ecc : d->ecc + 5;  // aggregate includes history
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t h, unsigned int* corr,
                                                   unsigned int* unc, unsigned int* pending,
                                                   unsigned int* failure) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (d->mig_mode) return NVML_ERROR_NOT_SUPPORTED;  // MIG with active instances
  *corr = 3;
  *unc = 1;
  *pending = d->remap_pending;
  *failure = 0;
  return NVML_SUCCESS;
}

// Events: one set; a device delivers its queued events once registered.
FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  *set = reinterpret_cast<nvmlEventSet_t>(&g_event_set_token);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t h,
                                                          unsigned long long* types) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  *types = IndexOf(h) == 0 ? 0x8 | 0x4 | 0x2 | 0x1 : 0x8;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t h, unsigned long long types,
                                                  nvmlEventSet_t set) {
  FakeDev* d;
  if (nvmlReturn_t rc = Gpu(h, &d); rc != NVML_SUCCESS) return rc;
  if (set != reinterpret_cast<nvmlEventSet_t>(&g_event_set_token)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  d->registered = (types & nvmlEventTypeXidCriticalError) != 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                             unsigned int timeout_ms) {
  (void)timeout_ms;  // never waits: the queue is all there is
  if (!g_init) return NVML_ERROR_UNINITIALIZED;
  if (set != reinterpret_cast<nvmlEventSet_t>(&g_event_set_token)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  while (!g_events.empty()) {
    const FakeEvent e = g_events.front();
    g_events.pop_front();
    if (!g_dev[e.gpu].registered) continue;
    data->device = Handle(e.gpu);
    data->eventType = e.type;
    data->eventData = e.data;
    data->gpuInstanceId = e.gi;
    data->computeInstanceId = e.gi == 0xFFFFFFFFu ? 0xFFFFFFFFu : 0;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_TIMEOUT;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return set == reinterpret_cast<nvmlEventSet_t>(&g_event_set_token) ? NVML_SUCCESS
                                                                     : NVML_ERROR_INVALID_ARGUMENT;
}

// Test hooks.
FAKE_EXPORT void gpupoolFakeNvmlPushXid(int gpu, unsigned long long xid) {
  g_events.push_back({gpu, nvmlEventTypeXidCriticalError, xid, 0xFFFFFFFFu});
}
FAKE_EXPORT void gpupoolFakeNvmlSetEcc(int gpu, unsigned long long count) {
  g_dev[gpu].ecc = count;
}
FAKE_EXPORT void gpupoolFakeNvmlSetLost(int gpu) { g_dev[gpu].lost = true; }
FAKE_EXPORT void gpupoolFakeNvmlDeprecateTemperature() { g_temperature_deprecated = true; }
FAKE_EXPORT int gpupoolFakeNvmlMigWrites() { return g_mig_writes; }
FAKE_EXPORT void gpupoolFakeNvmlFailNextCreate(int rc) { g_fail_next_create = rc; }
FAKE_EXPORT void gpupoolFakeNvmlFailNextCiCreate(int rc) { g_fail_next_ci_create = rc; }
FAKE_EXPORT void gpupoolFakeNvmlFailNextGiDestroy(int rc) { g_fail_next_gi_destroy = rc; }

#endif  // FAKE_NVML_MINIMAL

FAKE_EXPORT int gpupoolFakeNvmlInitCount() { return g_init_count; }
