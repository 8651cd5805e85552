// The runner: the only process that maps candidate code. It holds the buffers the judge
// passed it and nothing else (no request, no reference output, no protocol channel, no secret),
// and answers one packet at a time on its socket.
#include "runner_wire.h"

#include "device_backend.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>

namespace hone::backends::runner {

void sendPacket(int sock, const void* header, size_t headerBytes, const std::vector<char>& payload, int fd)
{
    std::vector<char> packet(static_cast<const char*>(header), static_cast<const char*>(header) + headerBytes);
    packet.insert(packet.end(), payload.begin(), payload.end());
    if (packet.size() > kMaxPacket)
        throw std::runtime_error("runner packet too large");
    iovec iov { packet.data(), packet.size() };
    msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] {};
    if (fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n;
    do
        n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(packet.size()))
        throw std::runtime_error(std::string("runner socket send failed: ") + std::strerror(errno));
}

bool receivePacket(int sock, void* header, size_t headerBytes, std::vector<char>& payload, int* fd)
{
    // One buffer per thread, kept: a fresh zero-filled MiB per packet cost the runner ~1 ms of
    // CPU per call under ASan (and tens of us without), all of it inside the window in which the
    // judge charges the runner's CPU time against the candidate's reported time.
    thread_local std::vector<char> packet(kMaxPacket);
    iovec iov { packet.data(), packet.size() };
    msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do
        n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
        return false;
    if (n < 0)
        throw std::runtime_error(std::string("runner socket receive failed: ") + std::strerror(errno));
    if (fd)
        *fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int got = -1;
            std::memcpy(&got, CMSG_DATA(c), sizeof got);
            if (fd)
                *fd = got;
            else
                ::close(got);
        }
    }
    if ((msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) < headerBytes)
        throw std::runtime_error("malformed runner packet");
    std::memcpy(header, packet.data(), headerBytes);
    payload.assign(packet.data() + headerBytes, packet.data() + n);
    return true;
}

namespace {

using RunFn = int (*)(const hone_args*);

struct Mapping {
    char* base = nullptr;
    size_t bytes = 0;
};

class Runner {
public:
    Runner(int sock, DeviceBackend* device)
        : m_sock(sock)
        , m_device(device)
    {
    }

