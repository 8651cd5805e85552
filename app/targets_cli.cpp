#include "app/targets_cli.h"

#include "app/exit_code.h"

#include "backends/deploy.h"
#include "backends/local_executor.h"
#include "backends/remote_executor.h"
#include "backends/target_health.h"
#include "backends/targets.h"
#include "core/protocol.h"
#include "core/utf8.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

namespace hone::app {
namespace {

std::string fileOf(const std::string& file)
{
    return file.empty() ? backends::defaultTargetsPath().string() : file;
}

std::unique_ptr<core::Executor> executorFor(const backends::TargetSpec& t, int parallel,
    const std::string& localWorker, const std::string& localCacheDir, const std::filesystem::path& healthFile)
{
    if (t.executor == "local") {
        backends::LocalExecutorConfig cfg;
        cfg.workerPath = t.worker.empty() ? localWorker : t.worker;
        cfg.cacheDir = t.cacheDir.empty() ? localCacheDir : t.cacheDir;
        cfg.parallel = parallel > 0 ? parallel : t.parallel;
        const bool gpu = t.device == "cuda" || t.device == "hip";
        cfg.limits.memoryMiB = gpu ? 16384 : 4096;
        cfg.limits.addressSpaceLimit = !gpu;
        return std::make_unique<backends::LocalExecutor>(cfg);
    }
    backends::RemoteExecutorConfig cfg = backends::remoteConfig(t, healthFile);
    if (parallel > 0)
        cfg.parallel = parallel;
    return std::make_unique<backends::RemoteExecutor>(cfg);
}

/// Reads the health file once, warning on stderr (naming it) when it is corrupt.
std::map<std::string, backends::TargetHealth> loadHealth(const backends::TargetHealthFile& file)
{
    std::string warning;
    auto all = file.load(&warning);
    if (!warning.empty())
        std::fprintf(stderr, "hone: warning: %s\n", warning.c_str());
    return all;
}

std::string describeHealth(const backends::TargetHealth& h)
{
    std::string s = h.lastProbe.empty() ? "never probed" : "last probe " + h.lastProbe + (h.lastProbeOk ? " ok" : " FAILED");
    s += ", " + std::to_string(h.consecutiveInfraFailures) + " consecutive infrastructure failure(s)";
    if (!h.lastError.empty())
        s += "; last error " + h.lastErrorAt + ": " + h.lastError;
    return s;
}

nlohmann::json healthJson(const backends::TargetHealth& h)
{
    return {{"healthy", h.healthy()}, {"last_probe", h.lastProbe}, {"last_probe_ok", h.lastProbeOk},
        {"last_ok", h.lastOk}, {"consecutive_infra_failures", h.consecutiveInfraFailures},
        {"last_error", h.lastError}, {"last_error_at", h.lastErrorAt}};
}

/// `targets deploy`: prints each step, then the worker's path to put in the targets file.
int runDeploy(const TargetsCliOptions& opts, const std::string& file, const std::vector<backends::TargetSpec>& all)
{
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.name == opts.deployTarget; });
    if (it == all.end())
        throw CliError(ExitCode::Usage, "no target '" + opts.deployTarget + "' in " + file);
    backends::DeployOptions d;
    d.sourceDir = opts.deployFrom;
    d.prefix = opts.deployPrefix;
    d.buildWith = opts.deployBuildWith;
    d.log = [](const std::string& line) {
        std::printf("  %s\n", line.c_str());
        std::fflush(stdout);
    };
    std::printf("deploying hone-worker to target '%s' (%s)\n", it->name.c_str(), it->executor.c_str());
    std::fflush(stdout);
    try {
        const backends::DeployResult r = backends::deployWorker(*it, d);
        std::printf("deployed in %.0f s: %s (built with %s); protocol %d (this hone speaks %d), worker %s\n",
            r.seconds, r.workerPath.c_str(), r.method.c_str(), r.hello.value("protocol", 0),
            core::protocol::kVersion, r.hello.value("version", std::string("?")).c_str());
        if (it->worker == r.workerPath)
            std::printf("%s already names this worker for target '%s'\n", file.c_str(), it->name.c_str());
        else
            std::printf("set worker = \"%s\" in [targets.%s] of %s (the file was not changed)\n",
                r.workerPath.c_str(), it->name.c_str(), file.c_str());
        return 0;
    } catch (const backends::DeployError& e) {
        std::fprintf(stderr, "hone: %s\n", e.what());
        return toInt(e.unreachable ? ExitCode::TargetUnreachable : ExitCode::Environment);
    }
}

} // namespace

