#pragma once

#include "device_backend.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>
#include <sys/types.h>

/// A problem's PyTorch reference (reference.py): a Python process on this host, inside the
/// same bubblewrap sandbox as runners (no network, no home, no store or cache), that receives
/// the judge's inputs as files in a private folder and writes its outputs beside them.
namespace hone::backends {

/// Whether this host can run PyTorch references: {"available", "version", "python"} or
/// {"available": false, "reason", "python"}. Probed once per process (it imports torch).
const nlohmann::json& torchInfo();

/// The interpreter references run with: $HONE_PYTHON, else /usr/bin/python3, else python3 on PATH.
std::string torchPython();

/// Content key of a PyTorch reference for the reference-output cache ("torch-<sha256>").
std::string torchReferenceKey(const std::string& source);

class TorchKernel final : public LoadedKernel {
public:
    /// Nothing starts until the first call: cached reference outputs need no Python. `onGpu`:
    /// a baseline on a CUDA target, which sees the GPU (/dev/nvidia*) in its sandbox and is
    /// timed there by stage() and timeOnGpu(), never through run().
    TorchKernel(std::string source, std::string name, double callSeconds, bool onGpu = false);
    ~TorchKernel() override;
    TorchKernel(const TorchKernel&) = delete;
    TorchKernel& operator=(const TorchKernel&) = delete;

    /// Host buffers only (the CPU's or a runner's shared memory). Throws std::runtime_error
    /// with the module's own error, RunnerDied when the process ended.
    int run(const hone_args& args) override;
    /// As run(); the nanoseconds the module's run() took, by the Python process's clock.
    double timedRun(const hone_args& args, int& rc);

    bool onGpu() const { return m_onGpu; }
    /// GPU only: copies the inputs of `hostArgs` (host buffers) to the GPU as input set `set`,
    /// runs the module once (its outputs land in `hostArgs`' outputs), warms it up and sizes
    /// the pre-start delay from one call's host time. Returns {device, host_launch_ns, delay_ns}.
    nlohmann::json stage(int set, const hone_args& hostArgs);
    /// GPU only: `samples` samples of the module on staged set `set`, each timed as the worker
    /// times candidates (L2 flush, delay, CUDA events, device-wide synchronize), in ns.
    /// `covered` counts those whose launch was all queued before the start event passed.
    std::vector<double> timeOnGpu(int set, int samples, int& covered);

private:
    void start();
    /// One request with `args`' inputs as files; the reply, its outputs read into `args`.
    nlohmann::json exchange(nlohmann::json req, const hone_args& args);
    std::string readLine(double seconds);
    void send(const std::string& line);

    std::string m_source;
    std::string m_name;
    double m_callSeconds;
    bool m_onGpu;
    std::string m_dir;
    pid_t m_pid = -1;
    int m_in = -1;  // the process's stdin
    int m_out = -1; // its protocol lines
    std::string m_buffered;
    double m_lastNs = 0;
};

} // namespace hone::backends
