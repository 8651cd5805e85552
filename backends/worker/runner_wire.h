#pragma once

#include <hone/kernel.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

/// The private wire between the trusted worker (the judge) and a runner: the child process that
/// maps one candidate's (or the reference's) code. Fixed-layout packets over a SOCK_SEQPACKET
/// socket pair; buffers travel as file descriptors (SCM_RIGHTS) and are named by id, so the
/// runner never sees a pointer of the judge and the judge never maps candidate code.
namespace hone::backends {
class DeviceBackend;
}

namespace hone::backends::runner {

enum class Op : uint32_t {
    Load = 1,  // fd: a private copy of the shared object; payload: its path in the cache (for messages)
    Map = 2,   // id: buffer id, arg: bytes; one fd attached
    Unmap = 3, // id: buffer id
    Run = 4,   // arg: 1 when timed; payload: encoded call
    // GPU runners only:
    LaunchProfile = 5, // payload: encoded call; the reply's message is the launch profile (JSON)
    TimingInfo = 6,    // the reply's message is how the runner timed (JSON)
};

struct Request {
    Op op;
    uint32_t reserved;
    uint64_t id;
    uint64_t arg;
    uint64_t nonce; // fresh per request; the reply must carry it back
};

enum class Status : int32_t {
    Ok = 0,
    LoadFailed = 1,
    MissingEntry = 2,
    Threw = 3,     // hone_run threw; message holds what()
    BadRequest = 4,
    OutOfMemory = 5,
    DeviceFault = 6, // the runner's GPU context faulted (illegal address, trap); message says how
};

struct Reply {
    Status status;
    int32_t rc;     // hone_run's return value
    double ns;      // the runner's own clock around hone_run (timed calls)
    uint64_t nonce; // the request's
    uint32_t flags; // kDisturbed
    uint32_t reserved;
};

/// Reply::flags: the timed run's closing synchronize came back much later than its stream
/// ended (work on side streams; DeviceBackend::lastRunDisturbed).
constexpr uint32_t kDisturbed = 1;

constexpr size_t kMaxPacket = 1 << 20;
constexpr uint64_t kNoBuffer = ~uint64_t(0);

/// A call's hone_args with every pointer replaced by (buffer id, offset).
struct EncodedTensor {
    std::string name;
    uint64_t buffer = kNoBuffer;
    uint64_t offset = 0;
    int32_t dtype = 0;
    int32_t rank = 0;
    int64_t shape[HONE_MAX_RANK] {};
    int64_t strides[HONE_MAX_RANK] {};
};

struct EncodedCall {
    std::vector<EncodedTensor> inputs, outputs;
    std::vector<std::pair<std::string, double>> params;
    uint64_t workspaceBuffer = kNoBuffer;
    uint64_t workspaceOffset = 0;
    uint64_t workspaceBytes = 0;
};

class Writer {
public:
    template <typename T> void pod(const T& v)
    {
        const auto* p = reinterpret_cast<const char*>(&v);
        m_bytes.insert(m_bytes.end(), p, p + sizeof v);
    }
    void str(const std::string& s)
    {
        pod(static_cast<uint32_t>(s.size()));
        m_bytes.insert(m_bytes.end(), s.begin(), s.end());
    }
    const std::vector<char>& bytes() const { return m_bytes; }

private:
    std::vector<char> m_bytes;
};

class Reader {
public:
    Reader(const char* data, size_t size)
        : m_p(data)
        , m_end(data + size)
    {
    }
    template <typename T> T pod()
    {
        T v;
        need(sizeof v);
        std::memcpy(&v, m_p, sizeof v);
        m_p += sizeof v;
        return v;
    }
    std::string str()
    {
        const auto n = pod<uint32_t>();
        need(n);
        std::string s(m_p, n);
        m_p += n;
        return s;
    }

private:
    void need(size_t n)
    {
        if (static_cast<size_t>(m_end - m_p) < n)
            throw std::runtime_error("truncated runner packet");
    }
    const char* m_p;
    const char* m_end;
};

inline void encodeTensor(Writer& w, const EncodedTensor& t)
{
    w.str(t.name);
    w.pod(t.buffer);
    w.pod(t.offset);
    w.pod(t.dtype);
    w.pod(t.rank);
    for (int i = 0; i < HONE_MAX_RANK; ++i)
        w.pod(t.shape[i]);
    for (int i = 0; i < HONE_MAX_RANK; ++i)
        w.pod(t.strides[i]);
}

inline EncodedTensor decodeTensor(Reader& r)
{
    EncodedTensor t;
    t.name = r.str();
    t.buffer = r.pod<uint64_t>();
    t.offset = r.pod<uint64_t>();
    t.dtype = r.pod<int32_t>();
    t.rank = r.pod<int32_t>();
    if (t.rank < 0 || t.rank > HONE_MAX_RANK)
        throw std::runtime_error("tensor rank out of range in a runner packet");
    for (int i = 0; i < HONE_MAX_RANK; ++i)
        t.shape[i] = r.pod<int64_t>();
    for (int i = 0; i < HONE_MAX_RANK; ++i)
        t.strides[i] = r.pod<int64_t>();
    return t;
}

inline std::vector<char> encodeCall(const EncodedCall& c)
{
    Writer w;
    w.pod(static_cast<uint32_t>(c.inputs.size()));
    w.pod(static_cast<uint32_t>(c.outputs.size()));
    w.pod(static_cast<uint32_t>(c.params.size()));
    for (const auto& t : c.inputs)
        encodeTensor(w, t);
    for (const auto& t : c.outputs)
        encodeTensor(w, t);
    for (const auto& [name, value] : c.params) {
        w.str(name);
        w.pod(value);
    }
    w.pod(c.workspaceBuffer);
    w.pod(c.workspaceOffset);
    w.pod(c.workspaceBytes);
    return w.bytes();
}

inline EncodedCall decodeCall(const char* data, size_t size)
{
    Reader r(data, size);
    EncodedCall c;
    const auto ni = r.pod<uint32_t>();
    const auto no = r.pod<uint32_t>();
    const auto np = r.pod<uint32_t>();
    if (ni > 4096 || no > 4096 || np > 4096)
        throw std::runtime_error("too many tensors or params in a runner packet");
    for (uint32_t i = 0; i < ni; ++i)
        c.inputs.push_back(decodeTensor(r));
    for (uint32_t i = 0; i < no; ++i)
        c.outputs.push_back(decodeTensor(r));
    for (uint32_t i = 0; i < np; ++i) {
        std::string name = r.str();
        const auto value = r.pod<double>();
        c.params.emplace_back(std::move(name), value);
    }
    c.workspaceBuffer = r.pod<uint64_t>();
    c.workspaceOffset = r.pod<uint64_t>();
    c.workspaceBytes = r.pod<uint64_t>();
    return c;
}

/// Sends one packet (header + payload) with an optional fd; throws std::runtime_error.
void sendPacket(int sock, const void* header, size_t headerBytes, const std::vector<char>& payload, int fd = -1);
/// Receives one packet into `header` and `payload` (and an fd when one came, else -1). False at
/// end of stream (the peer is gone); throws on a malformed packet.
bool receivePacket(int sock, void* header, size_t headerBytes, std::vector<char>& payload, int* fd = nullptr);

/// The runner's main loop (`hone-worker --runner FD [cuda]`): serves the judge until it hangs
/// up. Without `device` calls run on host memory (memfd buffers); with one (a GPU runner) the
/// runner owns that device's context, maps the judge's shared device buffers, and times calls
/// with the device's clock.
int runnerMain(int sock, DeviceBackend* device = nullptr);

} // namespace hone::backends::runner
