// Our own minimal declarations of the NVML C ABI: only the types, constants and function
// signatures the node agent calls, written from shared/reference/gpu-partitioning.md §3 (which
// transcribes NVIDIA's nvml.h 13.3.29 as vendored at NVIDIA/go-nvml gen/nvml/nvml.h). We do not
// include or vendor nvml.h; libnvidia-ml.so.1 is opened with dlopen (nvml_library.h).
//
// Rules (reference §3.5): field order and C types are ABI and must match nvml.h exactly. C enums
// are int-sized, so enum-typed parameters are declared as int. The static_asserts below pin the
// sizes implied by the reference's layouts on LP64 (x86_64, aarch64).
//
// The functions declared here read state, except six that create and destroy MIG GPU and
// compute instances (marked "MIG write" below), which only NvmlProbe::ApplyMigLayout calls, and
// only when the agent runs with --allow-mig-changes. Nothing that changes MIG mode or resets a
// GPU is declared, so the agent cannot call one by accident.
#pragma once

#include <cstddef>

namespace gpupool::nvml {

// Opaque handles (reference §3.3).
struct nvmlDevice_st;
struct nvmlGpuInstance_st;
struct nvmlComputeInstance_st;
struct nvmlEventSet_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlGpuInstance_t = nvmlGpuInstance_st*;
using nvmlComputeInstance_t = nvmlComputeInstance_st*;
using nvmlEventSet_t = nvmlEventSet_st*;

using nvmlReturn_t = int;  // enum nvmlReturn_t
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_IN_USE = 19;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_RESOURCES = 23;
inline constexpr nvmlReturn_t NVML_ERROR_DEPRECATED = 26;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

inline constexpr int NVML_FEATURE_DISABLED = 0;  // nvmlEnableState_t
inline constexpr int NVML_FEATURE_ENABLED = 1;
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 36;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12;
// CI profile enum values 0..8 (reference §1.3, §3.6); CI profile IDs equal the enum.
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0;

inline constexpr int NVML_TEMPERATURE_GPU = 0;                // nvmlTemperatureSensors_t
inline constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;  // nvmlMemoryErrorType_t
inline constexpr int NVML_VOLATILE_ECC = 0;                   // nvmlEccCounterType_t
inline constexpr int NVML_AGGREGATE_ECC = 1;

inline constexpr int NVML_NVLINK_DEVICE_TYPE_GPU = 0;  // nvmlIntNvLinkDeviceType_t
inline constexpr int NVML_NVLINK_DEVICE_TYPE_IBMNPU = 1;
inline constexpr int NVML_NVLINK_DEVICE_TYPE_SWITCH = 2;
inline constexpr int NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF;

inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
// nvmlEventData_t.gpuInstanceId / computeInstanceId when the event is not attributable.
inline constexpr unsigned int kNotAttributable = 0xFFFFFFFFu;

// Struct layouts (reference §3.5).
struct nvmlMemory_t {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // device ID << 16 | vendor ID, e.g. 0x233010DE
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid for nvmlEventTypeXidCriticalError (999: unknown)
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlGpuInstancePlacement_t {
  unsigned int start;  // first memory slice
  unsigned int size;   // memory slices
};

struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

// The unversioned (v1) profile info of nvmlDeviceGetGpuInstanceProfileInfo.
struct nvmlGpuInstanceProfileInfo_t {
  unsigned int id;  // GI profile ID (e.g. 19), not the enum passed in
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};

// The unversioned (v1) CI profile info of nvmlGpuInstanceGetComputeInstanceProfileInfo.
struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id;  // CI profile ID
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};

struct nvmlTemperature_v1_t {
  unsigned int version;  // NVML_STRUCT_VERSION(Temperature, 1)
  int sensorType;
  int temperature;
};

// NVML_STRUCT_VERSION(data, ver): sizeof the _v<ver>_t struct | ver << 24 (reference §3.2).
template <class T>
constexpr unsigned int StructVersion(unsigned int ver) {
  return static_cast<unsigned int>(sizeof(T)) | (ver << 24);
}

static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, gpuInstanceId) == 24);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24 &&
              offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48 &&
              offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlTemperature_v1_t) == 12);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);

// Function signatures (reference §3.4), as pointer types for dlsym.
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using DeviceGetCountFn = nvmlReturn_t (*)(unsigned int*);
using SystemGetStringFn = nvmlReturn_t (*)(char*, unsigned int);  // DriverVersion
using SystemGetIntFn = nvmlReturn_t (*)(int*);                    // CudaDriverVersion: 12040 = 12.4
using DeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using DeviceGetStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);  // Name, UUID
using DeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using DeviceGetPciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*);
using DeviceGetMigModeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
// nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetGpuInstanceId.
using DeviceGetUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using DeviceGetMigDeviceHandleByIndexFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                           nvmlDevice_t*);
using DeviceGetGpuInstanceProfileInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                           nvmlGpuInstanceProfileInfo_t*);
using DeviceGetGpuInstancesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*,
                                                 unsigned int*);
using GpuInstanceGetInfoFn = nvmlReturn_t (*)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*);
using DeviceGetNvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
using DeviceGetNvLinkRemotePciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, nvmlPciInfo_t*);
using DeviceGetNvLinkRemoteDeviceTypeFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
using DeviceGetTemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using DeviceGetTemperatureVFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperature_v1_t*);
using DeviceGetTotalEccErrorsFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using DeviceGetRemappedRowsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                                 unsigned int*, unsigned int*);
using EventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using DeviceGetSupportedEventTypesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using EventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using EventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);
// MIG write (NvmlProbe::ApplyMigLayout only).
using DeviceCreateGpuInstanceWithPlacementFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int,
                                                                const nvmlGpuInstancePlacement_t*,
                                                                nvmlGpuInstance_t*);
using GpuInstanceDestroyFn = nvmlReturn_t (*)(nvmlGpuInstance_t);
using GpuInstanceGetComputeInstanceProfileInfoFn = nvmlReturn_t (*)(
    nvmlGpuInstance_t, unsigned int, unsigned int, nvmlComputeInstanceProfileInfo_t*);
using GpuInstanceCreateComputeInstanceFn = nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int,
                                                            nvmlComputeInstance_t*);
using GpuInstanceGetComputeInstancesFn = nvmlReturn_t (*)(nvmlGpuInstance_t, unsigned int,
                                                          nvmlComputeInstance_t*, unsigned int*);
using ComputeInstanceDestroyFn = nvmlReturn_t (*)(nvmlComputeInstance_t);

}  // namespace gpupool::nvml
