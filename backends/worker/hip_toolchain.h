#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

/// Which compiler builds HIP for a gfx architecture (docs/HIP.md, "Which toolchain compiles which
/// architecture"). The system's hipcc, where a probe compile shows it can build the architecture;
/// otherwise an upstream clang (Debian 12's clang-19) over the same HIP headers and the system's
/// ROCm device libraries, completed by the one-constant control libraries those lack for newer
/// targets (oclc_isa_version_942.bc), which are generated from LLVM IR text by that clang.
namespace hone::backends::hip {

/// How to build one architecture.
struct Toolchain {
    std::string route; // "hipcc" or "clang"
    std::string compiler; // the program to run
    std::vector<std::string> flags; // after the base flags (-std, -O3, -shared, -fPIC), before the job's
    std::vector<std::string> keyFlags; // `flags` with the cache's include folder written as <include>
    std::vector<std::string> tail; // after the source: libraries
    std::string identity; // versions and device libraries: part of the compile-cache key
    std::string
        llvmBinDir; // the LLVM whose llvm-readelf/llvm-objdump know the target; "" for the default search
    std::string error; // no route builds the architecture: why, and what to install
};

/// Picks the toolchain per architecture. Probes run once per architecture and worker, and their
/// successes are remembered under the cache directory (hip-probe-*.txt), keyed by the compilers'
/// identities, so the next worker does not probe again.
class ToolchainSelector {
public:
    /// `hipcc` and `hipccVersion` as HipBackend found them; the device libraries that clang gets
    /// are assembled under `cacheDir`/include (which the compile sandbox sees).
    ToolchainSelector(std::filesystem::path cacheDir, std::string hipcc, std::string hipccVersion);

    const Toolchain& forArch(const std::string& arch);

    /// The upstream clang's path and first version line, "" when none is found.
    std::string clangPath();
    std::string clangVersion();

private:
    Toolchain hipccRoute(const std::string& arch) const;
    Toolchain clangRoute(const std::string& arch, const std::string& hipccWhy);
    /// <cache>/include/hip-devlibs-HASH holding the system's bitcode and, generated, the control
    /// libraries it lacks for `arch`; "" with `error` set when that cannot be made.
    std::filesystem::path deviceLibs(const std::string& arch, std::string& error);
    /// Builds the probe source in a fresh folder: `argv` (the compiler and its flags, with -o
    /// `output`), the source, then `after`. Empty when `output` was made, else the compiler's output.
    std::string probe(std::vector<std::string> argv, const std::string& output,
        const std::vector<std::string>& after) const;

    std::filesystem::path m_cacheDir;
    std::string m_hipcc;
    std::string m_hipccVersion;
    std::string m_rocmRoot; // where the HIP headers and libamdhip64 are: hipcc's install prefix
    std::map<std::string, Toolchain> m_byArch;
    bool m_clangSearched = false;
    std::string m_clang;
    std::string m_clangVersion;
};

/// `__oclc_ISA_version` for a gfx name as the device libraries define it: major * 1000 +
/// minor * 100 + stepping, with minor and stepping hex digits (gfx942 → 9402, gfx90a → 9010,
/// gfx1030 → 10300); 0 for a name of another form.
int isaVersionNumber(const std::string& arch);

} // namespace hone::backends::hip
