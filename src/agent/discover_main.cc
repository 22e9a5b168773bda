// gpupool-nvml-discover: NvmlProbe::Discover and one PollHealth, printed as JSON. Read-only: it
// changes nothing on the GPUs (it is meant for a first look at a real GPU machine).
//
// Usage: gpupool-nvml-discover [--library PATH] [--wait-ms N]
//   --library  the NVML library (default $GPUPOOL_NVML_LIBRARY, else libnvidia-ml.so.1)
//   --wait-ms  how long the health poll waits for the first XID event (default 0)
// Exit status: 0 on success, 1 if NVML could not be used (the JSON says why), 2 on bad usage.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/health.h"
#include "agent/nvml_probe.h"

namespace gpupool {
namespace {

using nlohmann::json;

json ToJson(const GpuInfo& g) {
  json gis = json::array();
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    auto opt = [](uint32_t v) { return v == kUnknownU32 ? json(nullptr) : json(v); };
    gis.push_back({{"id", opt(gi.id)},
                   {"profile_id", opt(gi.profile_id)},
                   {"profile", gi.profile},
                   {"start", opt(gi.start)},
                   {"size", opt(gi.size)},
                   {"mig_uuids", gi.mig_uuids}});
  }
  json links = json::array();
  for (const NvLinkPeer& p : g.nvlinks) {
    links.push_back({{"link", p.link},
                     {"remote_bus_id", p.remote_bus_id},
                     {"remote_uuid", p.remote_uuid},
                     {"remote_type", p.remote_type}});
  }
  char pci_id[16];
  std::snprintf(pci_id, sizeof pci_id, "0x%08X", g.pci_device_id);
  return {{"index", g.index},
          {"uuid", g.uuid},
          {"name", g.name},
          {"model", g.model},
          {"memory_mib", g.memory_mib},
          {"pci_bus_id", g.pci_bus_id},
          {"pci_device_id", pci_id},
          {"mig_current", MigModeName(g.mig_current)},
          {"mig_pending", MigModeName(g.mig_pending)},
          {"gpu_instances", gis},
          {"nvlinks", links},
          {"warnings", g.warnings}};
}

json ToJson(const HealthEvent& e) {
  const HealthVerdict v = Classify(e);
  return {{"gpu", e.gpu == kUnknownU32 ? json(nullptr) : json(e.gpu)},
          {"gpu_uuid", e.gpu_uuid},
          {"kind", HealthEventKindName(e.kind)},
          {"value", e.value},
          {"gpu_instance_id",
           e.gpu_instance_id == kUnknownU32 ? json(nullptr) : json(e.gpu_instance_id)},
          {"action", HealthActionName(v.action)},
          {"replacement_candidate", v.replacement_candidate},
          {"reason", v.reason}};
}

int Usage() {
  std::cerr << "usage: gpupool-nvml-discover [--library PATH] [--wait-ms N]\n";
  return 2;
}

int Main(int argc, char** argv) {
  NvmlProbeOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--library" && i + 1 < argc) {
      options.library_path = argv[++i];
    } else if (arg == "--wait-ms" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long ms = std::strtoul(argv[++i], &end, 10);
      if (end == nullptr || *end != '\0' || ms > 600000) return Usage();
      options.event_wait_ms = static_cast<uint32_t>(ms);
    } else {
      return Usage();
    }
  }
  NvmlProbe probe(std::move(options));
  json out = {{"library", probe.library_path()}};
  auto gpus = probe.Discover();
  if (!gpus.ok()) {
    out["error"] = gpus.error().message;
    std::cout << out.dump(2) << "\n";
    return 1;
  }
  out["gpus"] = json::array();
  for (const GpuInfo& g : *gpus) out["gpus"].push_back(ToJson(g));
  auto health = probe.PollHealth();
  if (health.ok()) {
    out["health"] = json::array();
    for (const HealthEvent& e : *health) out["health"].push_back(ToJson(e));
  } else {
    out["health_error"] = health.error().message;
  }
  const SystemInfo system = probe.System();
  out["system"] = {{"driver_version", system.driver_version}, {"cuda_version", system.cuda_version}};
  out["notes"] = probe.notes();
  std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace gpupool

int main(int argc, char** argv) { return gpupool::Main(argc, argv); }
