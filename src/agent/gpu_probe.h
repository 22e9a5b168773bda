// GpuProbe: what the node agent knows about the GPUs of its node, from NVML (NvmlProbe) or from
// a spec string (FakeProbe). Discover and PollHealth only read. ApplyMigLayout is the one call
// that changes a GPU (its MIG instances); the agent makes it only when started with
// --allow-mig-changes and only on a GPU none of its replicas use. Nothing here changes MIG mode
// or resets a GPU.
//
// Discover() describes every GPU as it is now. PollHealth() returns what happened since the last
// call: XID events, a rise of the uncorrectable ECC count, row-remapping failure or pending, a
// lost GPU (each reported once), and one temperature reading per GPU (on every call). The
// mapping from events to actions is health.h. Design: docs/design/agent.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/mig.h"

namespace gpupool {

inline constexpr uint32_t kUnknownU32 = 0xFFFFFFFFu;

enum class MigMode : uint8_t { kUnsupported, kDisabled, kEnabled };
std::string_view MigModeName(MigMode m);

// One MIG GPU instance (GI). Its compute instances appear as MIG devices with their own UUIDs.
struct GpuInstanceInfo {
  uint32_t id = kUnknownU32;           // NVML GPU instance ID (per GPU)
  uint32_t profile_id = kUnknownU32;   // GI profile ID, e.g. 9 for 3g; kUnknownU32 if unknown
  std::string profile;                 // catalogue name, e.g. "3g.40gb"; "" if unknown
  uint32_t start = kUnknownU32;        // placement: first memory slice
  uint32_t size = kUnknownU32;         // placement: memory slices
  std::vector<std::string> mig_uuids;  // "MIG-..." of the MIG devices (compute instances)
};

// One active NVLink link of a GPU.
struct NvLinkPeer {
  uint32_t link = 0;
  std::string remote_bus_id;  // normalised PCI bus id of the far end
  std::string remote_uuid;    // the far end's UUID when it is a GPU of this node, else ""
  std::string remote_type;    // "gpu", "switch", "ibmnpu" or "unknown"
};

struct GpuInfo {
  uint32_t index = 0;
  std::string uuid;   // "GPU-..."
  std::string name;   // the product string NVML reports, e.g. "NVIDIA H100 80GB HBM3"
  std::string model;  // catalogue model, e.g. "h100-80gb"; "" if not in the catalogue
  uint64_t memory_mib = 0;
  std::string pci_bus_id;      // normalised, e.g. "00000000:07:00.0"
  uint32_t pci_device_id = 0;  // device << 16 | vendor, e.g. 0x233010DE; 0 if unknown
  MigMode mig_current = MigMode::kUnsupported;
  MigMode mig_pending = MigMode::kUnsupported;
  std::vector<GpuInstanceInfo> gpu_instances;  // by start, then id
  std::vector<NvLinkPeer> nvlinks;             // active links, by link number
  std::vector<std::string> warnings;           // what could not be read, and why
};

enum class HealthEventKind : uint8_t {
  kXid,               // value: the XID code (999: NVML could not decode it)
  kEccUncorrectable,  // value: volatile uncorrectable ECC count, which rose since last seen
  kRowRemapFailure,   // a row remap failed: no spare rows left
  kRowRemapPending,   // a remap waits for a GPU reset
  kTemperature,       // value: degrees Celsius (a reading, not an event)
  kGpuLost,           // the GPU fell off the bus or stopped answering
  kDeviceLost,        // a MIG device a replica used disappeared (the agent's rediscovery)
};
std::string_view HealthEventKindName(HealthEventKind k);

struct HealthEvent {
  uint32_t gpu = 0;  // GpuInfo::index
  std::string gpu_uuid;
  HealthEventKind kind = HealthEventKind::kXid;
  uint64_t value = 0;
  uint32_t gpu_instance_id = kUnknownU32;  // kXid on a MIG GPU, when NVML attributes it

  friend bool operator==(const HealthEvent&, const HealthEvent&) = default;
};

// What the node's driver reports about itself; empty where it cannot say.
struct SystemInfo {
  std::string driver_version;  // e.g. "550.54.15"
  std::string cuda_version;    // the highest CUDA version the driver supports, e.g. "12.4"
  friend bool operator==(const SystemInfo&, const SystemInfo&) = default;
};

// The labels the agent reports for its node (model/node.h, kAgentLabelPrefix):
// node.gpupool.io/driver-version, cuda-version and gpu-product (the product name with every
// character a label value may not hold replaced by '-', "NVIDIA-H100-80GB-HBM3"), each only when
// known; sorted.
std::vector<std::string> AgentLabels(const SystemInfo& system, const std::vector<GpuInfo>& gpus);

// Thread-safety: an implementation says; callers should assume one thread at a time.
class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // Every GPU of the node, by index. An error means the probe cannot see the GPUs at all; a
  // detail that cannot be read goes to GpuInfo::warnings instead.
  virtual Result<std::vector<GpuInfo>> Discover() = 0;
  // Events since the last call and the temperature readings (see the file comment). XIDs keep
  // their arrival order; beyond that the order is deterministic but not part of the contract.
  virtual Result<std::vector<HealthEvent>> PollHealth() = 0;
  // Makes GPU `gpu` (GpuInfo::index, in MIG mode) hold exactly the GPU instances of `layout`,
  // each with one compute instance spanning it (one MIG device): instances of the layout that
  // exist (same profile and start) are kept untouched, the others destroyed, the missing ones
  // created. REQUIRES: ValidateLayout(model, layout) ok, model is the GPU's model. On error
  // the GPU may be left part-way; Discover shows what it holds. Default: kFailedPrecondition.
  virtual Status ApplyMigLayout(uint32_t gpu, const GpuModel& model, const MigLayout& layout);
  // The driver's and CUDA's versions. Default: nothing known.
  virtual SystemInfo System() { return {}; }
};

// The catalogue model (Catalogue::BuiltIn names) for a product. The PCI device ID decides when
// it is one the reference lists (e.g. 0x233010DE -> "h100-80gb"); otherwise the product name
// does: its family token (A100, H100, H200, B200, GB200; "GH200" is not "H200") and its memory,
// taken from a "<n>GB" token or else from memory_mib (0: unknown), nearest catalogue size wins.
// NotFound for products outside the catalogue (V100, GH200, H800, ...), or when one family has
// several sizes and neither the name nor memory_mib tells which.
Result<std::string> CatalogueModelFor(std::string_view product_name, uint32_t pci_device_id,
                                      uint64_t memory_mib);

// A product string NVML reports for a catalogue model (the FakeProbe uses it), e.g.
// "h100-80gb" -> "NVIDIA H100 80GB HBM3"; "" for a name outside the catalogue.
std::string_view ProductNameFor(std::string_view model);

// "0000:07:00.0" or "00000000:07:00.0" (any case) -> "00000000:07:00.0": 8-digit domain,
// upper-case hex, so bus ids from different NVML calls compare equal.
std::string NormalizeBusId(std::string_view bus_id);

}  // namespace gpupool
