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
    /// into the protocol stream. Installs the crash handlers and makes this process the
    /// subreaper of everything it starts, so that a child that called setsid() and lost its
    /// parent is still found, and ended, when the request ends.
    static ProtocolChannel takeOverStdio();

    /// A channel that only writes, to stderr (no requests, no crash handlers): for
    /// `--profile-once`, whose stdout belongs to the profiler's report.
    static ProtocolChannel toStderr();

    /// Next request line without its newline; false at end of input.
    bool readLine(std::string& line);

    /// Makes `request` (a parsed request line, whatever its validity) the one being served:
    /// every message sent for it, up to and including its one reply, carries its `id` and,
    /// when it has one, its `secret`, by which the executor tells the worker's messages from
    /// forged ones; the crash report carries them too.
    void beginRequest(const nlohmann::json& request);

    /// Writes `message` as one line (a single write(2) where possible), stamped with the
    /// current request's id and secret. Anything but `progress` is the request's reply: before
    /// it goes out, every process this worker started and that is still alive is killed; after
    /// it, the id and secret are forgotten.
    void send(const nlohmann::json& message);

    /// Sends a `progress` line and makes `stage` the one a crash report names.
    void progress(const std::string& id, const std::string& stage, const std::string& detail);

    /// Forgets what a crash report would name and ends any process left from the request:
    /// called when a request's work is done. (Its id and secret stay for its reply, which may
    /// follow.)
    void clearContext();

    int outFd() const { return m_outFd; }

private:
    ProtocolChannel(int inFd, int outFd)
        : m_inFd(inFd)
        , m_outFd(outFd)
    {
    }
    void endStrays() const;

    int m_inFd;
    int m_outFd;
    bool m_ownsChildren = false; // the subreaper of the processes it starts (takeOverStdio)
    bool m_inRequest = false;
    std::string m_id;
    std::string m_secret;
    std::string m_buffer;
    bool m_eof = false;
};

} // namespace hone::backends
