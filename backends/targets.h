#pragma once

#include "backends/remote_executor.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::backends {

/// One `[targets.NAME]` table of a targets file (docs/REMOTE.md).
struct TargetSpec {
    std::string name;
    std::string executor = "local";  // local, ssh, slurm
    std::string host;                // ssh
    std::string sshConfig;           // ssh: -F FILE
    std::string partition;           // slurm
    int gpusPerTask = 0;             // slurm: --gres=gpu:N
    std::string timeLimit = "30";    // slurm: --time
    int queueTimeout = 1800;         // slurm: seconds a job may wait in the queue (0: no limit)
    std::vector<std::string> extraArgs; // more ssh or srun options
    std::string worker;              // hone-worker on the target (empty: "hone-worker", or the local default)
    std::string cacheDir;            // on the target
    std::string device = "cpu";      // cpu, cuda, hip
    std::string hipArch;             // hip: the gfx target the host's GPU must be (gfx90a, gfx942...)
    int parallel = 1;
    int retries = 2;
    bool persistent = false;         // one worker serves many requests (docs/REMOTE.md)
};

/// A targets file that is not valid: `FILE:LINE:COL: field 'X': msg; expected Y`.
class TargetsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Reads a targets file; throws TargetsError naming the place and what was expected.
std::vector<TargetSpec> readTargets(const std::filesystem::path& file);
std::vector<TargetSpec> parseTargets(std::string_view text, const std::string& fileName);

/// `$HONE_TARGETS`, else `$XDG_CONFIG_HOME/hone/targets.toml`, else `~/.config/hone/targets.toml`.
std::filesystem::path defaultTargetsPath();

/// The remote executor's configuration for an ssh or slurm target; `healthFile` non-empty keeps
/// the target's health there across sessions (target_health.h).
RemoteExecutorConfig remoteConfig(const TargetSpec& t, const std::filesystem::path& healthFile = {});

/// Seconds of a Slurm `--time` value (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS);
/// -1 for UNLIMITED or a value it cannot read.
double slurmTimeLimitSeconds(const std::string& limit);

/// Several targets as one executor, for one session split across them. Only compatible
/// targets join: hello() refuses targets whose devices differ (naming both), so every result
/// the engine records under the session's device was measured on that device, baseline and
/// candidate in the same worker. Jobs go to the target with the most free slots; each result
/// carries `"target": NAME`. A target whose job was lost to the infrastructure (worker_error)
/// is benched for `benchSeconds`, then tried again; the session goes on with the others.
class TargetPool final : public core::Executor {
public:
    struct Member {
        std::string name;
        std::unique_ptr<core::Executor> executor;
    };
    explicit TargetPool(std::vector<Member> members, double benchSeconds = 30);

    nlohmann::json hello() override;
    nlohmann::json ceilings(const std::string& kind) override;
    int slotCount() const override;
    void submit(core::EvalJob job) override;
    std::optional<core::EvalDone> next(std::chrono::milliseconds timeout) override;
    void cancelAll() override;

private:
    struct State {
        Member member;
        int inFlight = 0;
        std::chrono::steady_clock::time_point benchedUntil {};
    };
    std::vector<State> m_states;
    std::map<std::string, size_t> m_owner; // job id -> member
    double m_benchSeconds;
    size_t m_nextPoll = 0;
    nlohmann::json m_hello;
};

} // namespace hone::backends
