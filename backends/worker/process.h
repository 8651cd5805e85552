#pragma once

#include <string>
#include <vector>

/// Running a helper program (the compiler) with a time limit, its output captured.
namespace hone::backends {

struct ProcessResult {
    bool started = false; // false: the program could not be run at all (see `error`)
    bool timedOut = false; // killed, with its whole process group, at the time limit
    int exitCode = -1; // when it exited normally
    int signal = 0; // when a signal ended it
    double seconds = 0;
    std::string output; // stdout and stderr interleaved, truncated at the cap
    std::string error;
};

/// Full path of `program` (searched on PATH unless it contains a '/'), or "" when not found.
std::string findExecutable(const std::string& program);

/// Runs `argv` (argv[0] resolved with findExecutable) in `workDir` with stdin from /dev/null,
/// in its own process group so that a timeout also kills the compiler's children.
ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& workDir,
    double timeLimitSeconds, size_t maxOutputBytes = 1 << 20);

} // namespace hone::backends
