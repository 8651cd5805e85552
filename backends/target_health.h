#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace hone::backends {

/// What is known about one target across sessions (docs/REMOTE.md, "Health").
struct TargetHealth {
    std::string lastProbe; // UTC time of the last hello through the target; empty: never
    bool lastProbeOk = false;
    std::string lastOk; // UTC time of the last request the target served
    int consecutiveInfraFailures = 0; // attempts lost to the infrastructure since then
    std::string lastError; // the last such failure, or the last failed probe
    std::string lastErrorAt;

    /// Unhealthy targets are probed (a hello) before they get work in a later session.
    bool healthy() const { return consecutiveInfraFailures == 0 && (lastProbe.empty() || lastProbeOk); }
};

/// A small JSON file of TargetHealth by target name, shared by sessions and processes: every
/// change is read-modify-write under a lock file, written to a temporary file and renamed.
/// A file that cannot be parsed is reported (naming it) and then treated as empty; the next
/// change replaces it.
class TargetHealthFile {
public:
    explicit TargetHealthFile(std::filesystem::path file);

    const std::filesystem::path& path() const { return m_file; }

    /// Every target's entry; a missing file is empty. When the file is unreadable or corrupt,
    /// `warning` (if given) says so, naming the file, and the result is empty.
    std::map<std::string, TargetHealth> load(std::string* warning = nullptr) const;

    /// The entry of `name`, or a default one.
    TargetHealth get(const std::string& name, std::string* warning = nullptr) const;

    /// Applies `change` to the entry of `name` and writes the file. False (and `error` set) when
    /// it cannot be written; health is advisory, so callers go on.
    bool update(const std::string& name, const std::function<void(TargetHealth&)>& change,
        std::string* error = nullptr) const;

private:
    std::filesystem::path m_file;
};

/// `$HONE_CACHE_DIR/targets-health.json`, else `$XDG_CACHE_HOME/hone/...`, else `~/.cache/hone/...`.
std::filesystem::path defaultHealthPath();

/// The current time as `2026-11-22T10:04:05Z`.
std::string utcNow();

} // namespace hone::backends
