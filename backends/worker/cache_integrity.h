#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

/// The worker's cache is trusted only as far as its content hashes (docs/THREAT_MODEL.md,
/// "Trusted cache"). Every entry the worker writes (a compiled object, cached inputs or reference
/// outputs, ceilings) gets its SHA-256 recorded beside it, in `<entry>.sha256`: the manifest,
/// written only by the worker, before the entry itself. Every read hashes the bytes it uses and
/// compares; an entry whose hash is unrecorded or differs is a miss (rebuilt, never used), and a
/// difference is reported in the result as a warning. Someone able to write the cache can write
/// a manifest too: the store keeps the first hash it saw for each key and flags a different one
/// (core/engine_loop.cpp), so such a rewrite still shows.
namespace hone::backends {

enum class HashCheck {
    Verified,   // the recorded hash is the one of the bytes read
    Unrecorded, // no manifest entry (an older worker's cache, or a manifest removed)
    Mismatch,   // the bytes are not the ones the worker wrote
};

/// The manifest entry of a cache entry: `<entry>.sha256`.
std::filesystem::path manifestPath(const std::filesystem::path& entry);

/// Records `sha256` as the hash of `entry`. Throws std::runtime_error where it cannot be written.
void recordHash(const std::filesystem::path& entry, const std::string& sha256);

/// Compares `actual`, the hash of the bytes just read from `entry`, with the recorded one
/// (returned in `recorded`, empty when there is none).
HashCheck checkHash(const std::filesystem::path& entry, const std::string& actual, std::string* recorded = nullptr);

/// The warning a result carries for an entry that failed its check.
std::string tamperWarning(const std::string& what, const std::filesystem::path& entry, const std::string& recorded,
    const std::string& actual, const std::string& action);

/// SHA-256 of a file's bytes; empty (and `ok` false) when it cannot be read.
std::string fileSha256(const std::filesystem::path& path, bool* ok = nullptr);

/// A private copy of `path` in a memfd (close-on-exec), hashed while copied: what a process is
/// given to load, so that it never sees the cache and what it loads is exactly what was
/// verified. -1 with `error` set when the file cannot be copied, or when `expectedSha256` is not
/// empty and the copy's hash differs (the file changed after its check).
int verifiedCopy(const std::filesystem::path& path, const std::string& expectedSha256, std::string& error);

/// dlopen (RTLD_NOW | RTLD_LOCAL) of an object the worker runs in its own process (the
/// calibration kernels), from a verifiedCopy: what it maps is what was checked. Null with `error`.
void* openVerified(const std::string& path, const std::string& sha256, std::string& error);

/// What one request used from the cache or added to it, with content hashes, and the entries
/// that failed their check: the result's `cache` (docs/FORMATS.md), which the engine compares
/// with the hashes its store has seen for the same keys.
class CacheLedger {
public:
    /// `kind`: object, inputs or reference; `key`: the entry's path under the cache folder.
    void add(const std::string& kind, const std::string& key, const std::string& sha256);
    void warn(const std::string& text) { m_warnings.push_back(text); }
    void clear();
    bool empty() const { return m_entries.empty() && m_warnings.empty(); }
    /// `{"entries": [{"kind", "key", "sha256"}...], "warnings": [...]}`
    nlohmann::json toJson() const;

private:
    std::vector<nlohmann::json> m_entries;
    std::vector<std::string> m_warnings;
};

} // namespace hone::backends
