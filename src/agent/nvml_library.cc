#include "agent/nvml_library.h"

#include <dlfcn.h>

#include <type_traits>

namespace gpupool {
namespace {

// Calls v(name, slot, required) for every symbol, in one place so that Open and SymbolNames
// cannot drift apart.
template <class Visitor>
void VisitSymbols(NvmlApi& a, Visitor&& v) {
  v("nvmlInit_v2", a.init, true);
  v("nvmlShutdown", a.shutdown, true);
  v("nvmlErrorString", a.error_string, true);
  v("nvmlDeviceGetCount_v2", a.device_get_count, true);
  v("nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index, true);
  v("nvmlDeviceGetName", a.device_get_name, true);
  v("nvmlDeviceGetUUID", a.device_get_uuid, true);
  v("nvmlDeviceGetMemoryInfo", a.device_get_memory_info, true);
  v("nvmlDeviceGetPciInfo_v3", a.device_get_pci_info, true);
  v("nvmlSystemGetDriverVersion", a.system_get_driver_version, false);
  v("nvmlSystemGetCudaDriverVersion", a.system_get_cuda_driver_version, false);
  v("nvmlDeviceGetMigMode", a.device_get_mig_mode, false);
  v("nvmlDeviceGetMaxMigDeviceCount", a.device_get_max_mig_device_count, false);
  v("nvmlDeviceGetMigDeviceHandleByIndex", a.device_get_mig_device_handle_by_index, false);
  v("nvmlDeviceGetGpuInstanceId", a.device_get_gpu_instance_id, false);
  v("nvmlDeviceGetGpuInstanceProfileInfo", a.device_get_gpu_instance_profile_info, false);
  v("nvmlDeviceGetGpuInstances", a.device_get_gpu_instances, false);
  v("nvmlGpuInstanceGetInfo", a.gpu_instance_get_info, false);
  v("nvmlDeviceGetNvLinkState", a.device_get_nvlink_state, false);
  v("nvmlDeviceGetNvLinkRemotePciInfo_v2", a.device_get_nvlink_remote_pci_info, false);
  v("nvmlDeviceGetNvLinkRemoteDeviceType", a.device_get_nvlink_remote_device_type, false);
  v("nvmlDeviceGetTemperature", a.device_get_temperature, false);
  v("nvmlDeviceGetTemperatureV", a.device_get_temperature_v, false);
  v("nvmlDeviceGetTotalEccErrors", a.device_get_total_ecc_errors, false);
  v("nvmlDeviceGetRemappedRows", a.device_get_remapped_rows, false);
  v("nvmlEventSetCreate", a.event_set_create, false);
  v("nvmlDeviceGetSupportedEventTypes", a.device_get_supported_event_types, false);
  v("nvmlDeviceRegisterEvents", a.device_register_events, false);
  v("nvmlEventSetWait_v2", a.event_set_wait, false);
  v("nvmlEventSetFree", a.event_set_free, false);
  v("nvmlDeviceCreateGpuInstanceWithPlacement", a.device_create_gpu_instance_with_placement, false);
  v("nvmlGpuInstanceDestroy", a.gpu_instance_destroy, false);
  v("nvmlGpuInstanceGetComputeInstanceProfileInfo",
    a.gpu_instance_get_compute_instance_profile_info, false);
  v("nvmlGpuInstanceCreateComputeInstance", a.gpu_instance_create_compute_instance, false);
  v("nvmlGpuInstanceGetComputeInstances", a.gpu_instance_get_compute_instances, false);
  v("nvmlComputeInstanceDestroy", a.compute_instance_destroy, false);
}

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  dlerror();  // clear any stale error
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Unavailable(path + " not found: " + (why ? why : "dlopen failed"));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;  // dlclosed by the destructor from here on
  lib->path_ = path;
  std::string missing_required;
  VisitSymbols(lib->api_, [&](const char* name, auto& slot, bool required) {
    using Fn = std::remove_reference_t<decltype(slot)>;
    void* sym = dlsym(handle, name);
    slot = reinterpret_cast<Fn>(sym);
    if (sym != nullptr) return;
    if (required) {
      if (missing_required.empty()) missing_required = name;
    } else {
      lib->missing_optional_.push_back(name);
    }
  });
  if (!missing_required.empty()) {
    return Unavailable(path + " lacks required symbol " + missing_required +
                       " (not an NVML library, or a driver older than the agent supports)");
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::Describe(const char* call, nvml::nvmlReturn_t rc) const {
  const char* text = api_.error_string ? api_.error_string(rc) : nullptr;
  return std::string(call) + ": " + (text ? text : "error") + " (" + std::to_string(rc) + ")";
}

std::vector<std::string> NvmlLibrary::SymbolNames() {
  std::vector<std::string> names;
  NvmlApi scratch;
  VisitSymbols(scratch, [&](const char* name, auto&, bool) { names.emplace_back(name); });
  return names;
}

}  // namespace gpupool
