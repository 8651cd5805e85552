#pragma once

#include <cuda.h>

#include <string>

namespace hone::backends::cuda {
class Driver;

/// A kernel that keeps the GPU busy for a set time, queued before the start event of every
/// timed run: while it spins, hone_run's host side (argument checks, heuristic queries, the
/// launches themselves) runs and queues the candidate's work behind it, so the events see GPU
/// time alone, as they do for a caller that keeps the stream fed. It fills every thread slot of
/// every multiprocessor, so a kernel the candidate puts on a stream of its own cannot run under
/// the delay either: it starts when the delay ends, and the device-wide synchronize counts it.
/// Shipped as PTX in the worker (no nvcc needed) and compiled by the driver on first use.
class DelayKernel {
public:
    /// Loads the kernel into the current context; `ok()` and `error()` say whether that worked.
    DelayKernel(Driver& driver, int multiprocessors, int maxThreadsPerMultiprocessor);
    DelayKernel(const DelayKernel&) = delete;
    DelayKernel& operator=(const DelayKernel&) = delete;
    /// Unloads the module; call only while the context is usable.
    void unload();

    bool ok() const { return m_function != nullptr; }
    const std::string& error() const { return m_error; }
    /// Queues a spin of `ns` nanoseconds (by %globaltimer) on `stream`.
    CUresult launch(CUstream stream, unsigned long long ns) const;

private:
    Driver& m_driver;
    CUmodule m_module = nullptr;
    CUfunction m_function = nullptr;
    unsigned m_blocks = 0;
    unsigned m_threads = 0;
    std::string m_error;
};

} // namespace hone::backends::cuda
