// NvmlLibrary: libnvidia-ml loaded with dlopen, and the function pointers of the calls the
// agent uses (nvml_types.h), resolved with dlsym.
//
// Required symbols (init, device count and handles, name, UUID, memory, PCI info) must all be
// present or Open fails. Optional symbols (MIG, NVLink, temperature, ECC, row remapping,
// events) may be absent, as in an old driver: their pointer stays null, missing_optional() names
// them, and the probe leaves that feature out. Only the current versioned symbols are resolved
// (nvmlInit_v2, nvmlDeviceGetPciInfo_v3, ...): the older fallbacks use struct layouts the
// reference does not give.
//
// Ownership: the object owns the dlopen handle and dlcloses it on destruction; the pointers are
// valid while it lives. It does not call nvmlInit or nvmlShutdown (NvmlProbe does).
// Thread-safety: immutable after Open.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/nvml_types.h"
#include "core/result.h"

namespace gpupool {

struct NvmlApi {
  // Required.
  nvml::InitFn init = nullptr;  // nvmlInit_v2
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::DeviceGetCountFn device_get_count = nullptr;                    // _v2
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;  // _v2
  nvml::DeviceGetStringFn device_get_name = nullptr;
  nvml::DeviceGetStringFn device_get_uuid = nullptr;
  nvml::DeviceGetMemoryInfoFn device_get_memory_info = nullptr;
  nvml::DeviceGetPciInfoFn device_get_pci_info = nullptr;  // _v3
  // Optional: the driver (node labels).
  nvml::SystemGetStringFn system_get_driver_version = nullptr;
  nvml::SystemGetIntFn system_get_cuda_driver_version = nullptr;
  // Optional: MIG.
  nvml::DeviceGetMigModeFn device_get_mig_mode = nullptr;
  nvml::DeviceGetUintFn device_get_max_mig_device_count = nullptr;
  nvml::DeviceGetMigDeviceHandleByIndexFn device_get_mig_device_handle_by_index = nullptr;
  nvml::DeviceGetUintFn device_get_gpu_instance_id = nullptr;
  nvml::DeviceGetGpuInstanceProfileInfoFn device_get_gpu_instance_profile_info = nullptr;
  nvml::DeviceGetGpuInstancesFn device_get_gpu_instances = nullptr;
  nvml::GpuInstanceGetInfoFn gpu_instance_get_info = nullptr;
  // Optional: NVLink.
  nvml::DeviceGetNvLinkStateFn device_get_nvlink_state = nullptr;
  nvml::DeviceGetNvLinkRemotePciInfoFn device_get_nvlink_remote_pci_info = nullptr;  // _v2
  nvml::DeviceGetNvLinkRemoteDeviceTypeFn device_get_nvlink_remote_device_type = nullptr;
  // Optional: health.
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;
  nvml::DeviceGetTemperatureVFn device_get_temperature_v = nullptr;
  nvml::DeviceGetTotalEccErrorsFn device_get_total_ecc_errors = nullptr;
  nvml::DeviceGetRemappedRowsFn device_get_remapped_rows = nullptr;
  nvml::EventSetCreateFn event_set_create = nullptr;
  nvml::DeviceGetSupportedEventTypesFn device_get_supported_event_types = nullptr;
  nvml::DeviceRegisterEventsFn device_register_events = nullptr;
  nvml::EventSetWaitFn event_set_wait = nullptr;  // _v2
  nvml::EventSetFreeFn event_set_free = nullptr;
  // Optional: MIG write (NvmlProbe::ApplyMigLayout, with --allow-mig-changes only).
  nvml::DeviceCreateGpuInstanceWithPlacementFn device_create_gpu_instance_with_placement = nullptr;
  nvml::GpuInstanceDestroyFn gpu_instance_destroy = nullptr;
  nvml::GpuInstanceGetComputeInstanceProfileInfoFn gpu_instance_get_compute_instance_profile_info =
      nullptr;
  nvml::GpuInstanceCreateComputeInstanceFn gpu_instance_create_compute_instance = nullptr;
  nvml::GpuInstanceGetComputeInstancesFn gpu_instance_get_compute_instances = nullptr;
  nvml::ComputeInstanceDestroyFn compute_instance_destroy = nullptr;
};

class NvmlLibrary {
 public:
  // The library the agent opens unless told otherwise.
  static constexpr const char* kDefaultPath = "libnvidia-ml.so.1";

  // dlopens `path` (a soname or a file path) and resolves the symbols. Errors (kUnavailable):
  // "<path> not found: <dlerror>" when dlopen fails; "<path> lacks required symbol <name>".
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlApi& api() const { return api_; }
  const std::string& path() const { return path_; }
  // Optional symbols that the library does not export, in declaration order.
  const std::vector<std::string>& missing_optional() const { return missing_optional_; }

  // "nvmlDeviceGetName: Not Supported (3)", using nvmlErrorString.
  std::string Describe(const char* call, nvml::nvmlReturn_t rc) const;

  // Every symbol name Open resolves, required and optional. A test checks that all of them read
  // state except the six MIG instance create/destroy calls (no Set*, no Reset*).
  static std::vector<std::string> SymbolNames();

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  NvmlApi api_;
  std::vector<std::string> missing_optional_;
};

}  // namespace gpupool
