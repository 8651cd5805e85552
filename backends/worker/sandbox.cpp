#include "sandbox.h"

#include "process.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace hone::backends {

void bindSystem(std::vector<std::string>& a)
{
    a.insert(a.end(), { "--ro-bind", "/usr", "/usr" });
    for (const char* dir : { "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32" }) {
        struct stat st { };
        if (::lstat(dir, &st) != 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char target[1024];
            const ssize_t n = ::readlink(dir, target, sizeof target - 1);
            if (n > 0)
                a.insert(a.end(), { "--symlink", std::string(target, static_cast<size_t>(n)), dir });
        } else {
            a.insert(a.end(), { "--ro-bind", dir, dir });
        }
    }
    a.insert(a.end(), { "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache" });
    a.insert(a.end(), { "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu" });
    a.insert(a.end(), { "--ro-bind-try", "/sys/devices/system/node", "/sys/devices/system/node" });
}

std::vector<std::string> sandboxCommand(const std::string& bwrap,
    const std::vector<std::pair<std::string, std::string>>& env, unsigned long long tmpBytes)
{
    std::vector<std::string> a
        = { bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv" };
    for (const auto& [name, value] : env)
        a.insert(a.end(), { "--setenv", name, value });
    bindSystem(a);
    a.insert(a.end(),
        { "--proc", "/proc", "--dev", "/dev", "--size", std::to_string(tmpBytes), "--tmpfs", "/tmp" });
    return a;
}

void appendGpuAccess(std::vector<std::string>& argv)
{
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev", ec))
        if (e.path().filename().string().rfind("nvidia", 0) == 0)
            argv.insert(argv.end(), { "--dev-bind", e.path().string(), e.path().string() });
    for (const char* dir : { "/sys/bus/pci", "/sys/devices", "/sys/module/nvidia" })
        argv.insert(argv.end(), { "--ro-bind-try", dir, dir });
    argv.insert(argv.end(), { "--ro-bind-try", "/etc/alternatives", "/etc/alternatives" });
}

const SandboxInfo& sandboxInfo()
{
    static const SandboxInfo info = [] {
        SandboxInfo s;
        const char* bw = std::getenv("HONE_BWRAP");
        s.bwrap = bw && *bw ? std::string(bw) : findExecutable("bwrap");
        if (s.bwrap.empty()) {
            s.reason = "bubblewrap (bwrap) is not installed; apt install bubblewrap";
        } else {
            // One start of a sandbox like the runners' tells whether namespaces can be made here.
            std::vector<std::string> argv
                = { s.bwrap, "--unshare-all", "--die-with-parent", "--new-session" };
            bindSystem(argv);
            argv.insert(argv.end(), { "--proc", "/proc", "--dev", "/dev", "/usr/bin/true" });
            const ProcessResult r = runProcess(argv, {}, 30);
            s.available = r.started && !r.timedOut && r.exitCode == 0;
            if (!s.available)
                s.reason
                    = s.bwrap + " cannot create namespaces on this host (unprivileged user namespaces off?)";
        }
        const char* off = std::getenv("HONE_NO_SANDBOX");
        if (off && std::string(off) == "1") {
            s.enabled = false;
            s.optedOut = true;
            s.reason = "turned off with --no-sandbox (HONE_NO_SANDBOX=1)"
                + (s.available ? std::string() : "; besides, " + s.reason);
        } else {
            s.enabled = s.available;
        }
        return s;
    }();
    return info;
}

} // namespace hone::backends
