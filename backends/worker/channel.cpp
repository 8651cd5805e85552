#include "channel.h"

#include "process_tree.h"

#include "core/protocol.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace hone::backends {
namespace {

// Crash reporting: a fatal signal in candidate code writes one progress line naming the
// request and stage, then dies of the same signal so the executor sees both. The handler may
// only use async-signal-safe calls, so the line is prepared whenever the stage changes.
constexpr size_t kCrashLineMax = 4096;
char g_crashPrefix[kCrashLineMax]; // `{"protocol":2,...,"secret":...,"detail":"fatal signal `
volatile sig_atomic_t g_crashPrefixLen = 0; // 0: no request in flight
int g_crashFd = -1;
constexpr int kFatalSignals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

void writeAll(int fd, const char* data, size_t n)
{
    while (n > 0) {
        const ssize_t w = ::write(fd, data, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        data += w;
        n -= static_cast<size_t>(w);
    }
}

extern "C" void onFatalSignal(int sig)
{
    const int savedErrno = errno;
    const size_t len = static_cast<size_t>(g_crashPrefixLen);
    if (len > 0 && g_crashFd >= 0) {
        char line[kCrashLineMax + 32];
        std::memcpy(line, g_crashPrefix, len);
        size_t n = len;
        char digits[12];
        int d = 0;
        unsigned v = static_cast<unsigned>(sig);
        do {
            digits[d++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v && d < 11);
        while (d > 0)
            line[n++] = digits[--d];
        const char tail[] = "\"}\n";
        std::memcpy(line + n, tail, sizeof tail - 1);
        n += sizeof tail - 1;
        writeAll(g_crashFd, line, n);
    }
    errno = savedErrno;
    // SA_RESETHAND restored the default action; raising again ends the process with `sig`.
    ::raise(sig);
}

void installCrashHandlers(int fd)
{
    g_crashFd = fd;
    // Our own stack, so a stack overflow in candidate code is reported too.
    static char altStack[64 * 1024];
    stack_t ss {};
    ss.ss_sp = altStack;
    ss.ss_size = sizeof altStack;
    ::sigaltstack(&ss, nullptr);
    struct sigaction sa { };
    sa.sa_handler = onFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
    for (int sig : kFatalSignals)
        ::sigaction(sig, &sa, nullptr);
}

void setCrashContext(const std::string& id, const std::string& secret, const std::string& stage)
{
    const auto quoted = [](const std::string& s) {
        return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    // Stamped like every other message of the request, or the executor would take the report
    // for a forgery.
    const std::string text = "{\"protocol\":" + std::to_string(core::protocol::kVersion)
        + ",\"type\":\"progress\",\"id\":" + quoted(id)
        + (secret.empty() ? std::string() : ",\"secret\":" + quoted(secret)) + ",\"stage\":" + quoted(stage)
        + ",\"detail\":\"fatal signal ";
    g_crashPrefixLen = 0;
    if (text.size() >= kCrashLineMax)
        return;
    std::memcpy(g_crashPrefix, text.data(), text.size());
    g_crashPrefixLen = static_cast<sig_atomic_t>(text.size());
}

} // namespace

ProtocolChannel ProtocolChannel::takeOverStdio()
{
    const int inFd = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
    const int outFd = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (inFd < 0 || outFd < 0)
        throw std::runtime_error(std::string("cannot duplicate stdin/stdout: ") + std::strerror(errno));
    const int devNull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devNull >= 0) {
        ::dup2(devNull, 0);
        ::close(devNull);
    }
    std::fflush(stdout);
    if (::dup2(2, 1) < 0)
        throw std::runtime_error(std::string("cannot point stdout at stderr: ") + std::strerror(errno));
    installCrashHandlers(outFd);
    ProtocolChannel channel(inFd, outFd);
    // Orphans of what this worker starts (a candidate's child that called setsid() and whose
    // parent exited) become our children instead of init's, so endStrays() still finds them.
    channel.m_ownsChildren = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    return channel;
}

ProtocolChannel ProtocolChannel::toStderr()
{
    ProtocolChannel c(-1, 2);
    c.m_eof = true;
    return c;
}

bool ProtocolChannel::readLine(std::string& line)
{
    for (;;) {
        const size_t nl = m_buffer.find('\n');
        if (nl != std::string::npos) {
            line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            return true;
        }
        if (m_eof) {
            if (m_buffer.empty())
                return false;
            line.swap(m_buffer);
            m_buffer.clear();
            return true;
        }
        char buf[65536];
        const ssize_t n = ::read(m_inFd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            m_eof = true;
        else
            m_buffer.append(buf, static_cast<size_t>(n));
    }
}

void ProtocolChannel::beginRequest(const nlohmann::json& request)
{
    m_inRequest = true;
    m_id.clear();
    m_secret.clear();
    if (!request.is_object())
        return;
    if (auto id = request.find("id"); id != request.end()) {
        if (id->is_string())
            m_id = id->get<std::string>();
        else if (id->is_number_integer())
            m_id = std::to_string(id->get<int64_t>());
    }
    if (auto secret = request.find("secret"); secret != request.end() && secret->is_string())
        m_secret = secret->get<std::string>();
}

void ProtocolChannel::endStrays() const
{
    if (!m_ownsChildren)
        return;
    // Nothing this worker started itself runs between a request's last message and the next
    // request: whatever is left (a candidate's detached child, its setsid() escapee) is the
    // candidate's, and must not outlive its evaluation.
    killDescendants(::getpid());
    reapZombieChildren();
}

void ProtocolChannel::send(const nlohmann::json& message)
{
    const bool reply = message.value("type", std::string()) != "progress";
    if (reply)
        endStrays();
    nlohmann::json stamped = message;
    if (m_inRequest) {
        stamped["id"] = m_id;
        if (!m_secret.empty())
            stamped["secret"] = m_secret;
    }
    if (reply) {
        // A request has exactly one reply: nothing after it speaks for the request.
        m_inRequest = false;
        m_id.clear();
        m_secret.clear();
    }
    // Invalid UTF-8 (from compiler logs or candidate names) is replaced, never fatal.
    std::string text = stamped.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
    writeAll(m_outFd, text.data(), text.size());
}

void ProtocolChannel::progress(const std::string& id, const std::string& stage, const std::string& detail)
{
    setCrashContext(m_inRequest ? m_id : id, m_secret, stage);
    nlohmann::json msg = core::protocol::makeMessage("progress");
    msg["id"] = id;
    msg["stage"] = stage;
    msg["detail"] = detail;
    send(msg);
}

void ProtocolChannel::clearContext()
{
    g_crashPrefixLen = 0;
    // The id and secret stay until the reply has gone out (send() forgets them then): the
    // evaluator clears its context before its result is sent.
    endStrays();
}

} // namespace hone::backends
