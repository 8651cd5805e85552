#pragma once

#include <string>
#include <vector>

namespace hone::backends {

/// What runCommand saw.
struct CommandResult {
    int code = -1; // exit code; -1 when killed or not started
    bool timedOut = false;
    std::string output; // stdout and stderr, interleaved as they came
};

/// Runs `argv` (searched on PATH) with no input, in its own process group, for at most
/// `timeoutSeconds`; then the whole group is killed. The output keeps its last 1-4 MiB.
CommandResult runCommand(const std::vector<std::string>& argv, double timeoutSeconds);

} // namespace hone::backends
