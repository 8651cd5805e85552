// HIP on the NVIDIA platform (HONE_HIP_PLATFORM=nvidia): the compile half. A test bench for the
// HIP run path on an NVIDIA GPU (docs/HIP.md), not a product target: .hip candidates are built
// by nvcc as CUDA (-x cu) with __HIP_PLATFORM_NVIDIA__ and HIP's NVIDIA platform headers, through
// the same cache, flag allow-list (CUDA's, since nvcc reads the flags), time limit and sandbox.
// No AMDGPU code object comes out, so there is no code-object analysis; the result says so.
#include "hip_backend.h"

#include "core/knobs.h"
#include "core/sha256.h"
#include "hone_embedded.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace hone::backends {
namespace fs = std::filesystem;

namespace {

std::string join(const std::vector<std::string>& parts)
{
    std::string out;
    for (const auto& p : parts)
        out += (out.empty() ? "" : " ") + p;
    return out;
}

/// Where HIP's headers (a folder holding hip/hip_runtime.h and hip/nvidia_detail) are:
/// $HONE_HIP_NVIDIA_INCLUDE, else share/hone/hip-nvidia/include beside the worker's bin folder
/// (scripts/device-bundle puts them there, made to compile with the local CUDA by
/// scripts/hip-nvidia-headers).
fs::path findNvidiaHeaders()
{
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("HONE_HIP_NVIDIA_INCLUDE"); env && *env)
        dirs.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec)
        dirs.push_back(exe.parent_path().parent_path() / "share" / "hone" / "hip-nvidia" / "include");
    for (const auto& d : dirs)
        if (fs::is_regular_file(d / "hip" / "nvidia_detail" / "nvidia_hip_runtime.h", ec))
            return d;
    return {};
}

/// nvcc's `file(line): error: text`, and the host compiler's `file:line:col: error: text`.
std::vector<CompileMessage> parseNvcc(const std::string& log)
{
    static const std::regex nvccLine(R"(^(.+?)\((\d+)\): (error|warning|catastrophic error)[^:]*: (.*)$)");
    std::vector<CompileMessage> out;
    std::istringstream in(log);
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_match(line, m, nvccLine)) {
            CompileMessage c;
            c.file = m[1];
            c.line = std::atoi(m[2].str().c_str());
            c.severity = m[3] == "catastrophic error" ? "fatal error" : m[3].str();
            c.text = m[4];
            out.push_back(std::move(c));
        }
    }
    for (auto& c : parseDiagnostics(log))
        out.push_back(std::move(c));
    return out;
}

} // namespace

std::vector<std::string> HipBackend::nvidiaFlags() const
{
    // Hopper's architecture-specific features need the 'a' target, as in the CUDA backend.
    const std::string digits = m_arch.substr(m_arch.find('_') + 1);
    const std::string full = digits == "90" ? "90a" : digits;
    return { "-x", "cu", "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
        "-gencode=arch=compute_" + full + ",code=sm_" + full, "-D__HIP_PLATFORM_NVIDIA__" };
}

std::string HipBackend::nvidiaHeaders(std::string& error)
{
    if (!m_nvidiaInclude.empty())
        return m_nvidiaInclude;
    const fs::path src = findNvidiaHeaders();
    if (src.empty()) {
        error = "HIP on NVIDIA: cannot find HIP's NVIDIA platform headers (hip/nvidia_detail); set "
                "HONE_HIP_NVIDIA_INCLUDE to a folder holding hip/, made with scripts/hip-nvidia-headers";
        return {};
    }
    // Named by their content, under the include folder the compile sandbox binds read-only.
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(src / "hip"))
        if (e.is_regular_file())
            files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::string all;
    for (const auto& f : files) {
        bool ok = false;
        all += fs::relative(f, src).string() + "\n" + core::sha256Hex(readFile(f, &ok)) + "\n";
    }
    const fs::path dst = m_cacheDir / "include" / ("hip-nvidia-" + core::sha256Hex(all).substr(0, 16));
    std::error_code ec;
    if (!fs::is_regular_file(dst / "hip" / "hip_runtime.h", ec)) {
        const fs::path tmp = dst.string() + ".tmp." + std::to_string(::getpid());
        fs::remove_all(tmp, ec);
        fs::create_directories(tmp, ec);
        fs::copy(src / "hip", tmp / "hip", fs::copy_options::recursive, ec);
        if (!ec)
            fs::rename(tmp, dst, ec);
        if (ec && !fs::is_regular_file(dst / "hip" / "hip_runtime.h")) {
            fs::remove_all(tmp, ec);
            error = "HIP on NVIDIA: cannot copy the HIP headers to " + dst.string();
            return {};
        }
        fs::remove_all(tmp, ec);
    }
    m_nvidiaInclude = dst.string();
    return m_nvidiaInclude;
}

CompileOutput HipBackend::compileNvidia(const CompileJob& job, const std::string& version)
{
    CompileOutput out;
    std::string error;
    const std::string hipInclude = nvidiaHeaders(error);
    if (hipInclude.empty()) {
        out.toolError = error;
        return out;
    }
    const fs::path includeDir = installKernelHeader(m_cacheDir);
    std::vector<std::string> middle = nvidiaFlags();
    std::vector<std::string> keyMiddle = middle;
    // -isystem: HIP 5.2's NVIDIA headers warn about many APIs CUDA has deprecated since.
    middle.insert(middle.end(), { "-isystem", hipInclude });
    keyMiddle.insert(keyMiddle.end(), { "-isystem", "<" + fs::path(hipInclude).filename().string() + ">" });
    appendJobFlags(job, includeDir.string(), middle, keyMiddle);
    std::string name = fs::path(job.name).filename().string();
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    if (name.empty() || name[0] == '.' || name[0] == '-')
        name = "candidate" + name;
    if (fs::path(name).extension() != ".hip")
        name += ".hip";
    CachedCompile c;
    c.cacheDir = m_cacheDir;
    c.subdir = "hip-nvidia-so";
    c.key = core::sha256Hex("hone-hip-nvidia-compile-1\n" + version + "\n" + m_hipcc + "\n" + join(keyMiddle) + "\n"
        + core::sha256Hex(embedded::kKernelHeader) + "\n" + job.source);
    c.compiler = m_hipcc;
    c.middle = middle;
    c.sourceName = name;
    c.source = job.source;
    c.timeLimitSeconds = job.timeLimitSeconds;
    c.parseLog = [](CompileOutput& o) { o.messages = parseNvcc(o.log); };
    out = runCachedCompile(c);
    if (out.ok)
        out.resources = { { "platform", "nvidia" },
            { "note", "no AMDGPU code object: HIP on the NVIDIA platform (nvcc for " + m_arch
                    + "); registers, LDS and occupancy are the CUDA backend's to report" } };
    return out;
}

} // namespace hone::backends
