#include "cuda_driver.h"

#include <dlfcn.h>

namespace hone::backends::cuda {

bool isSticky(CUresult code)
{
    switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
        return true;
    default:
        return false;
    }
}

Driver::Driver()
{
    // Never dlclose'd: the candidates' runtimes share this driver for the process lifetime.
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        const char* err = ::dlerror();
        m_reason = std::string("no NVIDIA driver: cannot load libcuda.so.1 (")
            + (err ? err : "unknown dlopen error") + ")";
        return;
    }
    // dlsym of the name each declaration in cuda.h expands to (cuMemAlloc -> cuMemAlloc_v2):
    // exactly the ABI this file was compiled against. (cuGetProcAddress would hand out the
    // newest version for CUDA_VERSION, e.g. cuCtxSynchronize_v2(CUcontext) for a declaration of
    // cuCtxSynchronize(void).)
    std::string missing;
#define HONE_CUDA_STR2(x) #x
#define HONE_CUDA_STR(x) HONE_CUDA_STR2(x)
#define HONE_CUDA_RESOLVE(name)                                                                    \
    {                                                                                              \
        void* fn = ::dlsym(lib, HONE_CUDA_STR(name));                                              \
        if (!fn)                                                                                   \
            missing += std::string(missing.empty() ? "" : ", ") + HONE_CUDA_STR(name);             \
        else                                                                                       \
            name = reinterpret_cast<decltype(name)>(fn);                                           \
    }
    HONE_CUDA_DRIVER_FUNCTIONS(HONE_CUDA_RESOLVE)
#undef HONE_CUDA_RESOLVE
#undef HONE_CUDA_STR
#undef HONE_CUDA_STR2
    if (!missing.empty()) {
        m_reason = "the NVIDIA driver lacks " + missing + " (built against CUDA "
            + std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10)
            + "); update the driver";
        return;
    }
    const CUresult init = cuInit(0);
    if (init != CUDA_SUCCESS) {
        m_reason = "cuInit failed: " + describe(init);
        return;
    }
    int count = 0;
    if (cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        m_reason = "the NVIDIA driver is loaded but sees no GPU";
        return;
    }
    m_available = true;
}

std::string Driver::describe(CUresult code) const
{
    const char* name = nullptr;
    const char* text = nullptr;
    if (cuGetErrorName)
        cuGetErrorName(code, &name);
    if (cuGetErrorString)
        cuGetErrorString(code, &text);
    std::string out = name ? name : "CUDA error " + std::to_string(static_cast<int>(code));
    if (text)
        out += std::string(": ") + text;
    return out;
}

void Driver::check(CUresult code, const std::string& what) const
{
    if (code != CUDA_SUCCESS)
        throw DriverError(code, isSticky(code), what + " failed: " + describe(code));
}

} // namespace hone::backends::cuda
