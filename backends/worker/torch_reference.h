#pragma once

#include "device_backend.h"

#include <nlohmann/json.hpp>

#include <string>
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
    /// Nothing starts until the first call: cached reference outputs need no Python.
    TorchKernel(std::string source, std::string name, double callSeconds);
    ~TorchKernel() override;
    TorchKernel(const TorchKernel&) = delete;
    TorchKernel& operator=(const TorchKernel&) = delete;

    /// Host buffers only (the CPU's or a runner's shared memory). Throws std::runtime_error
    /// with the module's own error, RunnerDied when the process ended.
    int run(const hone_args& args) override;
    /// As run(); the nanoseconds the module's run() took, by the Python process's clock.
    double timedRun(const hone_args& args, int& rc);

private:
    void start();
    std::string readLine(double seconds);
    void send(const std::string& line);

    std::string m_source;
    std::string m_name;
    double m_callSeconds;
    std::string m_dir;
    pid_t m_pid = -1;
    int m_in = -1;  // the process's stdin
    int m_out = -1; // its protocol lines
    std::string m_buffered;
    double m_lastNs = 0;
};

} // namespace hone::backends
