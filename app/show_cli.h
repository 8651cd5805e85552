#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace hone::app {

/// `hone show [SESSION]`: the sessions of the store, or one session's tree as text. Refuses a
/// store that does not exist (ExitCode::Input) rather than make an empty one.
int cmdShow(const std::string& storePath, std::optional<int64_t> session);

/// `hone export SESSION/NODE DIR`: the node's source, knobs, build script and evidence.
int cmdExport(const std::string& storePath, const std::string& nodeSpec, const std::string& outDir,
    bool allowFailedReverify = false, bool torch = false);

} // namespace hone::app
