// NvmlProbe::ApplyMigLayout: the one NVML path that changes a GPU (reference §3.7, step 3).
#include <algorithm>

#include "agent/nvml_probe.h"

namespace gpupool {

using namespace nvml;  // NOLINT: the NVML names read best unqualified in this file

namespace {

constexpr unsigned int kMaxInstances = 64;

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

// The first missing MIG call the write path needs, or "".
std::string MissingMigCall(const NvmlApi& a) {
  const std::pair<const void*, const char*> calls[] = {
      {reinterpret_cast<const void*>(a.device_get_mig_mode), "nvmlDeviceGetMigMode"},
      {reinterpret_cast<const void*>(a.device_get_gpu_instance_profile_info),
       "nvmlDeviceGetGpuInstanceProfileInfo"},
      {reinterpret_cast<const void*>(a.device_get_gpu_instances), "nvmlDeviceGetGpuInstances"},
      {reinterpret_cast<const void*>(a.gpu_instance_get_info), "nvmlGpuInstanceGetInfo"},
      {reinterpret_cast<const void*>(a.device_create_gpu_instance_with_placement),
       "nvmlDeviceCreateGpuInstanceWithPlacement"},
      {reinterpret_cast<const void*>(a.gpu_instance_destroy), "nvmlGpuInstanceDestroy"},
      {reinterpret_cast<const void*>(a.gpu_instance_get_compute_instance_profile_info),
       "nvmlGpuInstanceGetComputeInstanceProfileInfo"},
      {reinterpret_cast<const void*>(a.gpu_instance_create_compute_instance),
       "nvmlGpuInstanceCreateComputeInstance"},
      {reinterpret_cast<const void*>(a.gpu_instance_get_compute_instances),
       "nvmlGpuInstanceGetComputeInstances"},
      {reinterpret_cast<const void*>(a.compute_instance_destroy), "nvmlComputeInstanceDestroy"},
  };
  for (const auto& [fn, name] : calls) {
    if (fn == nullptr) return name;
  }
  return "";
}

}  // namespace

Result<std::vector<NvmlProbe::LiveGi>> NvmlProbe::ListGpuInstances(Device& d) {
  const NvmlApi& api = lib_->api();
  std::vector<LiveGi> out;
  std::vector<unsigned int> seen;
  for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlGpuInstanceProfileInfo_t info{};
    nvmlReturn_t rc = api.device_get_gpu_instance_profile_info(d.handle, p, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;  // past the last profile
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;  // profile absent on this GPU
    if (!Check(d, rc))
      return Unavailable(lib_->Describe("nvmlDeviceGetGpuInstanceProfileInfo", rc));
    if (std::find(seen.begin(), seen.end(), info.id) != seen.end()) continue;
    seen.push_back(info.id);
    nvmlGpuInstance_t handles[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    rc = api.device_get_gpu_instances(d.handle, info.id, handles, &count);
    if (!Check(d, rc)) return Unavailable(lib_->Describe("nvmlDeviceGetGpuInstances", rc));
    for (unsigned int k = 0; k < count && k < kMaxInstances; ++k) {
      nvmlGpuInstanceInfo_t gi{};
      rc = api.gpu_instance_get_info(handles[k], &gi);
      if (!Check(d, rc)) return Unavailable(lib_->Describe("nvmlGpuInstanceGetInfo", rc));
      out.push_back({handles[k], gi.profileId, gi.placement.start, gi.placement.size});
    }
  }
  return out;
}

Result<std::vector<nvmlComputeInstance_t>> NvmlProbe::ListComputeInstances(Device& d,
                                                                           nvmlGpuInstance_t gi) {
  const NvmlApi& api = lib_->api();
  std::vector<nvmlComputeInstance_t> out;
  for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstance_t cis[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    const nvmlReturn_t rc = api.gpu_instance_get_compute_instances(gi, p, cis, &count);
    // A CI profile this GI cannot hold.
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
    if (!Check(d, rc)) return Unavailable(lib_->Describe("nvmlGpuInstanceGetComputeInstances", rc));
    out.insert(out.end(), cis, cis + std::min(count, kMaxInstances));
  }
  return out;
}

Status NvmlProbe::CreateFullComputeInstance(Device& d, nvmlGpuInstance_t gi, unsigned int slices) {
  const NvmlApi& api = lib_->api();
  for (unsigned int p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t rc = api.gpu_instance_get_compute_instance_profile_info(
        gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc != NVML_SUCCESS) {
      Check(d, rc);
      continue;  // NOT_SUPPORTED: a CI profile this GI cannot hold
    }
    if (info.sliceCount != slices) continue;
    nvmlComputeInstance_t ci = nullptr;
    rc = api.gpu_instance_create_compute_instance(gi, info.id, &ci);
    if (!Check(d, rc)) {
      return Unavailable(lib_->Describe("nvmlGpuInstanceCreateComputeInstance", rc) +
                         " (CI profile " + std::to_string(info.id) + ")");
    }
    return Ok();
  }
  return FailedPrecondition("no compute instance profile of " + std::to_string(slices) +
                            " slices for this GPU instance");
}

Status NvmlProbe::CreateInstance(Device& d, const MigProfile& p, unsigned int start) {
  const NvmlApi& api = lib_->api();
  const std::string where = " (" + p.name + " at slice " + std::to_string(start) + ")";
  const nvmlGpuInstancePlacement_t placement{start, p.memory_slices};
  nvmlGpuInstance_t gi = nullptr;
  nvmlReturn_t rc = api.device_create_gpu_instance_with_placement(d.handle, p.id, &placement, &gi);
  if (!Check(d, rc)) {
    return Unavailable(lib_->Describe("nvmlDeviceCreateGpuInstanceWithPlacement", rc) + where);
  }
  const Status ci = CreateFullComputeInstance(d, gi, p.compute_slices);
  if (ci.ok()) return ci;
  // A GI without a CI runs nothing: take back the GI this call made.
  rc = api.gpu_instance_destroy(gi);
  const std::string undo =
      Check(d, rc) ? "; rolled back: its GPU instance" + where + " was destroyed"
                   : "; not rolled back: " + lib_->Describe("nvmlGpuInstanceDestroy", rc) +
                         ", so its GPU instance" + where + " is left without a compute instance";
  return Error{ci.error().code, ci.error().message + undo};
}

Status NvmlProbe::ApplyMigLayout(uint32_t gpu, const GpuModel& model, const MigLayout& layout) {
  if (!options_.allow_mig_changes) {
    return Error{ErrorCode::kPermissionDenied,
                 "MIG changes are off (the agent's --allow-mig-changes is not given)"};
  }
  GP_RETURN_IF_ERROR(ValidateLayout(model, layout));
  GP_RETURN_IF_ERROR(EnsureOpen());
  if (gpu >= devices_.size() || devices_[gpu].handle == nullptr) {
    return InvalidArgument("no usable GPU " + std::to_string(gpu));
  }
  const NvmlApi& api = lib_->api();
  if (const std::string missing = MissingMigCall(api); !missing.empty()) {
    return FailedPrecondition(lib_->path() + " lacks " + missing + ": cannot change MIG");
  }
  Device& d = devices_[gpu];
  unsigned int current = 0, pending = 0;
  nvmlReturn_t rc = api.device_get_mig_mode(d.handle, &current, &pending);
  if (!Check(d, rc)) return Unavailable(lib_->Describe("nvmlDeviceGetMigMode", rc));
  if (current != NVML_DEVICE_MIG_ENABLE) {
    return FailedPrecondition("GPU " + std::to_string(gpu) + " is not in MIG mode");
  }
  Result<std::vector<LiveGi>> live = ListGpuInstances(d);
  if (!live.ok()) return live.error();

  // A failure stops the walk. The one step that is undone is a GI created here whose CI then
  // fails (CreateInstance destroys it again). What can still be left part-way, and why:
  // - Destroyed CIs and GIs stay destroyed: a new CI would be a new MIG device (a new UUID) and
  //   what ran on the old one is gone anyway. A GI whose CIs went but which failed to go itself
  //   is left without a CI; it is not in the target, so the next attempt destroys it.
  // - GIs created with their CI before a later step failed are kept: they are in the target, so
  //   the next attempt keeps them instead of churning MIG device UUIDs.
  // - A kept GI that fails to get a CI was not made by this call and stays as it was found; so
  //   does a GI whose rollback destroy failed. Both are in the target: the next attempt gives
  //   them a CI.
  // The agent discovers again after every attempt, so the daemon sees what is really there.

  // What the layout asks for, largest first (then by start) so big placements are made first.
  std::vector<const MigInstance*> missing;
  for (int k = 0; k < layout.size(); ++k) missing.push_back(&layout.at(k));
  std::sort(missing.begin(), missing.end(), [&](const MigInstance* a, const MigInstance* b) {
    const int sa = model.profiles[a->profile].memory_slices;
    const int sb = model.profiles[b->profile].memory_slices;
    return sa != sb ? sa > sb : a->start < b->start;
  });
  for (const LiveGi& gi : *live) {
    auto want = std::find_if(missing.begin(), missing.end(), [&](const MigInstance* m) {
      return model.profiles[m->profile].id == gi.profile_id && m->start == gi.start;
    });
    Result<std::vector<nvmlComputeInstance_t>> cis = ListComputeInstances(d, gi.handle);
    if (!cis.ok()) return cis.error();
    if (want != missing.end()) {  // kept; usable only with a compute instance
      if (cis->empty()) {
        GP_RETURN_IF_ERROR(CreateFullComputeInstance(
            d, gi.handle, model.profiles[(*want)->profile].compute_slices));
      }
      missing.erase(want);
      continue;
    }
    for (nvmlComputeInstance_t ci : *cis) {
      rc = api.compute_instance_destroy(ci);
      if (!Check(d, rc)) return Unavailable(lib_->Describe("nvmlComputeInstanceDestroy", rc));
    }
    rc = api.gpu_instance_destroy(gi.handle);
    if (!Check(d, rc)) {
      return Unavailable(lib_->Describe("nvmlGpuInstanceDestroy", rc) + " (GI at slice " +
                         std::to_string(gi.start) + ")");
    }
  }
  for (const MigInstance* m : missing) {
    GP_RETURN_IF_ERROR(CreateInstance(d, model.profiles[m->profile], m->start));
  }
  return Ok();
}

}  // namespace gpupool
