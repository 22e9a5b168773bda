// NvmlProbe::PollHealth: XID events from the event set, then per-GPU levels (ECC, row
// remapping, temperature) turned into edge events (nvml_probe.h).
#include "agent/nvml_probe.h"

namespace gpupool {

using namespace nvml;  // NOLINT: the NVML names read best unqualified in this file

namespace {
// Bounds one poll: a storm of events must not stall the agent loop.
constexpr int kMaxEventsPerPoll = 1024;
}  // namespace

Result<std::vector<HealthEvent>> NvmlProbe::PollHealth() {
  GP_RETURN_IF_ERROR(EnsureOpen());
  poll_notes_.clear();
  std::vector<HealthEvent> out;
  PollXids(out);
  for (uint32_t i = 0; i < devices_.size(); ++i) PollLevels(i, out);
  return out;
}

void NvmlProbe::PollXids(std::vector<HealthEvent>& out) {
  if (event_set_ == nullptr) return;
  const NvmlApi& api = lib_->api();
  for (int n = 0; n < kMaxEventsPerPoll; ++n) {
    nvmlEventData_t data{};
    const nvmlReturn_t rc =
        api.event_set_wait(event_set_, &data, n == 0 ? options_.event_wait_ms : 0);
    if (rc == NVML_ERROR_TIMEOUT) return;
    if (rc != NVML_SUCCESS) {
      // GPU_IS_LOST here names no GPU; the per-GPU reads below find which one.
      poll_notes_.push_back(lib_->Describe("nvmlEventSetWait_v2", rc));
      return;
    }
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    HealthEvent e;
    e.gpu = kUnknownU32;
    for (uint32_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].handle != nullptr && devices_[i].handle == data.device) {
        e.gpu = i;
        e.gpu_uuid = devices_[i].uuid;
      }
    }
    e.kind = HealthEventKind::kXid;
    e.value = data.eventData;
    e.gpu_instance_id = data.gpuInstanceId;  // kNotAttributable == kUnknownU32
    out.push_back(std::move(e));
  }
  poll_notes_.push_back("more than " + std::to_string(kMaxEventsPerPoll) +
                        " events in one poll; the rest wait for the next");
}

bool NvmlProbe::ReadTemperature(Device& d, uint32_t& celsius) {
  const NvmlApi& api = lib_->api();
  nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (api.device_get_temperature != nullptr) {
    unsigned int t = 0;
    rc = api.device_get_temperature(d.handle, NVML_TEMPERATURE_GPU, &t);
    if (Check(d, rc)) {
      celsius = t;
      return true;
    }
  }
  // nvmlDeviceGetTemperature is deprecated in NVML 13; its successor takes a versioned struct.
  if (api.device_get_temperature_v != nullptr &&
      (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_DEPRECATED)) {
    nvmlTemperature_v1_t t{};
    t.version = StructVersion<nvmlTemperature_v1_t>(1);
    t.sensorType = NVML_TEMPERATURE_GPU;
    rc = api.device_get_temperature_v(d.handle, &t);
    if (Check(d, rc) && t.temperature >= 0) {
      celsius = static_cast<uint32_t>(t.temperature);
      return true;
    }
  }
  if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_FUNCTION_NOT_FOUND) {
    poll_notes_.push_back("GPU " + d.uuid + ": " + lib_->Describe("temperature", rc));
  }
  return false;
}

void NvmlProbe::PollLevels(uint32_t index, std::vector<HealthEvent>& out) {
  const NvmlApi& api = lib_->api();
  Device& d = devices_[index];
  auto emit = [&](HealthEventKind kind, uint64_t value) {
    out.push_back({index, d.uuid, kind, value, kUnknownU32});
  };
  if (d.handle != nullptr) {
    if (api.device_get_total_ecc_errors != nullptr) {
      unsigned long long count = 0;
      const nvmlReturn_t rc = api.device_get_total_ecc_errors(
          d.handle, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &count);
      if (Check(d, rc)) {
        if (count > d.ecc_seen) emit(HealthEventKind::kEccUncorrectable, count);
        d.ecc_seen = count;  // a reset clears the volatile counter; follow it down too
      }
    }
    if (api.device_get_remapped_rows != nullptr) {
      unsigned int corrected = 0, uncorrected = 0, pending = 0, failure = 0;
      const nvmlReturn_t rc =
          api.device_get_remapped_rows(d.handle, &corrected, &uncorrected, &pending, &failure);
      if (Check(d, rc)) {  // NOT_SUPPORTED (MIG with instances, pre-Ampere): unknown
        if (failure != 0 && !d.remap_failure_seen) emit(HealthEventKind::kRowRemapFailure, 1);
        if (pending != 0 && !d.remap_pending_seen) emit(HealthEventKind::kRowRemapPending, 1);
        d.remap_failure_seen = failure != 0;
        d.remap_pending_seen = pending != 0;
      }
    }
    uint32_t celsius = 0;
    if (ReadTemperature(d, celsius)) emit(HealthEventKind::kTemperature, celsius);
  }
  if (d.lost && !d.lost_reported) {
    d.lost_reported = true;
    emit(HealthEventKind::kGpuLost, 0);
  }
}

}  // namespace gpupool
