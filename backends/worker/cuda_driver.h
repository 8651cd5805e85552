#pragma once

#include <cuda.h>

#include <stdexcept>
#include <string>

/// The CUDA driver API, loaded at run time with dlopen so that one hone-worker binary runs on
/// hosts with and without a GPU and says which it is. Types come from the toolkit's cuda.h at
/// build time; every entry point is resolved through cuGetProcAddress for the header's
/// CUDA_VERSION, so the ABI of each call matches the declaration it was compiled against.
namespace hone::backends::cuda {

#define HONE_CUDA_DRIVER_FUNCTIONS(X)                                                              \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuGetErrorName)                                                                              \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGetName)                                                                             \
    X(cuDeviceGetAttribute)                                                                        \
    X(cuDeviceTotalMem)                                                                            \
    X(cuDeviceGetUuid)                                                                             \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease)                                                                   \
    X(cuDevicePrimaryCtxSetFlags)                                                                  \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxSynchronize)                                                                            \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemGetInfo)                                                                                \
    X(cuMemcpyHtoD)                                                                                \
    X(cuMemcpyDtoH)                                                                                \
    X(cuMemsetD8)                                                                                  \
    X(cuMemsetD32Async)                                                                            \
    X(cuMemsetD16Async)                                                                            \
    X(cuMemsetD8Async)                                                                             \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamBeginCapture)                                                                        \
    X(cuStreamEndCapture)                                                                          \
    X(cuGraphGetNodes)                                                                             \
    X(cuGraphNodeGetType)                                                                          \
    X(cuGraphKernelNodeGetParams)                                                                  \
    X(cuGraphDestroy)                                                                              \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuEventRecord)                                                                               \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime)                                                                          \
    X(cuEventQuery)                                                                                \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleUnload)                                                                              \
    X(cuModuleGetFunction)                                                                         \
    X(cuLaunchKernel)                                                                              \
    X(cuFuncGetAttribute)                                                                          \
    X(cuFuncGetName)                                                                               \
    X(cuKernelGetFunction)                                                                         \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                                \
    X(cuMemCreate)                                                                                 \
    X(cuMemRelease)                                                                                \
    X(cuMemAddressReserve)                                                                         \
    X(cuMemAddressFree)                                                                            \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemSetAccess)                                                                              \
    X(cuMemGetAllocationGranularity)                                                               \
    X(cuMemExportToShareableHandle)                                                                \
    X(cuMemImportFromShareableHandle)

/// A driver call failed; `code` is the CUresult. `sticky` errors (illegal address, trap,
/// launch failure...) leave the context unusable: the worker must exit after reporting.
class DriverError : public std::runtime_error {
public:
    DriverError(CUresult code, bool sticky, const std::string& message)
        : std::runtime_error(message)
        , m_code(code)
        , m_sticky(sticky)
    {
    }
    CUresult code() const { return m_code; }
    bool sticky() const { return m_sticky; }

private:
    CUresult m_code;
    bool m_sticky;
};

/// One per process (the CUDA backend owns it): libcuda's state is process-wide anyway.
class Driver {
public:
    /// Loads libcuda.so.1 and resolves the entry points. Never throws: `available()` and
    /// `unavailableReason()` say what happened.
    Driver();
    Driver(const Driver&) = delete;
    Driver& operator=(const Driver&) = delete;

    bool available() const { return m_available; }
    const std::string& unavailableReason() const { return m_reason; }

    /// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
    std::string describe(CUresult code) const;
    /// Throws DriverError for anything but CUDA_SUCCESS, naming `what`.
    void check(CUresult code, const std::string& what) const;

#define HONE_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
    HONE_CUDA_DRIVER_FUNCTIONS(HONE_CUDA_DECLARE)
#undef HONE_CUDA_DECLARE

private:
    bool m_available = false;
    std::string m_reason;
};

/// Errors after which the context cannot be used again (CUDA documents these as sticky).
bool isSticky(CUresult code);

} // namespace hone::backends::cuda
