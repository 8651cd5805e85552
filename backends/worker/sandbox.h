#pragma once

#include <string>
#include <utility>
#include <vector>

/// The bubblewrap sandbox shared by runner processes and compiles: whether it can be used here,
/// and the bwrap command line both start from.
namespace hone::backends {

/// Where candidate code may run: whether to sandbox it, and why not where it cannot be.
struct SandboxInfo {
    bool enabled = false; // runners and compiles start inside bubblewrap
    bool available = false; // bubblewrap works on this host
    bool optedOut = false; // HONE_NO_SANDBOX=1: unsandboxed on purpose
    std::string reason; // why it is off or unavailable
    std::string bwrap; // the bwrap binary
};

/// Decides once per process: `HONE_NO_SANDBOX=1` turns the sandbox off on purpose; otherwise
/// bubblewrap (`HONE_BWRAP` or `bwrap` on PATH) is probed by starting it once.
const SandboxInfo& sandboxInfo();

/// Appends the read-only system binds: /usr (with /usr/local), /bin, /sbin, /lib* (as the
/// symlinks they are on merged-/usr systems), /etc/ld.so.cache and the CPU topology in /sys.
void bindSystem(std::vector<std::string>& argv);

/// `bwrap --unshare-all --die-with-parent --new-session --clearenv`, then `env` set (nothing
/// else of the caller's environment), the system read-only, /proc, /dev and a private tmpfs
/// /tmp of `tmpBytes`. The caller appends its own binds and the command.
std::vector<std::string> sandboxCommand(const std::string& bwrap,
    const std::vector<std::pair<std::string, std::string>>& env, unsigned long long tmpBytes);

/// Appends what a process needs to use the NVIDIA GPU inside the sandbox: the driver's device
/// nodes (nvidiactl, nvidia-uvm, nvidiaN, nvidia-caps), the PCI topology it reads, and
/// /etc/alternatives (the toolkit's libraries are reached through it); nothing else of /dev or /sys.
void appendGpuAccess(std::vector<std::string>& argv);

} // namespace hone::backends
