#pragma once

#include <hip/hip_runtime_api.h>

#include <string>

/// The HIP runtime (libamdhip64), loaded at run time with dlopen like libcuda (cuda_driver.h):
/// one hone-worker binary runs on hosts with and without an AMD GPU and says which it is.
/// Types and enum values come from ROCm's hip_runtime_api.h at build time; the symbol of each
/// entry point is the name the header's declaration expands to (hipGetDeviceProperties is
/// hipGetDevicePropertiesR0600 on ROCm 6), so the ABI matches what this file was built with.
namespace hone::backends::hip {

#define HONE_HIP_FUNCTIONS(X)                                                                      \
    X(hipInit, hipError_t, (unsigned))                                                           \
    X(hipRuntimeGetVersion, hipError_t, (int*))                                                  \
    X(hipDriverGetVersion, hipError_t, (int*))                                                   \
    X(hipGetErrorName, const char*, (hipError_t))                                                \
    X(hipGetErrorString, const char*, (hipError_t))                                              \
    X(hipGetLastError, hipError_t, ())                                                           \
    X(hipGetDeviceCount, hipError_t, (int*))                                                     \
    X(hipSetDevice, hipError_t, (int))                                                           \
    X(hipGetDeviceProperties, hipError_t, (hipDeviceProp_t*, int))                               \
    X(hipDeviceGetAttribute, hipError_t, (int*, hipDeviceAttribute_t, int))                      \
    X(hipDeviceSynchronize, hipError_t, ())                                                      \
    X(hipMalloc, hipError_t, (void**, size_t))                                                   \
    X(hipFree, hipError_t, (void*))                                                              \
    X(hipMemcpy, hipError_t, (void*, const void*, size_t, hipMemcpyKind))                        \
    X(hipMemsetD32Async, hipError_t, (hipDeviceptr_t, int, size_t, hipStream_t))                 \
    X(hipStreamCreateWithFlags, hipError_t, (hipStream_t*, unsigned))                            \
    X(hipStreamDestroy, hipError_t, (hipStream_t))                                               \
    X(hipStreamBeginCapture, hipError_t, (hipStream_t, hipStreamCaptureMode))                    \
    X(hipStreamEndCapture, hipError_t, (hipStream_t, hipGraph_t*))                               \
    X(hipGraphGetNodes, hipError_t, (hipGraph_t, hipGraphNode_t*, size_t*))                      \
    X(hipGraphNodeGetType, hipError_t, (hipGraphNode_t, hipGraphNodeType*))                      \
    X(hipGraphKernelNodeGetParams, hipError_t, (hipGraphNode_t, hipKernelNodeParams*))           \
    X(hipGraphDestroy, hipError_t, (hipGraph_t))                                                 \
    X(hipFuncGetAttributes, hipError_t, (hipFuncAttributes*, const void*))                       \
    X(hipOccupancyMaxActiveBlocksPerMultiprocessor, hipError_t, (int*, const void*, int, size_t)) \
    X(hipEventCreate, hipError_t, (hipEvent_t*))                                                 \
    X(hipEventDestroy, hipError_t, (hipEvent_t))                                                 \
    X(hipEventRecord, hipError_t, (hipEvent_t, hipStream_t))                                     \
    X(hipEventSynchronize, hipError_t, (hipEvent_t))                                             \
    X(hipEventQuery, hipError_t, (hipEvent_t))                                                   \
    X(hipEventElapsedTime, hipError_t, (float*, hipEvent_t, hipEvent_t))

/// True when HONE_HIP_PLATFORM=nvidia: HIP on the NVIDIA platform, a test bench for the run
/// path on an NVIDIA GPU (docs/HIP.md): candidates are nvcc-built against HIP's NVIDIA platform
/// headers and the entry points below come from libhone-hip-nvidia.so (hip_nvidia_runtime.cpp,
/// over the CUDA driver) instead of libamdhip64. Any other value but "amd" or "" is refused.
bool nvidiaPlatform();
/// "" when HONE_HIP_PLATFORM is unset, "amd" or "nvidia"; else why it is not understood.
std::string platformError();

/// One per process (the HIP backend owns it). Never throws: available() and
/// unavailableReason() say what happened; `deviceCount` is 0 on a host without AMD GPUs.
class Runtime {
public:
    Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    bool available() const { return m_available; }
    const std::string& unavailableReason() const { return m_reason; }
    int deviceCount() const { return m_devices; }
    int runtimeVersion() const { return m_version; }

    /// "hipErrorIllegalAddress: an illegal memory access was encountered".
    std::string describe(hipError_t code) const;

#define HONE_HIP_DECLARE(name, ret, args) ret(*name) args = nullptr;
    HONE_HIP_FUNCTIONS(HONE_HIP_DECLARE)
#undef HONE_HIP_DECLARE

private:
    bool m_available = false;
    std::string m_reason;
    int m_devices = 0;
    int m_version = 0;
};

/// Errors after which the device state cannot be trusted: the worker reports and exits.
bool isSticky(hipError_t code);

} // namespace hone::backends::hip
