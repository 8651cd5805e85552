#include "backends/deploy.h"

#include "backends/remote_executor.h"
#include "backends/run_command.h"
#include "core/protocol.h"
#include "core/resources.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>


namespace hone::backends {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string lastLines(const std::string& s, size_t lines)
{
    size_t end = s.find_last_not_of("\n ");
    if (end == std::string::npos)
        return {};
    size_t pos = end + 1;
    for (size_t n = 0; n < lines && pos > 0; ++n) {
        size_t nl = s.rfind('\n', pos - 1);
        pos = nl == std::string::npos ? 0 : nl;
        if (nl == std::string::npos)
            break;
    }
    std::string t = s.substr(pos, end + 1 - pos);
    if (!t.empty() && t[0] == '\n')
        t.erase(0, 1);
    return t;
}

std::string readText(const fs::path& p)
{
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/// The words of a CMake command `head ... )` in `text` that end in `ext`, e.g. the sources of
/// `add_library(hone_worker_lib STATIC`.
std::vector<std::string> cmakeList(const std::string& text, const std::string& head, const std::string& ext)
{
    std::vector<std::string> out;
    size_t at = text.find(head);
    if (at == std::string::npos)
        return out;
    size_t end = text.find(')', at);
    std::stringstream ss(text.substr(at + head.size(), end - at - head.size()));
    std::string w;
    while (ss >> w)
        if (w.size() > ext.size() && w.compare(w.size() - ext.size(), ext.size(), ext) == 0)
            out.push_back(w);
    return out;
}

std::string joinQuoted(const std::vector<std::string>& words)
{
    std::string s;
    for (const auto& w : words)
        s += (s.empty() ? "" : " ") + shellQuote(w);
    return s;
}

/// A prefix as a shell word that expands "~" to the remote home.
std::string prefixWord(const std::string& prefix)
{
    if (prefix == "~")
        return "\"$HOME\"";
    if (prefix.rfind("~/", 0) == 0)
        return "\"$HOME\"/" + shellQuote(prefix.substr(2));
    return shellQuote(prefix);
}

struct WorkerSources {
    std::vector<std::string> files; // relative to the source dir
    std::vector<std::string> sources; // hone-worker's, hone_worker_lib's and hone_proto's .cpp files
    std::vector<std::string> cudaSources;
    std::string embeddedHeader; // generated/hone_embedded.h's text
    std::string version; // the project's VERSION
};

WorkerSources collectSources(const fs::path& src, const std::string& targetName)
{
    auto missing = [&](const std::string& what) {
        return DeployError(targetName, "sources", "(reading " + src.string() + ")", what,
            "pass --from DIR, a Hone source tree (the one this hone was built from)");
    };
    const std::string workerCMake = "backends/worker/CMakeLists.txt";
    for (const char* f : { "CMakeLists.txt", "core/CMakeLists.txt", "backends/CMakeLists.txt",
             "backends/worker/CMakeLists.txt", "backends/worker/hone_embedded.h.in" })
        if (!fs::is_regular_file(src / f))
            throw missing(std::string("no ") + f + " under " + src.string());
    WorkerSources ws;
    const std::string top = readText(src / "CMakeLists.txt");
    std::smatch m;
    if (std::regex_search(top, m, std::regex(R"(project\(\s*hone\s+VERSION\s+([0-9][0-9.]*))")))
        ws.version = m[1];
    const std::string wtext = readText(src / workerCMake);
    // hone-worker is its main() over hone_worker_lib: both lists are its sources.
    bool listed = true;
    for (const char* head : { "add_executable(hone-worker", "add_library(hone_worker_lib STATIC" }) {
        const auto list = cmakeList(wtext, head, ".cpp");
        listed = listed && !list.empty();
        for (const auto& f : list)
            ws.sources.push_back("backends/worker/" + f);
    }
    for (const auto& f : cmakeList(wtext, "target_sources(hone_worker_lib PRIVATE", ".cpp"))
        ws.cudaSources.push_back("backends/worker/" + f);
    for (const auto& f :
        cmakeList(readText(src / "core/CMakeLists.txt"), "add_library(hone_proto STATIC", ".cpp"))
        ws.sources.push_back("core/" + f);
    // The code-object analysis is plain C++ (built everywhere); the HIP backend's files are
    // shipped for a cmake build on a host with ROCm.
    for (const auto& f : cmakeList(wtext, "add_library(hone_hip_analysis STATIC", ".cpp"))
        ws.sources.push_back("backends/worker/" + f);
    std::vector<std::string> hipSources;
    for (const auto& f : cmakeList(wtext, "set(_hone_hip_sources", ".cpp"))
        hipSources.push_back("backends/worker/" + f);
    if (!listed || ws.sources.size() < 3)
        throw missing("cannot find the source lists of hone-worker, hone_worker_lib and hone_proto in " + workerCMake
            + " and core/CMakeLists.txt");

    // The embedded resources, and the header the worker build generates from them: shipped
    // pre-generated so that a plain c++ build needs no cmake.
    std::string header = readText(src / "backends/worker/hone_embedded.h.in");
    std::set<std::string> files = { "CMakeLists.txt", "core/CMakeLists.txt", "backends/CMakeLists.txt",
        workerCMake, "backends/worker/hone_embedded.h.in" };
    if (fs::is_regular_file(src / "CMakePresets.json"))
        files.insert("CMakePresets.json");
    static const std::regex readRe(R"(file\(READ \$\{_hone_resources\}/(\S+) (\w+)\))");
    for (auto it = std::sregex_iterator(wtext.begin(), wtext.end(), readRe); it != std::sregex_iterator();
         ++it) {
        const std::string rel = "resources/" + (*it)[1].str();
        if (!fs::is_regular_file(src / rel))
            throw missing("no " + rel + " (an embedded resource of the worker)");
        files.insert(rel);
        const std::string var = "@" + (*it)[2].str() + "@";
        for (size_t p; (p = header.find(var)) != std::string::npos;)
            header.replace(p, var.size(), readText(src / rel));
    }
    ws.embeddedHeader = header;

    // Sources and every header they include, transitively.
    std::vector<std::string> todo = ws.sources;
    todo.insert(todo.end(), ws.cudaSources.begin(), ws.cudaSources.end());
    todo.insert(todo.end(), hipSources.begin(), hipSources.end());
    static const std::regex includeRe(R"re(#\s*include\s+"([^"]+)")re");
    while (!todo.empty()) {
        const std::string rel = todo.back();
        todo.pop_back();
        if (!files.insert(rel).second)
            continue;
        if (!fs::is_regular_file(src / rel))
            throw missing("no " + rel + " (listed in the worker's CMake files or included by its sources)");
        const std::string text = readText(src / rel);
        const fs::path dir = fs::path(rel).parent_path();
        for (auto it = std::sregex_iterator(text.begin(), text.end(), includeRe);
             it != std::sregex_iterator(); ++it) {
            const std::string inc = (*it)[1];
            for (const fs::path& cand : { dir / inc, fs::path(inc), fs::path("resources/include") / inc }) {
                const std::string c = cand.lexically_normal().string();
                if (fs::is_regular_file(src / c)) {
                    if (!files.count(c))
                        todo.push_back(c);
                    break;
                }
            }
        }
    }
    ws.files.assign(files.begin(), files.end());
    return ws;
}

/// How commands reach the target: ssh to its host, or srun on its partition.
class Remote {
public:
    explicit Remote(const TargetSpec& t)
        : m_t(t)
    {
    }

    bool slurm() const { return m_t.executor == "slurm"; }

    std::string describe() const
    {
        return slurm() ? "slurm" + (m_t.partition.empty() ? std::string() : " partition " + m_t.partition)
                       : "ssh " + m_t.host;
    }

    /// The command line that runs `script` with sh on the target.
    std::vector<std::string> shell(const std::string& script) const
    {
        std::vector<std::string> a;
        if (slurm()) {
            a = { "srun", "--ntasks=1", "--quiet", "--job-name", "hone-deploy-" + std::to_string(getpid()),
                "--time", m_t.timeLimit };
            if (!m_t.partition.empty())
                a.insert(a.end(), { "--partition", m_t.partition });
            a.insert(a.end(), m_t.extraArgs.begin(), m_t.extraArgs.end());
            a.insert(a.end(), { "--", "sh", "-c", script });
        } else {
            a = { "ssh" };
            if (!m_t.sshConfig.empty())
                a.insert(a.end(), { "-F", m_t.sshConfig });
            a.insert(
                a.end(), { "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5" });
            a.insert(a.end(), m_t.extraArgs.begin(), m_t.extraArgs.end());
            a.insert(a.end(), { m_t.host, "--", "exec sh -c " + shellQuote(script) });
        }
        return a;
    }

    /// Runs `script` on the target; throws DeployError naming `step` when it fails.
    std::string run(
        const std::string& step, const std::string& script, double timeout, const std::string& fix) const
    {
        CommandResult r = runCommand(shell(script), timeout);
        if (r.code != 0) {
            DeployError e(m_t.name, step, describeCommand(script),
                r.timedOut ? "timed out after " + std::to_string(static_cast<int>(timeout)) + " s\n"
                        + lastLines(r.output, 20)
                           : lastLines(r.output, 20),
                fixFor(r, fix));
            e.unreachable = unreachable(r);
            throw e;
        }
        return r.output;
    }

    std::string describeCommand(const std::string& script) const
    {
        std::string s = script.size() > 700 ? script.substr(0, 700) + " ..." : script;
        return (slurm() ? "srun ... -- sh -c " : "ssh " + m_t.host + " -- sh -c ") + shellQuote(s);
    }

    /// ssh's own failure (status 255) or srun's: the command never ran on the target.
    bool unreachable(const CommandResult& r) const
    {
        return slurm() ? r.output.find("srun: error") != std::string::npos : r.code == 255;
    }

    std::string fixFor(const CommandResult& r, const std::string& fix) const
    {
        if (!slurm() && r.code == 255)
            return "ssh could not reach " + m_t.host + "; check that 'ssh " + m_t.host
                + " true' works without a password (keys, ssh_config), then deploy again";
        if (slurm() && r.output.find("srun: error") != std::string::npos)
            return "srun could not run a step; check the partition and 'srun true' (SLURM_CONF, --account in "
                   "extra_args)";
        return fix;
    }

private:
    const TargetSpec& m_t;
};

bool cmakeUsable(const std::string& versionLine)
{
    std::smatch m;
    if (!std::regex_search(versionLine, m, std::regex(R"((\d+)\.(\d+))")))
        return false;
    const int major = std::stoi(m[1]), minor = std::stoi(m[2]);
    return major > 3 || (major == 3 && minor >= 25);
}

std::string probeValue(const std::string& out, const std::string& key)
{
    std::stringstream ss(out);
    std::string line;
    while (std::getline(ss, line))
        if (line.rfind(key + "=", 0) == 0)
            return line.substr(key.size() + 1);
    return {};
}

} // namespace

DeployError::DeployError(const std::string& target, const std::string& stepName, const std::string& command,
    const std::string& outputTail, const std::string& fix)
    : std::runtime_error("deploy to target '" + target + "' failed at step '" + stepName
        + "'\n  command: " + command + "\n  output (last lines):\n    "
        + std::regex_replace(
            outputTail.empty() ? std::string("(none)") : outputTail, std::regex("\n"), "\n    ")
        + "\n  fix: " + fix)
    , step(stepName)
{
}

fs::path defaultWorkerSourceDir()
{
    // The source tree whose resources/ this hone uses (a build tree links share/hone to it).
    for (const fs::path& resources : core::resourceDirs()) {
        std::error_code ec;
        const fs::path dir = fs::canonical(resources, ec).parent_path();
        if (!ec && fs::is_regular_file(dir / "backends" / "worker" / "CMakeLists.txt", ec))
            return dir;
    }
    return {};
}

std::vector<std::string> workerSourceFiles(const fs::path& sourceDir)
{
    return collectSources(sourceDir, "?").files;
}

DeployResult deployWorker(const TargetSpec& target, const DeployOptions& options)
{
    const auto t0 = Clock::now();
    auto log = [&](const std::string& line) {
        if (options.log)
            options.log(line);
    };
    if (target.executor != "ssh" && target.executor != "slurm")
        throw DeployError(target.name, "target", "(none)",
            "target '" + target.name + "' has executor '" + target.executor + "'",
            "deploy is for ssh and slurm targets; a local target uses the hone-worker built beside hone");
    if (options.buildWith != "auto" && options.buildWith != "cmake" && options.buildWith != "c++")
        throw DeployError(target.name, "options", "(none)", "--build-with " + options.buildWith,
            "use --build-with auto, cmake or c++");
    const fs::path src = options.sourceDir.empty() ? defaultWorkerSourceDir() : options.sourceDir;
    if (src.empty())
        throw DeployError(target.name, "sources", "(none)",
            "the source tree this hone was built from is gone",
            "pass --from DIR, a Hone source tree of the same version as this hone");
    const WorkerSources ws = collectSources(fs::absolute(src), target.name);
    const Remote remote(target);
    const std::string prefix = options.prefix.empty() ? "~/.local/hone" : options.prefix;

    // 1. probe: the tools there, and the prefix as an absolute path.
    const std::string probeScript = "P=" + prefixWord(prefix)
        + "; mkdir -p \"$P\" && cd \"$P\" && echo \"prefix=$(pwd -P)\"; "
          "echo \"cxx=$(command -v \"${CXX:-c++}\" || true)\"; "
          "echo \"cmake=$(cmake --version 2>/dev/null | head -n 1)\"; "
          "echo \"nproc=$(nproc 2>/dev/null || echo 1)\"; "
          "echo \"host=$(hostname)\"; "
          "for d in /usr/include /usr/local/include; do [ -f $d/nlohmann/json.hpp ] && echo json=$d; done; "
          "true";
    const std::string probe = remote.run("probe", probeScript, 120,
        "make sure the target is reachable and the prefix " + prefix
            + " can be created there (--prefix DIR)");
    const std::string root = probeValue(probe, "prefix");
    if (root.empty() || root[0] != '/')
        throw DeployError(target.name, "probe", remote.describeCommand(probeScript), lastLines(probe, 20),
            "could not resolve the prefix " + prefix + " on the target; pass --prefix /absolute/dir");
    const std::string cxx = probeValue(probe, "cxx");
    const std::string cmake = probeValue(probe, "cmake");
    int jobs = std::max(1, std::atoi(probeValue(probe, "nproc").c_str()));
    std::string method = options.buildWith;
    if (method == "auto")
        method = cmakeUsable(cmake) ? "cmake" : "c++";
    if (cxx.empty())
        throw DeployError(target.name, "probe", remote.describeCommand(probeScript), lastLines(probe, 20),
            "no C++ compiler on the target (c++ or $CXX); install one with C++20 support (Debian: apt "
            "install g++)");
    if (method == "cmake" && !cmakeUsable(cmake))
        throw DeployError(target.name, "probe", remote.describeCommand(probeScript),
            "cmake: " + (cmake.empty() ? "none" : cmake),
            "the worker build needs cmake >= 3.25; install it, or use --build-with c++ (or auto)");
    log("probe: " + remote.describe() + " (" + probeValue(probe, "host") + "): " + cxx + ", cmake "
        + (cmake.empty() ? "none" : cmake.substr(cmake.rfind(' ') + 1)) + ", " + std::to_string(jobs)
        + " CPUs" + (probeValue(probe, "json").empty() ? ", nlohmann/json.hpp not in /usr/include" : "")
        + "; prefix " + root);

    // 2. upload: the sources as one tar stream (ssh: over the same connection options; Slurm:
    // into the prefix, on a filesystem the nodes share).
    char tmpl[] = "/tmp/hone-deploy-XXXXXX";
    if (!mkdtemp(tmpl))
        throw DeployError(
            target.name, "upload", "mkdtemp /tmp/hone-deploy-XXXXXX", strerror(errno), "check /tmp");
    const fs::path gen = tmpl;
    struct Cleanup {
        fs::path dir;
        ~Cleanup()
        {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    } cleanup { gen };
    fs::create_directories(gen / "generated");
    std::ofstream(gen / "generated" / "hone_embedded.h") << ws.embeddedHeader;
    const std::string srcDir = root + "/src/hone-worker";
    const std::string tar = "tar -cf - -C " + shellQuote(fs::absolute(src).string()) + " "
        + joinQuoted(ws.files) + " -C " + shellQuote(gen.string()) + " generated/hone_embedded.h";
    const std::string unpack = "mkdir -p " + shellQuote(srcDir) + " && tar -xf - -C " + shellQuote(srcDir);
    const std::string pipeline
        = tar + " | " + (remote.slurm() ? "sh -c " + shellQuote(unpack) : joinQuoted(remote.shell(unpack)));
    {
        CommandResult r = runCommand({ "sh", "-c", pipeline }, 600);
        if (r.code != 0)
            throw DeployError(target.name, "upload",
                pipeline.size() > 700 ? pipeline.substr(0, 700) + " ..." : pipeline, lastLines(r.output, 20),
                remote.slurm()
                    ? "a Slurm deploy writes the sources to the prefix here and builds them on a node: "
                      "the prefix must be on a filesystem both share and writable here (--prefix DIR)"
                    : "check that " + srcDir + " is writable on " + target.host + " (--prefix DIR)");
    }
    log("upload: " + std::to_string(ws.files.size() + 1) + " files to " + srcDir);

    // 3. build: cmake's worker-only build, or one c++ command line over the same source list.
    const std::string buildDir = root + "/build/hone-worker";
    std::string script = "set -e; S=" + shellQuote(srcDir) + "; B=" + shellQuote(buildDir)
        + "; [ -f \"$S/CMakeLists.txt\" ] || { echo \"hone-deploy: $S/CMakeLists.txt is not on $(hostname): "
          "the sources "
          "were not uploaded there\" >&2; exit 3; }; mkdir -p \"$B\"; ";
    std::string built;
    if (method == "cmake") {
        script += "cmake -S \"$S\" -B \"$B\" -DCMAKE_BUILD_TYPE=Release -DHONE_WORKER_ONLY=ON "
                  "-DHONE_WARNINGS_AS_ERRORS=OFF; cmake --build \"$B\" --target hone-worker -j "
            + std::to_string(jobs);
        built = buildDir + "/bin/hone-worker";
    } else {
        std::vector<std::string> plain = ws.sources;
        script += "cd \"$S\"; CUDA=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}; "
                  "if [ -f \"$CUDA/include/cuda.h\" ]; then set -- -DHONE_WITH_CUDA=1 -isystem "
                  "\"$CUDA/include\" "
            + joinQuoted(ws.cudaSources)
            + "; echo \"hone-deploy: CUDA backend on ($CUDA)\"; else set --; fi; "
              "${CXX:-c++} -std=c++20 -O2 -DNDEBUG "
            + shellQuote("-DHONE_WORKER_VERSION=\"" + ws.version + "\"")
            + " -I. -Ibackends/worker -Igenerated -Iresources/include $CXXFLAGS " + joinQuoted(plain)
            + " \"$@\" -o \"$B/hone-worker\" -pthread -ldl";
        built = buildDir + "/hone-worker";
    }
    log("build: " + method + " on " + remote.describe() + " (" + std::to_string(jobs) + " jobs) ...");
    const auto tb = Clock::now();
    remote.run("build", script, 3600,
        method == "cmake" ? "fix the error above on the target (a C++20 compiler and nlohmann-json are "
                            "needed: Debian: apt install "
                            "g++ nlohmann-json3-dev), or try --build-with c++"
                          : "fix the error above on the target (a C++20 compiler and nlohmann-json are "
                            "needed: Debian: apt install "
                            "g++ nlohmann-json3-dev; set CXX or CXXFLAGS=-I...), or try --build-with cmake");
    log("build: done in "
        + std::to_string(static_cast<int>(std::chrono::duration<double>(Clock::now() - tb).count()))
        + " s: " + built);

    // 4. check: a hello through the target's own executor, before anything is installed.
    TargetSpec checked = target;
    checked.worker = built;
    checked.persistent = false;
    RemoteExecutorConfig cfg = remoteConfig(checked);
    cfg.retries = 1;
    nlohmann::json hello;
    try {
        RemoteExecutor exec(cfg);
        hello = exec.hello();
    } catch (const std::exception& e) {
        std::string why = e.what();
        const bool mismatch = why.find("protocol version mismatch") != std::string::npos;
        throw DeployError(target.name, "check", remote.describeCommand(built + " --stdio") + " (a hello)",
            why,
            mismatch
                ? "the sources in " + fs::absolute(src).string()
                    + " speak another protocol than this hone; deploy from the source tree this hone was "
                      "built from "
                      "(--from), or rebuild hone from these sources; nothing was installed"
                : "run the built worker by hand on the target (" + built + " --stdio) to see why it fails");
    }
    log("check: protocol " + std::to_string(hello.value("protocol", 0)) + ", worker "
        + hello.value("version", std::string("?")));

    // 5. install: replace PREFIX/bin/hone-worker in one rename, so running workers keep theirs.
    const std::string installed = root + "/bin/hone-worker";
    const std::string install = "set -e; mkdir -p " + shellQuote(root + "/bin") + "; cp -f "
        + shellQuote(built) + " " + shellQuote(installed + ".new") + "; mv -f "
        + shellQuote(installed + ".new") + " " + shellQuote(installed);
    remote.run(
        "install", install, 300, "check that " + root + "/bin is writable on the target (--prefix DIR)");
    log("install: " + installed);

    DeployResult r;
    r.workerPath = installed;
    r.method = method;
    r.hello = hello;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
}

} // namespace hone::backends