    int serve()
    {
        for (;;) {
            Request req {};
            std::vector<char> payload;
            int fd = -1;
            try {
                if (!receivePacket(m_sock, &req, sizeof req, payload, &fd))
                    return 0;
            } catch (const std::exception& e) {
                std::fprintf(stderr, "hone-worker --runner: %s\n", e.what());
                return 3;
            }
            Reply rep { Status::Ok, 0, 0, req.nonce, 0, 0 };
            std::string message;
            try {
                handle(req, payload, fd, rep, message);
            } catch (const DeviceFault& e) {
                rep.status = Status::DeviceFault;
                message = e.what();
            } catch (const std::bad_alloc&) {
                rep.status = Status::OutOfMemory;
                message = "std::bad_alloc";
            } catch (const std::exception& e) {
                rep.status = req.op == Op::Run ? Status::Threw : Status::BadRequest;
                message = e.what();
            } catch (...) {
                rep.status = Status::Threw;
                message = "an exception that is not a std::exception";
            }
            try {
                sendPacket(m_sock, &rep, sizeof rep, std::vector<char>(message.begin(), message.end()));
            } catch (const std::exception&) {
                return 0; // the judge is gone
            }
        }
    }

private:
    void handle(const Request& req, const std::vector<char>& payload, int fd, Reply& rep, std::string& message)
    {
        if (req.op == Op::Load)
            return load(payload, fd, rep, message);
        if (m_device)
            return handleOnDevice(req, payload, fd, rep, message);
        switch (req.op) {
        case Op::Load:
            break;
        case Op::Map: {
            if (fd < 0)
                throw std::runtime_error("map request without a buffer");
            void* p = ::mmap(nullptr, req.arg ? req.arg : 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            ::close(fd);
            if (p == MAP_FAILED)
                throw std::bad_alloc();
            unmap(req.id);
            m_buffers[req.id] = { static_cast<char*>(p), req.arg };
            return;
        }
        case Op::Unmap:
            unmap(req.id);
            return;
        case Op::Run:
            run(req, payload, rep);
            return;
        case Op::LaunchProfile:
        case Op::TimingInfo:
            break;
        }
        throw std::runtime_error("unknown runner op " + std::to_string(static_cast<uint32_t>(req.op)));
    }

    /// Loads the one object this runner serves: the judge's private copy, received as a
    /// descriptor (the payload names the cached file, for messages only). A second load is
    /// refused, so a runner never holds two kernels (or one kernel's leftovers and another).
    void load(const std::vector<char>& payload, int fd, Reply& rep, std::string& message)
    {
        if (m_loaded || fd < 0) {
            if (fd >= 0)
                ::close(fd);
            throw std::runtime_error(m_loaded ? "a runner loads one object only" : "load request without an object");
        }
        m_loaded = true;
        const std::string shown(payload.begin(), payload.end());
        const std::string path = "/proc/self/fd/" + std::to_string(fd);
        // The loader's messages name the descriptor; the judge's reader wants the cached file.
        auto named = [&](std::string text) {
            for (size_t at = text.find(path); at != std::string::npos; at = text.find(path, at + shown.size()))
                text.replace(at, path.size(), shown);
            return text;
        };
        if (m_device) {
            CompileOutput object;
            object.ok = true;
            object.objectPath = path;
            bool missingEntry = false;
            m_kernel = m_device->load(object, message, missingEntry);
            ::close(fd); // mapped now, or not at all
            message = named(message);
            if (!m_kernel)
                rep.status = missingEntry ? Status::MissingEntry : Status::LoadFailed;
            return;
        }
        // Never dlclose'd: OpenMP pools and threads a candidate started may outlive a call.
        void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        ::close(fd);
        if (!handle) {
            const char* err = ::dlerror();
            rep.status = Status::LoadFailed;
            message = "cannot load the compiled object: " + named(err ? err : "unknown dlopen error");
            return;
        }
        ::dlerror();
        m_fn = reinterpret_cast<RunFn>(::dlsym(handle, "hone_run"));
        if (!m_fn) {
            rep.status = Status::MissingEntry;
            message = "the compiled object exports no 'hone_run'; define extern \"C\" int "
                      "hone_run(const hone_args*) (include <hone/kernel.h>)";
        }
    }

    /// A GPU runner: the device backend in this process owns the context, loads the object,
    /// maps the judge's buffers and times the calls.
    void handleOnDevice(const Request& req, const std::vector<char>& payload, int fd, Reply& rep, std::string& message)
    {
        switch (req.op) {
        case Op::Load:
            break; // load()
        case Op::Map: {
            if (fd < 0)
                throw std::runtime_error("map request without a buffer");
            unmap(req.id);
            void* p = m_device->importShared(fd, req.arg);
            m_buffers[req.id] = { static_cast<char*>(p), req.arg };
            return;
        }
        case Op::Unmap:
            unmap(req.id);
            return;
        case Op::Run:
        case Op::LaunchProfile: {
            if (!m_kernel)
                throw std::runtime_error("run before a successful load");
            Call call(*this, payload);
            call.args.stream = m_device->stream();
            if (req.op == Op::LaunchProfile) {
                message = m_device->launchProfile(*m_kernel, call.args).dump();
            } else if (req.arg & 1) {
                rep.ns = m_device->timedRun(*m_kernel, call.args, rep.rc);
                rep.flags = m_device->lastRunDisturbed() ? kDisturbed : 0;
            } else {
                rep.rc = m_kernel->run(call.args);
                // Finished (or faulted) before the reply: the judge reads the outputs next.
                m_device->synchronize();
            }
            return;
        }
        case Op::TimingInfo:
            message = m_device->timingInfo().dump();
            return;
        }
        throw std::runtime_error("unknown runner op " + std::to_string(static_cast<uint32_t>(req.op)));
    }

    void unmap(uint64_t id)
    {
        auto it = m_buffers.find(id);
        if (it == m_buffers.end())
            return;
        if (m_device)
            m_device->releaseImported(it->second.base);
        else
            ::munmap(it->second.base, it->second.bytes ? it->second.bytes : 1);
        m_buffers.erase(it);
    }

    void* resolve(uint64_t id, uint64_t offset, uint64_t bytes)
    {
        if (id == kNoBuffer)
            return nullptr;
        auto it = m_buffers.find(id);
        if (it == m_buffers.end() || offset > it->second.bytes || bytes > it->second.bytes - offset)
            throw std::runtime_error("a call names a buffer this runner does not hold");
        return it->second.base + offset;
    }

    /// One decoded call: hone_args over this runner's mappings, valid while the Call lives.
    struct Call {
        Call(Runner& runner, const std::vector<char>& payload)
            : encoded(decodeCall(payload.data(), payload.size()))
        {
            auto build = [&](const std::vector<EncodedTensor>& from, std::vector<hone_tensor>& to) {
                for (const auto& e : from) {
                    hone_tensor t {};
                    t.name = e.name.c_str();
                    t.data = runner.resolve(e.buffer, e.offset, 0);
                    t.dtype = e.dtype;
                    t.rank = e.rank;
                    std::memcpy(t.shape, e.shape, sizeof t.shape);
                    std::memcpy(t.strides, e.strides, sizeof t.strides);
                    to.push_back(t);
                }
            };
            build(encoded.inputs, inputs);
            build(encoded.outputs, outputs);
            for (const auto& [name, value] : encoded.params)
                params.push_back({ name.c_str(), value });
            args.abi_version = HONE_ABI_VERSION;
            args.num_inputs = static_cast<int32_t>(inputs.size());
            args.num_outputs = static_cast<int32_t>(outputs.size());
            args.num_params = static_cast<int32_t>(params.size());
            args.inputs = inputs.data();
            args.outputs = outputs.data();
            args.params = params.data();
            args.stream = nullptr;
            args.workspace
                = runner.resolve(encoded.workspaceBuffer, encoded.workspaceOffset, encoded.workspaceBytes);
            args.workspace_bytes = args.workspace ? encoded.workspaceBytes : 0;
        }
        EncodedCall encoded;
        std::vector<hone_tensor> inputs, outputs;
        std::vector<hone_param> params;
        hone_args args {};
    };

    void run(const Request& req, const std::vector<char>& payload, Reply& rep)
    {
        if (!m_fn)
            throw std::runtime_error("run before a successful load");
        Call call(*this, payload);
        if (req.arg & 1) {
            const auto start = std::chrono::steady_clock::now();
            rep.rc = m_fn(&call.args);
            const auto stop = std::chrono::steady_clock::now();
            rep.ns = std::chrono::duration<double, std::nano>(stop - start).count();
        } else {
            rep.rc = m_fn(&call.args);
        }
    }

    int m_sock;
    DeviceBackend* m_device; // a GPU runner's device; null on the host
    std::unique_ptr<LoadedKernel> m_kernel; // a GPU runner's loaded object
    RunFn m_fn = nullptr;
    bool m_loaded = false;
    std::map<uint64_t, Mapping> m_buffers;
};

} // namespace

int runnerMain(int sock, DeviceBackend* device)
{
    return Runner(sock, device).serve();
}

} // namespace hone::backends::runner
