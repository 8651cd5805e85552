#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

/// The worker's end of the JSON-lines protocol, and the crash reporter that writes on it.
namespace hone::backends {

class ProtocolChannel {
public:
    /// Takes stdin and stdout for the protocol: keeps private duplicates of both, points fd 0
    /// at /dev/null and fd 1 at stderr, so candidate code can neither read requests nor write
    /// into the protocol stream. Installs the crash handlers.
    static ProtocolChannel takeOverStdio();

    /// A channel that only writes, to stderr (no requests, no crash handlers): for
    /// `--profile-once`, whose stdout belongs to the profiler's report.
    static ProtocolChannel toStderr();

    /// Next request line without its newline; false at end of input.
    bool readLine(std::string& line);

    /// Writes `message` as one line and flushes it (a single write(2) where possible).
    void send(const nlohmann::json& message);

    /// Sends a `progress` line and makes `stage` the one a crash report names.
    void progress(const std::string& id, const std::string& stage, const std::string& detail);

    /// Forgets the request a crash report would name (between requests).
    void clearContext();

    int outFd() const { return m_outFd; }

private:
    ProtocolChannel(int inFd, int outFd)
        : m_inFd(inFd)
        , m_outFd(outFd)
    {
    }
    int m_inFd;
    int m_outFd;
    std::string m_buffer;
    bool m_eof = false;
};

} // namespace hone::backends