CLI::App* addTargetsCommand(CLI::App& app, TargetsCliOptions& opts)
{
    app.add_option("--targets", opts.file,
        "targets file (default $HONE_TARGETS or ~/.config/hone/targets.toml; docs/REMOTE.md)");
    auto* targets = app.add_subcommand("targets", "remote evaluation targets: ssh hosts, Slurm partitions");
    targets->require_subcommand(1);
    opts.check = targets->add_subcommand("check",
        "probe each target: worker present, protocol version, devices, round-trip latency, stored health");
    opts.check->add_option("name", opts.names, "targets to probe (default: all)");
    opts.check->add_flag("--json", opts.json, "print one JSON object per target");
    opts.check->add_flag("--ceilings", opts.ceilings,
        "also report the calibrated ceilings (measured on the target the first time, then cached there)");
    opts.deploy = targets->add_subcommand("deploy",
        "build hone-worker on the target from this source tree, check it and install it in PREFIX/bin");
    opts.deploy->add_option("target", opts.deployTarget, "the ssh or slurm target")->required();
    opts.deploy->add_option("--from", opts.deployFrom, "Hone source tree (default: the source tree of a build tree's resources; an installed hone needs --from)");
    opts.deploy->add_option("--prefix", opts.deployPrefix,
        "install prefix on the target (default ~/.local/hone; Slurm: on a filesystem the nodes share)");
    opts.deploy->add_option("--build-with", opts.deployBuildWith, "auto (cmake >= 3.25, else c++), cmake or c++")
        ->check(CLI::IsMember({"auto", "cmake", "c++"}));
    return targets;
}

