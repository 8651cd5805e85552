#include "app/targets_cli.h"

#include "backends/local_executor.h"
#include "backends/remote_executor.h"
#include "backends/targets.h"
#include "core/protocol.h"

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
    const std::string& localWorker, const std::string& localCacheDir)
{
    if (t.executor == "local") {
        backends::LocalExecutorConfig cfg;
        cfg.workerPath = t.worker.empty() ? localWorker : t.worker;
        cfg.cacheDir = t.cacheDir.empty() ? localCacheDir : t.cacheDir;
        cfg.parallel = parallel > 0 ? parallel : t.parallel;
        const bool gpu = t.device == "cuda";
        cfg.limits.memoryMiB = gpu ? 16384 : 4096;
        cfg.limits.addressSpaceLimit = !gpu;
        return std::make_unique<backends::LocalExecutor>(cfg);
    }
    backends::RemoteExecutorConfig cfg = backends::remoteConfig(t);
    if (parallel > 0)
        cfg.parallel = parallel;
    return std::make_unique<backends::RemoteExecutor>(cfg);
}

} // namespace

CLI::App* addTargetsCommand(CLI::App& app, TargetsCliOptions& opts)
{
    app.add_option("--targets", opts.file,
        "targets file (default $HONE_TARGETS or ~/.config/hone/targets.toml; docs/REMOTE.md)");
    auto* targets = app.add_subcommand("targets", "remote evaluation targets: ssh hosts, Slurm partitions");
    targets->require_subcommand(1);
    opts.check = targets->add_subcommand("check",
        "probe each target: worker present, protocol version, devices, round-trip latency");
    opts.check->add_option("name", opts.names, "targets to probe (default: all)");
    opts.check->add_flag("--json", opts.json, "print one JSON object per target");
    return targets;
}

int runTargets(const TargetsCliOptions& opts, const std::string& localWorker)
{
    const std::string file = fileOf(opts.file);
    auto all = backends::readTargets(file);
    std::vector<backends::TargetSpec> chosen;
    for (const auto& n : opts.names) {
        auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.name == n; });
        if (it == all.end())
            throw std::runtime_error("no target '" + n + "' in " + file);
        chosen.push_back(*it);
    }
    if (opts.names.empty())
        chosen = all;
    if (chosen.empty())
        throw std::runtime_error(file + " names no targets; add a [targets.NAME] table (docs/REMOTE.md)");
    int bad = 0;
    for (const auto& t : chosen) {
        nlohmann::json row = {{"target", t.name}, {"executor", t.executor}};
        try {
            auto exec = executorFor(t, 1, localWorker, "");
            auto start = std::chrono::steady_clock::now();
            nlohmann::json h = exec->hello();
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::string devices;
            for (const auto& d : h.value("devices", nlohmann::json::array()))
                devices += (devices.empty() ? "" : ", ") + d.value("name", d.value("kind", d.dump()));
            row.update({{"ok", true}, {"protocol", h.value("protocol", 0)}, {"worker_version", h.value("version", "")},
                {"devices", h.value("devices", nlohmann::json::array())}, {"compiler", h.value("compiler", "")},
                {"latency_ms", ms}});
            if (opts.json)
                std::cout << row.dump() << "\n";
            else
                std::printf("%-16s ok      %s, protocol %d, worker %s, %.0f ms round trip; devices: %s\n",
                    t.name.c_str(), t.executor.c_str(), h.value("protocol", 0),
                    h.value("version", std::string("?")).c_str(), ms, devices.c_str());
        } catch (const std::exception& e) {
            ++bad;
            row.update({{"ok", false}, {"error", e.what()}});
            if (opts.json)
                std::cout << row.dump() << "\n";
            else
                std::printf("%-16s FAILED  %s\n", t.name.c_str(), e.what());
        }
    }
    return bad ? 3 : 0;
}

std::unique_ptr<core::Executor> makeTargetExecutor(const std::string& file, const std::string& names, int parallel,
    const std::string& localWorker, const std::string& localCacheDir)
{
    const std::string f = fileOf(file);
    auto all = backends::readTargets(f);
    std::string known;
    for (const auto& t : all)
        known += (known.empty() ? "" : ", ") + t.name;
    std::vector<backends::TargetPool::Member> members;
    std::stringstream ss(names);
    std::string name;
    while (std::getline(ss, name, ',')) {
        auto it = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.name == name; });
        if (it == all.end())
            throw std::runtime_error(
                "no target '" + name + "' in " + f + (known.empty() ? "; it names none" : "; it has " + known));
        members.push_back({name, executorFor(*it, parallel, localWorker, localCacheDir)});
    }
    if (members.empty())
        throw std::runtime_error("--on: expected NAME or NAME,NAME,... of targets in " + f);
    if (members.size() == 1)
        return std::move(members[0].executor);
    return std::make_unique<backends::TargetPool>(std::move(members));
}

} // namespace hone::app
