#include "agent/gpu_probe.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#include "model/node.h"

namespace gpupool {
namespace {

// PCI device IDs from shared/reference/gpu-partitioning.md §1.2.2-1.2.7.
struct PciModel {
  uint32_t pci_device_id;
  const char* model;
};
constexpr std::array<PciModel, 11> kPciModels = {{
    {0x20B010DE, "a100-40gb"},    // A100-SXM4-40GB
    {0x20F110DE, "a100-40gb"},    // A100 PCIe 40GB
    {0x20B210DE, "a100-80gb"},    // A100-SXM4-80GB
    {0x20B510DE, "a100-80gb"},    // A100 PCIe 80GB
    {0x233010DE, "h100-80gb"},    // H100 80GB HBM3 (SXM5)
    {0x233110DE, "h100-80gb"},    // H100 PCIe
    {0x232110DE, "h100-94gb"},    // H100 NVL
    {0x233510DE, "h200-141gb"},   // H200 SXM5
    {0x233B10DE, "h200-141gb"},   // H200 NVL
    {0x290110DE, "b200-180gb"},   // B200
    {0x294110DE, "gb200-186gb"},  // GB200 (mig-parted device filter)
}};

// Catalogue models per product family, with the memory used to pick between sizes.
struct FamilyModel {
  const char* family;  // upper-case token of the product name
  const char* model;
  uint64_t memory_gb;
  const char* product;  // a product string NVML reports for the model
  const char* hint;     // a token that selects this model without a memory size, or ""
};
constexpr std::array<FamilyModel, 7> kFamilyModels = {{
    {"A100", "a100-40gb", 40, "NVIDIA A100-SXM4-40GB", ""},
    {"A100", "a100-80gb", 80, "NVIDIA A100-SXM4-80GB", ""},
    {"H100", "h100-80gb", 80, "NVIDIA H100 80GB HBM3", ""},
    {"H100", "h100-94gb", 94, "NVIDIA H100 NVL", "NVL"},
    {"H200", "h200-141gb", 141, "NVIDIA H200", ""},
    {"B200", "b200-180gb", 180, "NVIDIA B200", ""},
    {"GB200", "gb200-186gb", 186, "NVIDIA GB200", ""},
}};

// Upper-case alphanumeric tokens: "NVIDIA A100-SXM4-40GB" -> NVIDIA, A100, SXM4, 40GB.
std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// "80GB" -> 80; anything else -> 0.
uint64_t GbToken(const std::string& t) {
  if (t.size() < 3 || t.compare(t.size() - 2, 2, "GB") != 0) return 0;
  uint64_t n = 0;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return 0;
    n = n * 10 + static_cast<uint64_t>(t[i] - '0');
    if (n > 100000) return 0;
  }
  return n;
}

uint64_t AbsDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

Status GpuProbe::ApplyMigLayout(uint32_t, const GpuModel&, const MigLayout&) {
  return FailedPrecondition("this GPU probe cannot change MIG layouts");
}

std::string_view MigModeName(MigMode m) {
  switch (m) {
    case MigMode::kUnsupported: return "unsupported";
    case MigMode::kDisabled: return "disabled";
    case MigMode::kEnabled: return "enabled";
  }
  return "?";
}

std::string_view HealthEventKindName(HealthEventKind k) {
  switch (k) {
    case HealthEventKind::kXid: return "xid";
    case HealthEventKind::kEccUncorrectable: return "ecc-uncorrectable";
    case HealthEventKind::kRowRemapFailure: return "row-remap-failure";
    case HealthEventKind::kRowRemapPending: return "row-remap-pending";
    case HealthEventKind::kTemperature: return "temperature";
    case HealthEventKind::kGpuLost: return "gpu-lost";
    case HealthEventKind::kDeviceLost: return "device-lost";
  }
  return "?";
}

Result<std::string> CatalogueModelFor(std::string_view product_name, uint32_t pci_device_id,
                                      uint64_t memory_mib) {
  for (const PciModel& p : kPciModels) {
    if (p.pci_device_id == pci_device_id) return std::string(p.model);
  }
  const std::vector<std::string> tokens = Tokens(product_name);
  std::string family;
  uint64_t named_gb = 0;
  for (const std::string& t : tokens) {
    for (const FamilyModel& f : kFamilyModels) {
      if (family.empty() && t == f.family) family = t;
    }
    if (named_gb == 0) named_gb = GbToken(t);
  }
  if (family.empty()) {
    return NotFound("GPU product '" + std::string(product_name) + "' is not in the catalogue");
  }
  // Memory in GB: the name's "<n>GB" wins, then a hint token ("H100 NVL"), then the device
  // memory (MiB -> GB, rounded).
  uint64_t gb = named_gb != 0 ? named_gb : (memory_mib + 512) / 1024;
  for (const FamilyModel& f : kFamilyModels) {
    if (named_gb != 0 || family != f.family || *f.hint == '\0') continue;
    for (const std::string& t : tokens) {
      if (t == f.hint) gb = f.memory_gb;
    }
  }
  const FamilyModel* best = nullptr;
  int candidates = 0;
  for (const FamilyModel& f : kFamilyModels) {
    if (family != f.family) continue;
    ++candidates;
    if (best == nullptr || AbsDiff(f.memory_gb, gb) < AbsDiff(best->memory_gb, gb)) best = &f;
  }
  if (candidates > 1 && gb == 0) {
    return NotFound("GPU product '" + std::string(product_name) + "': the " + family +
                    " comes in several memory sizes and the memory is unknown");
  }
  return std::string(best->model);
}

std::string_view ProductNameFor(std::string_view model) {
  for (const FamilyModel& f : kFamilyModels) {
    if (model == f.model) return f.product;
  }
  return "";
}

std::string NormalizeBusId(std::string_view bus_id) {
  std::string s;
  for (char c : bus_id) {
    if (c == '\0') break;
    s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  const size_t colon = s.find(':');
  // Two colons: domain:bus:device.function. Pad the domain to 8 hex digits.
  if (colon != std::string::npos && s.find(':', colon + 1) != std::string::npos && colon < 8) {
    s.insert(0, 8 - colon, '0');
  }
  return s;
}

std::vector<std::string> AgentLabels(const SystemInfo& system, const std::vector<GpuInfo>& gpus) {
  const std::string prefix(kAgentLabelPrefix);
  const auto value = [](std::string v) {
    for (char& c : v) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '-';
    }
    return v.substr(0, 63);
  };
  std::vector<std::string> out;
  if (!system.driver_version.empty()) out.push_back(prefix + "driver-version=" + value(system.driver_version));
  if (!system.cuda_version.empty()) out.push_back(prefix + "cuda-version=" + value(system.cuda_version));
  if (!gpus.empty() && !gpus.front().name.empty()) out.push_back(prefix + "gpu-product=" + value(gpus.front().name));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpupool
