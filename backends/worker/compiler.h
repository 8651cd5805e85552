#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

/// The host C++ compile path shared by candidates, references, baselines and the calibration
/// kernels: c++ -std=c++17 -O3 -march=native -fopenmp -shared -fPIC, cached by content.
namespace hone::backends {

struct CompileJob {
    std::string name; // shown in diagnostics: "tuned.cpp"
    std::string source;
    std::map<std::string, std::string> defines; // knobs, compiled as -DNAME=value
    std::string flags; // user flags; see refusedFlag()
    std::vector<std::string> libraries; // vendor libraries the problem allows ("cublasLt")
    double timeLimitSeconds = 120;
};

struct CompileMessage {
    std::string file;
    int line = 0;
    int column = 0;
    std::string severity; // error, warning, note, fatal error
    std::string text;
};

struct CompileOutput {
    bool ok = false;
    bool cached = false;
    bool timedOut = false;
    double seconds = 0;
    std::string command; // as run, with the real paths
    std::string log;
    std::vector<CompileMessage> messages;
    std::string objectPath; // the shared object, when ok
    std::string objectSha256; // its content hash, verified against the cache's manifest (cache_integrity.h)
    std::string cacheKey; // "so/<key>.so": the object's path under the cache folder
    std::string cacheWarning; // the cached object failed its hash check and was rebuilt
    std::string toolError; // the compiler could not be run at all
    nlohmann::json resources; // per-kernel registers, shared memory, spills (GPU compiles)
    std::string isa; // disassembly of the device code, where the backend reads it (HIP)

    /// "tuned.cpp:12:5: error: ..." for the first error, else the last line of the log.
    std::string firstError() const;
    nlohmann::json toJson() const;
};

/// Splits a flag string on whitespace. Quotes are not interpreted (and are refused by
/// refusedFlag), so what the user sees is what the compiler gets.
std::vector<std::string> splitFlags(const std::string& flags);

/// Writes the candidate ABI header (hone/kernel.h, built into the worker) under
/// `cacheDir`/include unless the copy there is already the same, and returns that include folder.
std::filesystem::path installKernelHeader(const std::filesystem::path& cacheDir);

/// Appends what every backend passes after its base flags: `-I` of the cache's include folder,
/// the job's knobs as `-D`, and its (already allowed) flags. `keyed` gets the same with the
/// include folder written as `<include>`, so that compile-cache keys do not depend on where the
/// cache lives.
void appendJobFlags(const CompileJob& job, const std::string& includeDir, std::vector<std::string>& args,
    std::vector<std::string>& keyed);

/// Empty when every flag is on the allow-list of docs/FORMATS.md (-O*, -f* except -fplugin*,
/// -m*, -D*, -U*, -W* except -Wl,/-Wa,/-Wp, pass-throughs, -std=*), else a message naming the
/// first refused flag.
std::string refusedFlag(const std::vector<std::string>& flags);

/// Empty when `name` can be a -D macro name (a C identifier) and `value` has no whitespace or
/// control characters; else what is wrong.
std::string badDefine(const std::string& name, const std::string& value);

/// GCC/Clang diagnostics of the form `file:line:col: severity: text`.
std::vector<CompileMessage> parseDiagnostics(const std::string& log);

class HostCompiler {
public:
    /// `compiler` is the driver to run ("c++", or $HONE_CXX); objects are cached under
    /// `cacheDir`/so and kernel.h is installed under `cacheDir`/include.
    HostCompiler(std::filesystem::path cacheDir, std::string compiler);

    /// First line of `<compiler> --version`, or "" when the compiler cannot be run.
    const std::string& versionLine();

    /// The fixed flags every compile gets, before the user's.
    static const std::vector<std::string>& baseFlags();

    /// Compiles (or finds in the cache) one translation unit into a shared object. Compile
    /// errors and timeouts come back in the output; nothing here throws for them.
    CompileOutput compile(const CompileJob& job);

private:
    void installHeader();

    std::filesystem::path m_cacheDir;
    std::string m_compiler;
    std::string m_version;
    bool m_versionRead = false;
    bool m_headerInstalled = false;
    std::string m_machineId; // what -march=native resolves against: CPU model and features
};

/// One compile into the content-addressed object cache, shared by the host compiler and nvcc:
/// `compiler middle... -o OBJ source tail...`. A hit returns the cached object with its log; a
/// miss builds in a fresh directory under cacheDir/tmp and moves the object into place, so other
/// workers sharing the cache never see a partial one. Where sandboxInfo() is enabled the compiler
/// runs inside bubblewrap and sees only the system, its toolkit, cacheDir/include and that
/// directory.
struct CachedCompile {
    std::filesystem::path cacheDir;
    std::string subdir; // "so", "cuda-so"
    std::string key; // content hash of everything that decides the object
    std::string compiler;
    std::vector<std::string> middle; // flags before -o
    std::vector<std::string> tail; // after the source (libraries)
    std::string sourceName;
    std::string source;
    double timeLimitSeconds = 120;
    /// Cleans the raw log (may be null) and fills messages, resources... from `out.log`.
    std::string (*cleanLog)(std::string) = nullptr;
    void (*parseLog)(CompileOutput& out) = nullptr;
};
CompileOutput runCachedCompile(const CachedCompile& c);

/// Writes `data` to `path` through a temporary file and rename, so that readers (other
/// workers sharing the cache) never see a partial file.
void writeFileAtomically(const std::filesystem::path& path, const std::string& data);

std::string readFile(const std::filesystem::path& path, bool* ok = nullptr);

} // namespace hone::backends
