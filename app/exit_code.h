#pragma once

#include <stdexcept>
#include <string>

namespace hone::app {

/// The exit status of `hone`, one meaning per number (docs/CLI.md, `hone --help`, man hone).
/// Scripts may rely on these; add a code rather than reuse one.
enum class ExitCode : int {
    Ok = 0, ///< done (run, resume, bench: a candidate passed)
    Failed = 1, ///< the work ran and the answer is no: no candidate passed, the candidate failed
    Usage = 2, ///< the command line is wrong: unknown command or option, bad value, missing argument
    Input = 3, ///< an input is missing or invalid: problem, store, session, candidate or other file
    Environment = 4, ///< something Hone needs is unavailable: worker, compiler, device, target, LLM endpoint
    Interrupted = 5, ///< stopped by Ctrl-C or SIGTERM; the report of the work done so far is printed
    Pending = 6, ///< a spooled session waits for replies; carry them and `hone resume ID --spool DIR`
};

struct ExitCodeDoc {
    ExitCode code;
    const char* meaning;
};

/// The table printed by `hone --help`, the man page and docs/CLI.md.
inline constexpr ExitCodeDoc kExitCodes[] = {
    { ExitCode::Ok, "success (run, resume, bench: at least one candidate passed the checks)" },
    { ExitCode::Failed,
        "the work ran, the answer is no: no candidate passed (run, resume), the candidate failed "
        "(eval), a bench problem failed, no skill to learn (kb learn)" },
    { ExitCode::Usage,
        "usage error: unknown command or option, a value of the wrong type, a missing argument" },
    { ExitCode::Input,
        "input error: a missing or invalid problem, store, session, candidate, targets, bundle or "
        "configuration file" },
    { ExitCode::Environment,
        "environment error: the worker, a compiler, a device, a remote target or the LLM "
        "endpoint is unavailable or refused" },
    { ExitCode::Interrupted, "interrupted by Ctrl-C or SIGTERM (the report so far is printed)" },
    { ExitCode::Pending, "a spooled session waits for replies (--spool; docs/REMOTE.md)" },
};

constexpr int toInt(ExitCode code)
{
    return static_cast<int>(code);
}

/// An error the user can act on, with the exit code that tells a script its kind.
class CliError : public std::runtime_error {
public:
    CliError(ExitCode code, const std::string& message)
        : std::runtime_error(message)
        , m_code(code)
    {
    }
    ExitCode code() const { return m_code; }

private:
    ExitCode m_code;
};

} // namespace hone::app
