#include "backends/target_health.h"
#include "core/utf8.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace hone::backends {
namespace {

constexpr int kFormat = 1;

nlohmann::json toJson(const TargetHealth& h)
{
    return { { "last_probe", h.lastProbe }, { "last_probe_ok", h.lastProbeOk }, { "last_ok", h.lastOk },
        { "consecutive_infra_failures", h.consecutiveInfraFailures }, { "last_error", h.lastError },
        { "last_error_at", h.lastErrorAt } };
}

TargetHealth fromJson(const nlohmann::json& j)
{
    TargetHealth h;
    h.lastProbe = j.value("last_probe", std::string());
    h.lastProbeOk = j.value("last_probe_ok", false);
    h.lastOk = j.value("last_ok", std::string());
    h.consecutiveInfraFailures = j.value("consecutive_infra_failures", 0);
    h.lastError = j.value("last_error", std::string());
    h.lastErrorAt = j.value("last_error_at", std::string());
    return h;
}

/// Parses the file's text; throws std::runtime_error saying what is wrong with it.
std::map<std::string, TargetHealth> parse(const std::string& text)
{
    std::map<std::string, TargetHealth> out;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        return out;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("not JSON (") + e.what() + ")");
    }
    if (!j.is_object() || !j.contains("targets") || !j["targets"].is_object())
        throw std::runtime_error("expected {\"format\": 1, \"targets\": {NAME: {...}}}");
    try {
        for (const auto& [name, entry] : j["targets"].items())
            out[name] = fromJson(entry);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("an entry has the wrong type (") + e.what() + ")");
    }
    return out;
}

std::string readAll(const std::filesystem::path& file, bool& exists)
{
    std::ifstream f(file);
    exists = static_cast<bool>(f);
    std::stringstream ss;
    if (f)
        ss << f.rdbuf();
    return ss.str();
}

} // namespace

std::string utcNow()
{
    std::time_t t = std::time(nullptr);
    std::tm tm {};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::filesystem::path defaultHealthPath()
{
    std::filesystem::path dir;
    if (const char* c = std::getenv("HONE_CACHE_DIR"); c && *c)
        dir = c;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
        dir = std::filesystem::path(x) / "hone";
    else if (const char* home = std::getenv("HOME"); home && *home)
        dir = std::filesystem::path(home) / ".cache" / "hone";
    else
        dir = std::filesystem::temp_directory_path() / "hone-cache";
    return dir / "targets-health.json";
}

TargetHealthFile::TargetHealthFile(std::filesystem::path file)
    : m_file(std::move(file))
{
}

std::map<std::string, TargetHealth> TargetHealthFile::load(std::string* warning) const
{
    bool exists = false;
    const std::string text = readAll(m_file, exists);
    if (!exists)
        return {};
    try {
        return parse(text);
    } catch (const std::exception& e) {
        if (warning)
            *warning = "the target health file " + m_file.string() + " is corrupt: " + e.what()
                + "; ignoring it (it is rewritten at the next change)";
        return {};
    }
}

TargetHealth TargetHealthFile::get(const std::string& name, std::string* warning) const
{
    auto all = load(warning);
    auto it = all.find(name);
    return it == all.end() ? TargetHealth {} : it->second;
}

bool TargetHealthFile::update(
    const std::string& name, const std::function<void(TargetHealth&)>& change, std::string* error) const
{
    auto fail = [&](const std::string& what) {
        if (error)
            *error = "cannot write the target health file " + m_file.string() + ": " + what;
        return false;
    };
    std::error_code ec;
    if (m_file.has_parent_path())
        std::filesystem::create_directories(m_file.parent_path(), ec);
    // One writer at a time across processes; readers see the old or the new file (rename).
    const std::string lockPath = m_file.string() + ".lock";
    int lock = open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0)
        return fail(lockPath + ": " + strerror(errno));
    while (flock(lock, LOCK_EX) != 0 && errno == EINTR) { }
    auto all = load(); // a corrupt file starts over
    change(all[name]);
    nlohmann::json j = { { "format", kFormat }, { "targets", nlohmann::json::object() } };
    for (const auto& [n, h] : all)
        j["targets"][n] = toJson(h);
    const std::filesystem::path tmp = m_file.string() + ".tmp" + std::to_string(getpid());
    bool ok = false;
    {
        std::ofstream f(tmp);
        f << core::dumpJson(j, 2) << "\n"; // reasons quote ssh and Slurm output
        ok = static_cast<bool>(f);
    }
    if (ok) {
        std::filesystem::rename(tmp, m_file, ec);
        ok = !ec;
    }
    close(lock);
    if (!ok) {
        std::filesystem::remove(tmp, ec);
        return fail("writing or renaming " + tmp.string() + " failed");
    }
    return true;
}

} // namespace hone::backends
