#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hone::app {

/// `hone show [SESSION]`: the sessions of the store, or one session's tree as text. Refuses a
/// store that does not exist (ExitCode::Input) rather than make an empty one.
int cmdShow(const std::string& storePath, std::optional<int64_t> session);

/// `hone export SESSION/NODE DIR`: the node's source, knobs, build script and evidence.
int cmdExport(const std::string& storePath, const std::string& nodeSpec, const std::string& outDir,
    bool allowFailedReverify = false, bool torch = false, bool portfolio = false);

/// `hone export-torch PROBLEM SOURCE DIR [--knob NAME=VALUE]...`: the PyTorch package of a kernel
/// file that no session stored (a hand-written kernel, a documented best configuration).
int cmdExportTorch(const std::string& problemDir, const std::string& sourcePath, const std::string& outDir,
    const std::vector<std::string>& knobArgs);

} // namespace hone::app
