#include "hip_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace hone::backends::hip {

bool isSticky(hipError_t code)
{
    switch (code) {
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorAssert:
    case hipErrorContextIsDestroyed:
    case hipErrorIllegalState:
        return true;
    default:
        return false;
    }
}

namespace {

std::string platformSetting()
{
    const char* p = std::getenv("HONE_HIP_PLATFORM");
    return p ? p : "";
}

/// libhone-hip-nvidia.so: $HONE_HIP_NVIDIA_RUNTIME, else next to the worker or in its ../lib.
std::vector<std::string> nvidiaRuntimeCandidates()
{
    if (const char* env = std::getenv("HONE_HIP_NVIDIA_RUNTIME"); env && *env)
        return { env };
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        return { "libhone-hip-nvidia.so" };
    return { (exe.parent_path() / "libhone-hip-nvidia.so").string(),
        (exe.parent_path().parent_path() / "lib" / "libhone-hip-nvidia.so").string() };
}

} // namespace

bool nvidiaPlatform()
{
    return platformSetting() == "nvidia";
}

std::string platformError()
{
    const std::string p = platformSetting();
    if (p.empty() || p == "amd" || p == "nvidia")
        return {};
    return "HONE_HIP_PLATFORM='" + p + "' is not a HIP platform; expected amd (the default) or nvidia";
}

Runtime::Runtime()
{
    if (const std::string bad = platformError(); !bad.empty()) {
        m_reason = bad;
        return;
    }
    const bool nvidia = nvidiaPlatform();
    // The candidates link libamdhip64 themselves: loading it here first (RTLD_GLOBAL) makes them
    // share this runtime's state, matched by its soname. Never dlclose'd. On the NVIDIA platform
    // the candidates use the CUDA runtime in the device's primary context, as the library does.
    void* lib = nullptr;
    std::string errors;
    const std::vector<std::string> names = nvidia
        ? nvidiaRuntimeCandidates()
        : std::vector<std::string> { "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5" };
    for (const std::string& name : names) {
        lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (lib)
            break;
        const char* err = ::dlerror();
        errors += std::string(errors.empty() ? "" : "; ") + (err ? err : name);
    }
    if (!lib) {
        m_reason = nvidia ? "HIP on NVIDIA: cannot load libhone-hip-nvidia.so (" + errors
                + "; set HONE_HIP_NVIDIA_RUNTIME, or build the worker where CUDA and HIP headers are both found)"
                          : "no ROCm runtime: cannot load libamdhip64.so (" + errors + ")";
        return;
    }
    std::string missing;
#define HONE_HIP_STR2(x) #x
#define HONE_HIP_STR(x) HONE_HIP_STR2(x)
#define HONE_HIP_RESOLVE(name, ret, args)                                                             \
    {                                                                                              \
        void* fn = ::dlsym(lib, HONE_HIP_STR(name));                                               \
        if (!fn)                                                                                   \
            missing += std::string(missing.empty() ? "" : ", ") + HONE_HIP_STR(name);              \
        else                                                                                       \
            name = reinterpret_cast<ret(*) args>(fn);                                               \
    }
    HONE_HIP_FUNCTIONS(HONE_HIP_RESOLVE)
#undef HONE_HIP_RESOLVE
#undef HONE_HIP_STR
#undef HONE_HIP_STR2
    if (!missing.empty()) {
        m_reason = "the ROCm runtime lacks " + missing + " (built against HIP " + std::to_string(HIP_VERSION_MAJOR)
            + "." + std::to_string(HIP_VERSION_MINOR) + "); install a matching ROCm";
        return;
    }
    (void)hipRuntimeGetVersion(&m_version);
    const hipError_t init = hipInit(0);
    const hipError_t count = hipGetDeviceCount(&m_devices);
    if (count != hipSuccess || m_devices <= 0) {
        m_devices = 0;
        const hipError_t why = count != hipSuccess ? count : init;
        if (nvidia) {
            m_reason = "HIP on NVIDIA: no NVIDIA GPU ("
                + (why != hipSuccess ? describe(why) : std::string("0 devices")) + ")";
            return;
        }
        m_reason = "no AMD GPU: the ROCm runtime (HIP " + std::to_string(m_version / 10000000) + "."
            + std::to_string(m_version / 100000 % 100) + ") finds no device ("
            + (why != hipSuccess ? describe(why) : std::string("0 devices"))
            + "; is /dev/kfd present and readable, and HIP_VISIBLE_DEVICES right?)";
        return;
    }
    m_available = true;
}

std::string Runtime::describe(hipError_t code) const
{
    const char* name = hipGetErrorName ? hipGetErrorName(code) : nullptr;
    const char* text = hipGetErrorString ? hipGetErrorString(code) : nullptr;
    std::string out = name ? name : "hipError " + std::to_string(static_cast<int>(code));
    if (text && std::string(text) != out)
        out += std::string(": ") + text;
    return out;
}

} // namespace hone::backends::hip
