#pragma once

#include "backends/targets.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::backends {

/// `hone targets deploy` (docs/REMOTE.md): build a hone-worker on a target's host from this
/// source tree, check it, install it.
struct DeployOptions {
    std::filesystem::path sourceDir; // empty: the tree this hone was built from
    std::string prefix; // on the target; empty: ~/.local/hone; "~/" is the remote home
    std::string buildWith = "auto"; // auto (cmake >= 3.25, else c++), cmake, c++
    std::function<void(const std::string&)> log; // one line per step, as it happens
};

struct DeployResult {
    std::string workerPath; // the installed worker, absolute on the target
    std::string method; // "cmake" or "c++"
    nlohmann::json hello; // the installed worker's hello
    double seconds = 0;
};

/// A failed deploy step: says which step, the command it ran, the tail of its output and the fix.
class DeployError : public std::runtime_error {
public:
    DeployError(const std::string& target, const std::string& step, const std::string& command,
        const std::string& outputTail, const std::string& fix);
    std::string step;
    bool unreachable = false; ///< ssh or srun could not reach the target at all
};

/// Copies the worker's sources to the target as a tar stream (ssh: over the same connection
/// options; Slurm: into the prefix, which must be on a filesystem the nodes share), builds them
/// there (ssh: on the host; Slurm: in an `srun` step on the partition), checks the build with a
/// hello (a protocol mismatch names both versions and installs nothing) and installs it as
/// PREFIX/bin/hone-worker. Throws DeployError.
DeployResult deployWorker(const TargetSpec& target, const DeployOptions& options);

/// The files the worker-only build needs, relative to `sourceDir`: the CMake files of the
/// worker build, the sources of hone-worker and hone_proto as those CMake files list them, the
/// headers they include and the embedded resources. Throws DeployError when one is missing.
std::vector<std::string> workerSourceFiles(const std::filesystem::path& sourceDir);

/// The source tree whose resources/ this hone finds (core::resourceDirs; a build tree links
/// share/hone to it), when it holds the worker's sources; else empty (an install: pass --from).
std::filesystem::path defaultWorkerSourceDir();

} // namespace hone::backends
