// NvmlProbe: the GpuProbe of a real node, reading NVML through dlopen (nvml_library.h).
//
// The library is opened and nvmlInit_v2 called on the first Discover or PollHealth; if that
// fails (no library: "libnvidia-ml.so.1 not found: ...", no driver, a missing required symbol)
// the call returns the error (kUnavailable) and the next call tries again. Device handles are
// enumerated once, and every GPU is registered for XID events then (where the driver supports
// it); Discover re-reads everything else each time, so a changed MIG layout shows.
//
// Reads, except ApplyMigLayout (nvml_mig.cc), which creates and destroys MIG GPU and compute
// instances and refuses (kPermissionDenied) unless NvmlProbeOptions::allow_mig_changes is set.
// nvml_types.h declares no call that changes MIG mode or resets a GPU. What is read and why:
// docs/design/agent.md ("NVML").
//
// Health levels become events on a rising edge per GPU: the volatile uncorrectable ECC count
// when it rises (the first poll reports a non-zero count), row-remap failure and pending when
// they become set, a lost GPU once. A row-remap query that NVML does not support (a MIG GPU with
// active instances) reports nothing: unknown, not healthy.
//
// Thread-safety: not thread-safe; one thread calls it. Destruction frees the event set, calls
// nvmlShutdown (if nvmlInit_v2 succeeded) and dlcloses the library.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/gpu_probe.h"
#include "agent/nvml_library.h"
#include "model/catalogue.h"

namespace gpupool {

struct NvmlProbeOptions {
  // "" -> $GPUPOOL_NVML_LIBRARY if set, else NvmlLibrary::kDefaultPath.
  std::string library_path;
  // How long PollHealth waits for the first XID event (later ones are drained without waiting).
  uint32_t event_wait_ms = 0;
  Catalogue catalogue = Catalogue::BuiltIn();  // for model and MIG profile names
  // ApplyMigLayout may create and destroy MIG instances (the agent's --allow-mig-changes).
  bool allow_mig_changes = false;
};

class NvmlProbe : public GpuProbe {
 public:
  explicit NvmlProbe(NvmlProbeOptions options = {});
  ~NvmlProbe() override;
  NvmlProbe(const NvmlProbe&) = delete;
  NvmlProbe& operator=(const NvmlProbe&) = delete;

  Result<std::vector<GpuInfo>> Discover() override;
  // HealthEvent::gpu is kUnknownU32 for an XID whose device handle is not one of ours.
  Result<std::vector<HealthEvent>> PollHealth() override;
  // Reference §3.7 step 3: destroys the compute instances, then the GPU instances, that are not
  // in `layout`; creates the missing GPU instances with their placement (largest first), each
  // with one compute instance spanning it (the CI profile whose slice count equals the GI's).
  // Instances of the layout that exist are kept (given a compute instance if they have none).
  // Errors: kPermissionDenied without allow_mig_changes; kInvalidArgument for a bad GPU or
  // layout; kFailedPrecondition when MIG is off on the GPU or the library lacks a MIG call;
  // kUnavailable with NVML's words (e.g. "In use (19)") when a call fails, possibly part-way:
  // a GI whose compute instance fails is destroyed again ("rolled back" in the error), but
  // destroys are not undone (nvml_mig.cc lists what can stay).
  Status ApplyMigLayout(uint32_t gpu, const GpuModel& model, const MigLayout& layout) override;
  // nvmlSystemGetDriverVersion and nvmlSystemGetCudaDriverVersion (12040 -> "12.4"); a field
  // the library lacks or fails to give stays empty.
  SystemInfo System() override;

  const std::string& library_path() const { return path_; }
  // Node-wide notes: optional symbols the library lacks, event registration failures, and what
  // the last PollHealth could not read.
  std::vector<std::string> notes() const;

 private:
  struct Device {
    nvml::nvmlDevice_t handle = nullptr;
    std::string uuid;
    std::string open_error;  // set when the handle could not be obtained
    bool lost = false;       // GPU_IS_LOST seen
    bool lost_reported = false;
    unsigned long long ecc_seen = 0;
    bool remap_failure_seen = false;
    bool remap_pending_seen = false;
  };

  Status EnsureOpen();
  void OpenDevices();
  void RegisterEvents();
  GpuInfo Describe(uint32_t index);
  void ReadMig(const Device& d, GpuInfo& g);
  void ReadMigDevices(const Device& d, GpuInfo& g);
  void ReadNvLinks(const Device& d, GpuInfo& g);
  void PollXids(std::vector<HealthEvent>& out);
  // MIG write helpers (nvml_mig.cc).
  struct LiveGi {
    nvml::nvmlGpuInstance_t handle = nullptr;
    unsigned int profile_id = 0, start = 0, size = 0;
  };
  Result<std::vector<LiveGi>> ListGpuInstances(Device& d);
  Result<std::vector<nvml::nvmlComputeInstance_t>> ListComputeInstances(Device& d,
                                                                        nvml::nvmlGpuInstance_t gi);
  Status CreateFullComputeInstance(Device& d, nvml::nvmlGpuInstance_t gi, unsigned int slices);
  // The GI of `p` at `start` with its full CI; if the CI fails, the GI is destroyed again and
  // the error says whether that worked.
  Status CreateInstance(Device& d, const MigProfile& p, unsigned int start);
  void PollLevels(uint32_t index, std::vector<HealthEvent>& out);
  bool ReadTemperature(Device& d, uint32_t& celsius);
  // Records rc on d (GPU_IS_LOST marks it lost); returns rc == NVML_SUCCESS.
  bool Check(Device& d, nvml::nvmlReturn_t rc);

  NvmlProbeOptions options_;
  std::string path_;
  std::unique_ptr<NvmlLibrary> lib_;
  bool initialized_ = false;  // nvmlInit_v2 succeeded
  std::vector<Device> devices_;
  nvml::nvmlEventSet_t event_set_ = nullptr;
  std::vector<std::string> open_notes_;  // from EnsureOpen
  std::vector<std::string> poll_notes_;  // from the last PollHealth
};

}  // namespace gpupool
