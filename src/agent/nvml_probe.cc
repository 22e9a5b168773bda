// NvmlProbe: opening NVML and Discover. PollHealth is in nvml_health.cc.
#include "agent/nvml_probe.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

namespace gpupool {

using namespace nvml;  // NOLINT: the NVML names read best unqualified in this file

namespace {

constexpr unsigned int kMaxGpuInstancesPerProfile = 64;

Error Unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

// Reads a string attribute into a NUL-terminated buffer.
nvmlReturn_t ReadString(DeviceGetStringFn fn, nvmlDevice_t dev, std::string& out) {
  char buf[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  const nvmlReturn_t rc = fn(dev, buf, sizeof buf);
  buf[sizeof buf - 1] = '\0';
  if (rc == NVML_SUCCESS) out = buf;
  return rc;
}

MigMode ToMigMode(unsigned int mode) {
  return mode == NVML_DEVICE_MIG_ENABLE ? MigMode::kEnabled : MigMode::kDisabled;
}

std::string RemoteType(int type) {
  switch (type) {
    case NVML_NVLINK_DEVICE_TYPE_GPU: return "gpu";
    case NVML_NVLINK_DEVICE_TYPE_SWITCH: return "switch";
    case NVML_NVLINK_DEVICE_TYPE_IBMNPU: return "ibmnpu";
    default: return "unknown";
  }
}

}  // namespace

NvmlProbe::NvmlProbe(NvmlProbeOptions options) : options_(std::move(options)) {
  path_ = options_.library_path;
  if (path_.empty()) {
    const char* env = std::getenv("GPUPOOL_NVML_LIBRARY");
    path_ = (env != nullptr && *env != '\0') ? env : NvmlLibrary::kDefaultPath;
  }
}

NvmlProbe::~NvmlProbe() {
  if (lib_ == nullptr) return;
  const NvmlApi& api = lib_->api();
  if (event_set_ != nullptr && api.event_set_free != nullptr) api.event_set_free(event_set_);
  if (initialized_) api.shutdown();
}

std::vector<std::string> NvmlProbe::notes() const {
  std::vector<std::string> all = open_notes_;
  all.insert(all.end(), poll_notes_.begin(), poll_notes_.end());
  return all;
}

Status NvmlProbe::EnsureOpen() {
  if (initialized_) return Ok();
  auto lib = NvmlLibrary::Open(path_);
  if (!lib.ok()) return lib.error();
  const nvmlReturn_t rc = (*lib)->api().init();
  if (rc != NVML_SUCCESS) return Unavailable((*lib)->Describe("nvmlInit_v2", rc));
  lib_ = std::move(*lib);
  initialized_ = true;
  open_notes_.clear();
  for (const std::string& name : lib_->missing_optional()) {
    open_notes_.push_back(lib_->path() + " lacks optional " + name + "; that feature is off");
  }
  OpenDevices();
  RegisterEvents();
  return Ok();
}

void NvmlProbe::OpenDevices() {
  const NvmlApi& api = lib_->api();
  unsigned int count = 0;
  const nvmlReturn_t rc = api.device_get_count(&count);
  if (rc != NVML_SUCCESS) {
    open_notes_.push_back(lib_->Describe("nvmlDeviceGetCount_v2", rc));
    return;
  }
  devices_.assign(count, Device{});
  for (unsigned int i = 0; i < count; ++i) {
    Device& d = devices_[i];
    const nvmlReturn_t h = api.device_get_handle_by_index(i, &d.handle);
    if (h != NVML_SUCCESS) {
      d.handle = nullptr;
      d.open_error = lib_->Describe("nvmlDeviceGetHandleByIndex_v2", h);
      d.lost = h == NVML_ERROR_GPU_IS_LOST;
      continue;
    }
    Check(d, ReadString(api.device_get_uuid, d.handle, d.uuid));
  }
}

void NvmlProbe::RegisterEvents() {
  const NvmlApi& api = lib_->api();
  if (!api.event_set_create || !api.device_register_events || !api.event_set_wait) return;
  nvmlReturn_t rc = api.event_set_create(&event_set_);
  if (rc != NVML_SUCCESS) {
    event_set_ = nullptr;
    open_notes_.push_back(lib_->Describe("nvmlEventSetCreate", rc) + "; XIDs are not seen");
    return;
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    if (d.handle == nullptr) continue;
    unsigned long long types = nvmlEventTypeXidCriticalError;
    if (api.device_get_supported_event_types != nullptr) {
      unsigned long long supported = 0;
      if (api.device_get_supported_event_types(d.handle, &supported) == NVML_SUCCESS) {
        types &= supported;
      }
    }
    rc = types == 0 ? NVML_ERROR_NOT_SUPPORTED
                    : api.device_register_events(d.handle, types, event_set_);
    if (rc != NVML_SUCCESS) {
      open_notes_.push_back("GPU " + std::to_string(i) + ": XID events not registered: " +
                            lib_->Describe("nvmlDeviceRegisterEvents", rc));
    }
  }
}

bool NvmlProbe::Check(Device& d, nvmlReturn_t rc) {
  if (rc == NVML_ERROR_GPU_IS_LOST) d.lost = true;
  return rc == NVML_SUCCESS;
}

Result<std::vector<GpuInfo>> NvmlProbe::Discover() {
  GP_RETURN_IF_ERROR(EnsureOpen());
  std::vector<GpuInfo> gpus;
  for (uint32_t i = 0; i < devices_.size(); ++i) gpus.push_back(Describe(i));
  // NVLink peers that are GPUs of this node get their UUIDs.
  std::map<std::string, std::string> uuid_by_bus;
  for (const GpuInfo& g : gpus) {
    if (!g.pci_bus_id.empty()) uuid_by_bus[g.pci_bus_id] = g.uuid;
  }
  for (GpuInfo& g : gpus) {
    for (NvLinkPeer& p : g.nvlinks) {
      auto it = uuid_by_bus.find(p.remote_bus_id);
      if (it != uuid_by_bus.end()) p.remote_uuid = it->second;
    }
  }
  return gpus;
}

SystemInfo NvmlProbe::System() {
  SystemInfo out;
  if (!EnsureOpen().ok()) return out;
  const NvmlApi& api = lib_->api();
  if (api.system_get_driver_version != nullptr) {
    char buf[96] = {};
    if (api.system_get_driver_version(buf, sizeof buf) == NVML_SUCCESS) out.driver_version.assign(buf, strnlen(buf, sizeof buf));
  }
  int cuda = 0;
  if (api.system_get_cuda_driver_version != nullptr && api.system_get_cuda_driver_version(&cuda) == NVML_SUCCESS && cuda > 0) {
    out.cuda_version = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
  }
  return out;
}

GpuInfo NvmlProbe::Describe(uint32_t index) {
  const NvmlApi& api = lib_->api();
  Device& d = devices_[index];
  GpuInfo g;
  g.index = index;
  g.uuid = d.uuid;
  if (d.handle == nullptr) {
    g.warnings.push_back(d.open_error);
    return g;
  }
  auto warn = [&](const char* call, nvmlReturn_t rc) {
    g.warnings.push_back(lib_->Describe(call, rc));
  };
  nvmlReturn_t rc = ReadString(api.device_get_name, d.handle, g.name);
  if (!Check(d, rc)) warn("nvmlDeviceGetName", rc);
  if (g.uuid.empty()) {
    rc = ReadString(api.device_get_uuid, d.handle, d.uuid);
    if (Check(d, rc))
      g.uuid = d.uuid;
    else
      warn("nvmlDeviceGetUUID", rc);
  }
  nvmlMemory_t mem{};
  rc = api.device_get_memory_info(d.handle, &mem);
  if (Check(d, rc))
    g.memory_mib = mem.total >> 20;
  else
    warn("nvmlDeviceGetMemoryInfo", rc);
  nvmlPciInfo_t pci{};
  rc = api.device_get_pci_info(d.handle, &pci);
  if (Check(d, rc)) {
    pci.busId[sizeof pci.busId - 1] = '\0';
    g.pci_bus_id = NormalizeBusId(pci.busId);
    g.pci_device_id = pci.pciDeviceId;
  } else {
    warn("nvmlDeviceGetPciInfo_v3", rc);
  }
  auto model = CatalogueModelFor(g.name, g.pci_device_id, g.memory_mib);
  if (model.ok())
    g.model = *model;
  else
    g.warnings.push_back(model.error().message);
  if (api.device_get_mig_mode != nullptr) {
    unsigned int current = 0, pending = 0;
    rc = api.device_get_mig_mode(d.handle, &current, &pending);
    if (Check(d, rc)) {
      g.mig_current = ToMigMode(current);
      g.mig_pending = ToMigMode(pending);
    } else if (rc != NVML_ERROR_NOT_SUPPORTED) {
      warn("nvmlDeviceGetMigMode", rc);
    }
  }
  if (g.mig_current == MigMode::kEnabled) ReadMig(d, g);
  ReadNvLinks(d, g);
  return g;
}

// GPU instances: each GI profile the GPU knows (enum 0.. until INVALID_ARGUMENT), the GIs of
// that profile, and their placement. Listing GIs needs root; without it only the MIG devices
// (UUIDs and GI ids) are known.
void NvmlProbe::ReadMig(const Device& d, GpuInfo& g) {
  const NvmlApi& api = lib_->api();
  const GpuModel* model = nullptr;
  if (auto f = options_.catalogue.Find(g.model); f.ok()) model = &options_.catalogue.model(*f);
  if (!api.device_get_gpu_instance_profile_info || !api.device_get_gpu_instances ||
      !api.gpu_instance_get_info) {
    g.warnings.push_back("GPU instance listing unavailable in this NVML; placements unknown");
  } else {
    std::vector<unsigned int> seen;
    for (unsigned int p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; ++p) {
      nvmlGpuInstanceProfileInfo_t info{};
      nvmlReturn_t rc = api.device_get_gpu_instance_profile_info(d.handle, p, &info);
      if (rc == NVML_ERROR_INVALID_ARGUMENT) break;  // past the last profile
      if (rc == NVML_ERROR_NOT_SUPPORTED) continue;  // profile absent on this GPU
      if (rc != NVML_SUCCESS) {
        g.warnings.push_back(lib_->Describe("nvmlDeviceGetGpuInstanceProfileInfo", rc));
        break;
      }
      if (std::find(seen.begin(), seen.end(), info.id) != seen.end()) continue;
      seen.push_back(info.id);
      nvmlGpuInstance_t handles[kMaxGpuInstancesPerProfile] = {};
      unsigned int count = kMaxGpuInstancesPerProfile;
      rc = api.device_get_gpu_instances(d.handle, info.id, handles, &count);
      if (rc != NVML_SUCCESS) {
        g.warnings.push_back(lib_->Describe("nvmlDeviceGetGpuInstances", rc) +
                             " (listing GPU instances needs root); placements unknown");
        break;
      }
      for (unsigned int k = 0; k < count && k < kMaxGpuInstancesPerProfile; ++k) {
        nvmlGpuInstanceInfo_t gi{};
        rc = api.gpu_instance_get_info(handles[k], &gi);
        if (rc != NVML_SUCCESS) {
          g.warnings.push_back(lib_->Describe("nvmlGpuInstanceGetInfo", rc));
          continue;
        }
        GpuInstanceInfo out;
        out.id = gi.id;
        out.profile_id = gi.profileId;
        out.start = gi.placement.start;
        out.size = gi.placement.size;
        const int idx = model && gi.profileId < 256
                            ? model->ProfileIndexById(static_cast<uint8_t>(gi.profileId))
                            : -1;
        if (idx >= 0) out.profile = model->profiles[idx].name;
        g.gpu_instances.push_back(std::move(out));
      }
    }
  }
  ReadMigDevices(d, g);
  std::sort(g.gpu_instances.begin(), g.gpu_instances.end(),
            [](const GpuInstanceInfo& a, const GpuInstanceInfo& b) {
              return a.start != b.start ? a.start < b.start : a.id < b.id;
            });
}

// MIG devices (one per compute instance): their UUIDs, attached to their GI by GI id.
void NvmlProbe::ReadMigDevices(const Device& d, GpuInfo& g) {
  const NvmlApi& api = lib_->api();
  if (!api.device_get_max_mig_device_count || !api.device_get_mig_device_handle_by_index) {
    g.warnings.push_back("MIG device listing unavailable in this NVML; MIG UUIDs unknown");
    return;
  }
  unsigned int max = 0;
  nvmlReturn_t rc = api.device_get_max_mig_device_count(d.handle, &max);
  if (rc != NVML_SUCCESS) {
    g.warnings.push_back(lib_->Describe("nvmlDeviceGetMaxMigDeviceCount", rc));
    return;
  }
  for (unsigned int i = 0; i < max; ++i) {
    nvmlDevice_t mig = nullptr;
    rc = api.device_get_mig_device_handle_by_index(d.handle, i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND) continue;  // indexes may be sparse
    std::string uuid;
    if (rc == NVML_SUCCESS) rc = ReadString(api.device_get_uuid, mig, uuid);
    if (rc != NVML_SUCCESS) {
      g.warnings.push_back("MIG device " + std::to_string(i) + ": " +
                           lib_->Describe("nvmlDeviceGetMigDeviceHandleByIndex/UUID", rc));
      continue;
    }
    unsigned int gi_id = kUnknownU32;
    if (api.device_get_gpu_instance_id == nullptr ||
        api.device_get_gpu_instance_id(mig, &gi_id) != NVML_SUCCESS) {
      gi_id = kUnknownU32;
    }
    auto it = std::find_if(g.gpu_instances.begin(), g.gpu_instances.end(),
                           [&](const GpuInstanceInfo& gi) { return gi.id == gi_id; });
    if (it == g.gpu_instances.end() || gi_id == kUnknownU32) {
      GpuInstanceInfo gi;  // placement unknown (no listing, or no GI id)
      gi.id = gi_id;
      g.gpu_instances.push_back(std::move(gi));
      it = g.gpu_instances.end() - 1;
    }
    it->mig_uuids.push_back(std::move(uuid));
  }
}

void NvmlProbe::ReadNvLinks(const Device& d, GpuInfo& g) {
  const NvmlApi& api = lib_->api();
  if (!api.device_get_nvlink_state || !api.device_get_nvlink_remote_pci_info) return;
  for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    int active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = api.device_get_nvlink_state(d.handle, link, &active);
    // NOT_SUPPORTED: no NVLink; INVALID_ARGUMENT: past this GPU's last link.
    if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    nvmlPciInfo_t pci{};
    rc = api.device_get_nvlink_remote_pci_info(d.handle, link, &pci);
    if (rc != NVML_SUCCESS) {
      g.warnings.push_back("NVLink " + std::to_string(link) + ": " +
                           lib_->Describe("nvmlDeviceGetNvLinkRemotePciInfo_v2", rc));
      continue;
    }
    pci.busId[sizeof pci.busId - 1] = '\0';
    NvLinkPeer peer;
    peer.link = link;
    peer.remote_bus_id = NormalizeBusId(pci.busId);
    int type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    if (api.device_get_nvlink_remote_device_type != nullptr &&
        api.device_get_nvlink_remote_device_type(d.handle, link, &type) != NVML_SUCCESS) {
      type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    }
    peer.remote_type = RemoteType(type);
    g.nvlinks.push_back(std::move(peer));
  }
}

}  // namespace gpupool
