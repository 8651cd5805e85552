#include "cuda_delay.h"

#include "cuda_driver.h"

#include <algorithm>

namespace hone::backends::cuda {
namespace {

// Every thread reads %globaltimer (nanoseconds, the same clock on every SM) until `ns` have
// passed; nanosleep between reads keeps the spin from drawing power the candidate would then
// lack. PTX 7.0 for sm_70: any driver that runs Hopper JIT-compiles it.
const char* const kDelayPtx = R"ptx(
.version 7.0
.target sm_70
.address_size 64

.visible .entry hone_delay(
    .param .u64 hone_delay_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [hone_delay_ns];
    mov.u64 %rd2, %globaltimer;
$L_spin:
    nanosleep.u32 256;
    mov.u64 %rd3, %globaltimer;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
)ptx";

} // namespace

DelayKernel::DelayKernel(Driver& driver, int multiprocessors, int maxThreadsPerMultiprocessor)
    : m_driver(driver)
{
    // Two blocks of half the SM's thread limit each: with both resident on every SM no other
    // block fits anywhere until the delay ends.
    m_threads = static_cast<unsigned>(std::clamp(maxThreadsPerMultiprocessor / 2, 32, 1024));
    m_blocks = static_cast<unsigned>(std::max(1, multiprocessors) * 2);
    CUresult r = driver.cuModuleLoadData(&m_module, kDelayPtx);
    if (r != CUDA_SUCCESS) {
        m_error = "cuModuleLoadData (the delay kernel's PTX): " + driver.describe(r);
        m_module = nullptr;
        return;
    }
    r = driver.cuModuleGetFunction(&m_function, m_module, "hone_delay");
    if (r != CUDA_SUCCESS) {
        m_error = "cuModuleGetFunction (hone_delay): " + driver.describe(r);
        m_function = nullptr;
    }
}

void DelayKernel::unload()
{
    if (m_module)
        m_driver.cuModuleUnload(m_module);
    m_module = nullptr;
    m_function = nullptr;
}

CUresult DelayKernel::launch(CUstream stream, unsigned long long ns) const
{
    void* params[] = { &ns };
    return m_driver.cuLaunchKernel(m_function, m_blocks, 1, 1, m_threads, 1, 1, 0, stream, params, nullptr);
}

} // namespace hone::backends::cuda