int runTargets(const TargetsCliOptions& opts, const std::string& localWorker)
{
    const std::string file = fileOf(opts.file);
    auto all = backends::readTargets(file);
    if (opts.deploy && *opts.deploy)
        return runDeploy(opts, file, all);
    std::vector<backends::TargetSpec> chosen;
    for (const auto& n : opts.names) {
        auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.name == n; });
        if (it == all.end())
            throw CliError(ExitCode::Usage, "no target '" + n + "' in " + file);
        chosen.push_back(*it);
    }
    if (opts.names.empty())
        chosen = all;
    if (chosen.empty())
        throw CliError(ExitCode::Input, file + " names no targets; add a [targets.NAME] table (docs/REMOTE.md)");
    const backends::TargetHealthFile healthFile(backends::defaultHealthPath());
    const auto stored = loadHealth(healthFile);
    int bad = 0;
    int unreachable = 0; // of the bad ones, those ssh or Slurm could not reach
    for (const auto& t : chosen) {
        nlohmann::json row = {{"target", t.name}, {"executor", t.executor}};
        const bool remote = t.executor != "local";
        std::string healthLine;
        if (remote) {
            auto h = stored.find(t.name);
            const backends::TargetHealth before = h == stored.end() ? backends::TargetHealth {} : h->second;
            row["health"] = healthJson(before); // as earlier sessions left it; this probe updates the file
            healthLine = describeHealth(before);
        }
        try {
            auto exec = executorFor(t, 1, localWorker, "", healthFile.path());
            auto start = std::chrono::steady_clock::now();
            nlohmann::json h = exec->hello();
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::string devices;
            for (const auto& d : h.value("devices", nlohmann::json::array()))
                devices += (devices.empty() ? "" : ", ") + d.value("name", d.value("kind", d.dump()));
            row.update({{"ok", true}, {"protocol", h.value("protocol", 0)}, {"worker_version", h.value("version", "")},
                {"devices", h.value("devices", nlohmann::json::array())}, {"compiler", h.value("compiler", "")},
                {"latency_ms", ms}, {"persistent", t.persistent}});
            // An AMD target: its GPU and ROCm, or why the worker sees none, and whether the GPU is
            // the architecture the targets file names.
            std::string hipLine;
            if (t.device == "hip") {
                std::string gpu;
                std::string arch;
                for (const auto& d : h.value("devices", nlohmann::json::array()))
                    if (d.value("kind", std::string()) == "hip") {
                        gpu = d.value("name", std::string("?"));
                        arch = d.value("arch", std::string());
                    }
                row["hip"] = {{"gpu", gpu}, {"arch", arch}, {"rocm", h.value("rocm", std::string())},
                    {"hipcc", h.value("hipcc", std::string())}, {"unavailable", h.value("hip_unavailable", std::string())}};
                hipLine = "ROCm " + (h.value("rocm", std::string()).empty() ? std::string("?") : h.value("rocm", std::string()))
                    + ", hipcc " + (h.value("hipcc", std::string()).empty() ? std::string("missing") : h.value("hipcc", std::string()))
                    + "; " + (gpu.empty() ? "no GPU: " + h.value("hip_unavailable", std::string("?")) : "GPU " + gpu + " (" + arch + ")");
                if (!t.hipArch.empty() && !arch.empty() && arch != t.hipArch) {
                    ++bad;
                    hipLine += "; MISMATCH: the targets file says hip_arch = " + t.hipArch;
                    row["hip"]["mismatch"] = true;
                }
            }
            std::string ceilingLine;
            if (opts.ceilings) {
                nlohmann::json c = exec->ceilings(t.device);
                for (const char* k : {"protocol", "type", "id"})
                    c.erase(k);
                row["ceilings"] = c;
                char buf[320];
                std::snprintf(buf, sizeof buf, "%.1f GB/s copy, %.1f GFLOP/s FMA", c.value("peak_gbps", 0.0),
                    c.value("peak_gflops", 0.0));
                ceilingLine = std::string(buf);
                if (c.value("peak_tensor_gflops", 0.0) > 0) {
                    std::snprintf(buf, sizeof buf, ", %.0f GFLOP/s tensor", c.value("peak_tensor_gflops", 0.0));
                    ceilingLine += buf;
                }
                ceilingLine += c.value("cached", false) ? " (cached on the target)" : " (measured now)";
                if (const std::string m = c.value("method", std::string()); !m.empty())
                    ceilingLine += "; " + m;
            }
            if (opts.json) {
                std::cout << core::dumpJson(row) << "\n";
            } else {
                std::printf("%-16s ok      %s%s, protocol %d, worker %s, %.0f ms round trip; devices: %s\n",
                    t.name.c_str(), t.executor.c_str(), t.persistent ? " (persistent)" : "", h.value("protocol", 0),
                    h.value("version", std::string("?")).c_str(), ms, devices.c_str());
                if (!hipLine.empty())
                    std::printf("%-16s         hip: %s\n", "", hipLine.c_str());
                if (!ceilingLine.empty())
                    std::printf("%-16s         ceilings %s: %s\n", "", t.device.c_str(), ceilingLine.c_str());
            }
        } catch (const std::exception& e) {
            ++bad;
            unreachable += dynamic_cast<const backends::TargetUnreachable*>(&e) ? 1 : 0;
            row.update({{"ok", false}, {"error", e.what()}});
            if (opts.json)
                std::cout << core::dumpJson(row) << "\n";
            else
                std::printf("%-16s FAILED  %s\n", t.name.c_str(), e.what());
        }
        if (!opts.json && !healthLine.empty())
            std::printf("%-16s         health before this check: %s\n", "", healthLine.c_str());
        std::fflush(stdout);
    }
    // One unreachable target decides the status: reaching it again needs no change to Hone.
    return toInt(unreachable ? ExitCode::TargetUnreachable : bad ? ExitCode::Environment : ExitCode::Ok);
}

std::unique_ptr<core::Executor> makeTargetExecutor(const std::string& file, const std::string& names, int parallel,
    const std::string& localWorker, const std::string& localCacheDir)
{
    const std::string f = fileOf(file);
    auto all = backends::readTargets(f);
    std::string known;
    for (const auto& t : all)
        known += (known.empty() ? "" : ", ") + t.name;
    const backends::TargetHealthFile healthFile(backends::defaultHealthPath());
    const auto stored = loadHealth(healthFile);
    std::vector<backends::TargetPool::Member> members;
    std::stringstream ss(names);
    std::string name;
    while (std::getline(ss, name, ',')) {
        auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.name == name; });
        if (it == all.end())
            throw CliError(ExitCode::Usage,
                "no target '" + name + "' in " + f + (known.empty() ? "; it names none" : "; it has " + known));
        if (auto h = stored.find(name); h != stored.end() && !h->second.healthy())
            std::fprintf(stderr, "hone: target '%s' was unhealthy (%s); probing it before it gets work\n",
                name.c_str(), describeHealth(h->second).c_str());
        members.push_back({name, executorFor(*it, parallel, localWorker, localCacheDir, healthFile.path())});
    }
    if (members.empty())
        throw CliError(ExitCode::Usage, "--on: expected NAME or NAME,NAME,... of targets in " + f);
    if (members.size() == 1)
        return std::move(members[0].executor);
    return std::make_unique<backends::TargetPool>(std::move(members));
}

} // namespace hone::app
