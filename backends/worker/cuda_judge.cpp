// The judge's device-side checks of timed calls (DeviceBackend::poisonOnDevice and friends):
// resources/calibration/cuda_judge.cu, compiled like the calibration kernels and called in the
// judge's own context on the buffers it allocated.
#include "cuda_backend.h"

#include "cuda_driver.h"
#include "core/dtype.h"
#include "hone_embedded.h"
#include "tensors.h"

#include <dlfcn.h>

#include <cstring>

namespace hone::backends {

std::string CudaBackend::prepareDeviceChecks()
{
    if (m_judgeTried)
        return m_judgeError;
    m_judgeTried = true;
    if (const char* off = std::getenv("HONE_HOST_CHECKS"); off && *off && std::strcmp(off, "0") != 0) {
        m_judgeError = "HONE_HOST_CHECKS is set";
        return m_judgeError;
    }
    try {
        void* handle = loadOwnObject("cuda_judge.cu", embedded::kCudaJudgeSource, {}, "the judge kernels");
        Judge j;
        j.handle = handle;
        j.mismatches = reinterpret_cast<decltype(j.mismatches)>(::dlsym(handle, "hone_judge_mismatches"));
        j.checksum = reinterpret_cast<decltype(j.checksum)>(::dlsym(handle, "hone_judge_checksum"));
        j.fill64 = reinterpret_cast<decltype(j.fill64)>(::dlsym(handle, "hone_judge_fill64"));
        if (!j.mismatches || !j.checksum || !j.fill64) {
            ::dlclose(handle);
            throw std::runtime_error("the judge object lacks an entry point");
        }
        m_judge = j;
    } catch (const std::exception& e) {
        m_judgeError = e.what();
    }
    return m_judgeError;
}

bool CudaBackend::poisonOnDevice(void* device, hone_dtype dtype, size_t numel)
{
    if (!m_judge.handle)
        return false;
    ensureContext();
    cuda::Driver& d = *m_driver;
    const auto p = reinterpret_cast<CUdeviceptr>(device);
    switch (dtype) {
    case HONE_F32:
        check(d.cuMemsetD32Async(p, kPoisonF32, numel, m_stream), "cuMemsetD32Async (poison)");
        break;
    case HONE_F16:
    case HONE_BF16:
        check(d.cuMemsetD16Async(p, dtype == HONE_F16 ? kPoisonF16 : kPoisonBF16, numel, m_stream),
            "cuMemsetD16Async (poison)");
        break;
    case HONE_I32:
    case HONE_I64:
    case HONE_U8:
        check(d.cuMemsetD8Async(p, kPoisonByte, numel * core::dtypeSize(dtype), m_stream), "cuMemsetD8Async (poison)");
        break;
    case HONE_F64:
        if (const int rc = m_judge.fill64(m_stream, device, numel, kPoisonF64); rc != 0)
            throw std::runtime_error("the judge's poison fill failed (cudaError " + std::to_string(rc) + ")");
        return true;
    default:
        return false;
    }
    // Finished before the runner is told to start: it runs in another context.
    check(d.cuStreamSynchronize(m_stream), "cuStreamSynchronize (poison)");
    return true;
}

std::optional<uint64_t> CudaBackend::mismatchesOnDevice(
    const void* got, const void* want, hone_dtype dtype, size_t numel, double atol, double rtol)
{
    if (!m_judge.handle)
        return std::nullopt;
    ensureContext();
    unsigned long long n = 0;
    if (const int rc = m_judge.mismatches(m_stream, got, want, numel, static_cast<int>(dtype), atol, rtol, &n);
        rc != 0)
        throw std::runtime_error("the judge's comparison failed (cudaError " + std::to_string(rc) + ")");
    return n;
}

std::optional<uint64_t> CudaBackend::checksumOnDevice(const void* device, size_t bytes, uint64_t key)
{
    if (!m_judge.handle)
        return std::nullopt;
    ensureContext();
    unsigned long long sum = 0;
    if (const int rc = m_judge.checksum(m_stream, device, bytes, key, &sum); rc != 0)
        throw std::runtime_error("the judge's checksum failed (cudaError " + std::to_string(rc) + ")");
    return sum;
}

} // namespace hone::backends
