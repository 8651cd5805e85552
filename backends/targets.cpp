#include "backends/targets.h"

#include <toml++/toml.h>

#include <thread>

#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <sstream>

namespace hone::backends {
namespace {

class Reader {
public:
    explicit Reader(std::string file)
        : m_file(std::move(file))
    {
    }

    [[noreturn]] void fail(const toml::source_region& at, const std::string& field, const std::string& msg,
        const std::string& expected) const
    {
        std::string where = m_file + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column) + ": ";
        if (!field.empty())
            where += "field '" + field + "': ";
        throw TargetsError(where + msg + "; expected " + expected);
    }

    std::vector<TargetSpec> read(std::string_view text)
    {
        toml::table root;
        try {
            root = toml::parse(text, std::string_view(m_file));
        } catch (const toml::parse_error& e) {
            fail(e.source(), "", std::string(e.description()), "valid TOML");
        }
        for (auto&& [k, v] : root)
            if (k.str() != "targets")
                fail(k.source(), std::string(k.str()), "unknown key '" + std::string(k.str()) + "'",
                    "only [targets.NAME] tables");
        std::vector<TargetSpec> out;
        const toml::node* targets = root.get("targets");
        if (!targets)
            return out;
        if (!targets->is_table())
            fail(targets->source(), "targets", "not a table", "[targets.NAME] tables");
        for (auto&& [k, v] : *targets->as_table()) {
            const std::string name(k.str());
            if (!v.is_table())
                fail(k.source(), "targets." + name, "not a table", "a [targets." + name + "] table");
            out.push_back(readTarget(name, *v.as_table(), k.source()));
        }
        return out;
    }

private:
    std::string str(const toml::table& t, const std::string& path, const char* key, const std::string& fallback)
    {
        const toml::node* n = t.get(key);
        if (!n)
            return fallback;
        if (!n->is_string())
            fail(n->source(), path + "." + key, "not a string", "a string");
        return n->as_string()->get();
    }

    bool boolean(const toml::table& t, const std::string& path, const char* key, bool fallback)
    {
        const toml::node* n = t.get(key);
        if (!n)
            return fallback;
        if (!n->is_boolean())
            fail(n->source(), path + "." + key, "not a boolean", "true or false");
        return n->as_boolean()->get();
    }

    int integer(const toml::table& t, const std::string& path, const char* key, int fallback, int lo, int hi)
    {
        const toml::node* n = t.get(key);
        if (!n)
            return fallback;
        if (!n->is_integer())
            fail(n->source(), path + "." + key, "not an integer",
                "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
        int64_t v = n->as_integer()->get();
        if (v < lo || v > hi)
            fail(n->source(), path + "." + key, "value " + std::to_string(v) + " out of range",
                "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
        return static_cast<int>(v);
    }

    TargetSpec readTarget(const std::string& name, const toml::table& t, const toml::source_region& at)
    {
        static const std::vector<std::string> allowed = {"executor", "host", "ssh_config", "partition",
            "gpus_per_task", "time_limit", "queue_timeout", "extra_args", "worker", "cache_dir", "device", "parallel", "retries",
            "persistent", "hip_arch"};
        const std::string path = "targets." + name;
        for (auto&& [k, v] : t) {
            if (std::find(allowed.begin(), allowed.end(), std::string(k.str())) == allowed.end()) {
                std::string list;
                for (const auto& a : allowed)
                    list += (list.empty() ? "" : ", ") + a;
                fail(k.source(), path + "." + std::string(k.str()), "unknown key '" + std::string(k.str()) + "'",
                    "one of " + list);
            }
        }
        TargetSpec s;
        s.name = name;
        s.executor = str(t, path, "executor", "");
        if (s.executor != "local" && s.executor != "ssh" && s.executor != "slurm")
            fail(t.get("executor") ? t.get("executor")->source() : at, path + ".executor",
                s.executor.empty() ? "missing required key" : "unknown executor '" + s.executor + "'",
                "\"local\", \"ssh\" or \"slurm\"");
        s.host = str(t, path, "host", "");
        if (s.executor == "ssh" && s.host.empty())
            fail(at, path + ".host", "an ssh target needs a host", "a host name or ssh_config alias");
        s.sshConfig = str(t, path, "ssh_config", "");
        s.partition = str(t, path, "partition", "");
        s.gpusPerTask = integer(t, path, "gpus_per_task", 0, 0, 64);
        s.timeLimit = str(t, path, "time_limit", "30");
        s.queueTimeout = integer(t, path, "queue_timeout", 1800, 0, 7 * 24 * 3600);
        if (t.get("queue_timeout") && s.executor != "slurm")
            fail(t.get("queue_timeout")->source(), path + ".queue_timeout", "only Slurm jobs wait in a queue",
                "queue_timeout only on slurm targets");
        if (const toml::node* n = t.get("extra_args")) {
            if (!n->is_array())
                fail(n->source(), path + ".extra_args", "not an array", "an array of strings");
            for (auto&& e : *n->as_array()) {
                if (!e.is_string())
                    fail(e.source(), path + ".extra_args", "an element is not a string", "an array of strings");
                s.extraArgs.push_back(e.as_string()->get());
            }
        }
        s.worker = str(t, path, "worker", "");
        s.cacheDir = str(t, path, "cache_dir", "");
        s.device = str(t, path, "device", "cpu");
        if (s.device != "cpu" && s.device != "cuda" && s.device != "hip")
            fail(t.get("device")->source(), path + ".device", "unknown device kind '" + s.device + "'",
                "\"cpu\", \"cuda\" or \"hip\"");
        s.hipArch = str(t, path, "hip_arch", "");
        if (t.get("hip_arch") && s.device != "hip")
            fail(t.get("hip_arch")->source(), path + ".hip_arch", "only AMD targets have a gfx architecture",
                "hip_arch only with device = \"hip\"");
        if (!s.hipArch.empty() && s.hipArch != "gfx90a" && s.hipArch != "gfx940" && s.hipArch != "gfx941"
            && s.hipArch != "gfx942")
            fail(t.get("hip_arch")->source(), path + ".hip_arch", "unknown architecture '" + s.hipArch + "'",
                "gfx90a (MI200), gfx940, gfx941 or gfx942 (MI300)");
        s.parallel = integer(t, path, "parallel", 1, 1, 256);
        s.retries = integer(t, path, "retries", 2, 0, 20);
        s.persistent = boolean(t, path, "persistent", false);
        if (s.persistent && s.executor == "local")
            fail(t.get("persistent")->source(), path + ".persistent", "a local target starts a worker per evaluation",
                "persistent only on ssh and slurm targets");
        return s;
    }

    std::string m_file;
};

} // namespace

std::vector<TargetSpec> parseTargets(std::string_view text, const std::string& fileName)
{
    return Reader(fileName).read(text);
}

std::vector<TargetSpec> readTargets(const std::filesystem::path& file)
{
    std::ifstream f(file);
    if (!f)
        throw TargetsError("cannot read the targets file " + file.string()
            + "; create it (docs/REMOTE.md) or pass --targets FILE");
    std::stringstream ss;
    ss << f.rdbuf();
    return parseTargets(ss.str(), file.string());
}

std::filesystem::path defaultTargetsPath()
{
    if (const char* e = std::getenv("HONE_TARGETS"); e && *e)
        return e;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
        return std::filesystem::path(x) / "hone" / "targets.toml";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : ".") / ".config" / "hone" / "targets.toml";
}

double slurmTimeLimitSeconds(const std::string& limit)
{
    // Slurm's forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
    std::string rest = limit;
    double days = 0;
    if (auto dash = rest.find('-'); dash != std::string::npos) {
        char* end = nullptr;
        days = std::strtod(rest.substr(0, dash).c_str(), &end);
        if (dash == 0 || *end)
            return -1;
        rest = rest.substr(dash + 1);
    }
    std::vector<double> parts;
    std::stringstream ss(rest);
    std::string p;
    while (std::getline(ss, p, ':')) {
        char* end = nullptr;
        double v = std::strtod(p.c_str(), &end);
        if (p.empty() || *end || v < 0)
            return -1;
        parts.push_back(v);
    }
    if (parts.empty() || parts.size() > 3)
        return -1;
    if (days > 0 || limit.find('-') != std::string::npos) {
        // after "D-": hours, then minutes, then seconds
        static const double unit[] = {3600, 60, 1};
        double s = days * 86400;
        for (size_t i = 0; i < parts.size(); ++i)
            s += parts[i] * unit[i];
        return s;
    }
    if (parts.size() == 1)
        return parts[0] * 60;
    if (parts.size() == 2)
        return parts[0] * 60 + parts[1];
    return parts[0] * 3600 + parts[1] * 60 + parts[2];
}

RemoteExecutorConfig remoteConfig(const TargetSpec& t, const std::filesystem::path& healthFile)
{
    RemoteExecutorConfig c;
    c.kind = t.executor == "slurm" ? RemoteExecutorConfig::Kind::Slurm : RemoteExecutorConfig::Kind::Ssh;
    c.name = t.name;
    c.host = t.host;
    c.sshConfig = t.sshConfig;
    c.partition = t.partition;
    c.gpusPerTask = t.gpusPerTask;
    c.timeLimit = t.timeLimit;
    c.queueSeconds = t.queueTimeout;
    c.extraArgs = t.extraArgs;
    c.workerPath = t.worker.empty() ? "hone-worker" : t.worker;
    c.cacheDir = t.cacheDir;
    c.parallel = t.parallel;
    c.retries = t.retries;
    c.persistent = t.persistent;
    c.healthFile = healthFile.string();
    if (c.kind == RemoteExecutorConfig::Kind::Slurm && c.persistent) {
        // A persistent step is replaced before Slurm ends it at its time limit, leaving room for
        // the evaluation in progress.
        if (double limit = slurmTimeLimitSeconds(t.timeLimit); limit > 0)
            c.recycleSeconds = std::max(limit * 0.5, limit - std::max(0.25 * limit, 300.0));
    }
    const bool gpu = t.device == "cuda" || t.device == "hip";
    c.limits.memoryMiB = gpu ? 16384 : 4096;
    c.limits.addressSpaceLimit = !gpu;
    return c;
}

namespace {

/// What makes two workers' timings comparable: their devices, as hello lists them.
std::string deviceSignature(const nlohmann::json& hello)
{
    std::string sig;
    for (const auto& d : hello.value("devices", nlohmann::json::array()))
        sig += d.value("kind", std::string("?")) + ": " + d.value("name", std::string("?")) + " ("
            + std::to_string(d.value("cores", 0)) + " cores); ";
    return sig;
}

} // namespace

TargetPool::TargetPool(std::vector<Member> members, double benchSeconds)
    : m_benchSeconds(benchSeconds)
{
    if (members.empty())
        throw std::runtime_error("a target pool needs at least one target");
    for (auto& m : members)
        m_states.push_back(State {std::move(m)});
}

nlohmann::json TargetPool::hello()
{
    if (!m_hello.is_null())
        return m_hello;
    nlohmann::json first = m_states[0].member.executor->hello();
    const std::string sig = deviceSignature(first);
    for (size_t i = 1; i < m_states.size(); ++i) {
        nlohmann::json h = m_states[i].member.executor->hello();
        if (deviceSignature(h) != sig)
            throw std::runtime_error("targets '" + m_states[0].member.name + "' and '" + m_states[i].member.name
                + "' have different devices (" + sig + "vs " + deviceSignature(h)
                + "); one session compares timings on one kind of device: run them as separate sessions");
    }
    m_hello = first;
    return m_hello;
}

nlohmann::json TargetPool::ceilings(const std::string& kind)
{
    return m_states[0].member.executor->ceilings(kind);
}

int TargetPool::slotCount() const
{
    int n = 0;
    for (const auto& s : m_states)
        n += s.member.executor->slotCount();
    return n;
}

void TargetPool::submit(core::EvalJob job)
{
    const auto now = std::chrono::steady_clock::now();
    size_t best = 0;
    int bestFree = -1000000;
    for (size_t i = 0; i < m_states.size(); ++i) {
        const auto& s = m_states[i];
        // A benched target still takes work when every target is benched.
        int free = s.member.executor->slotCount() - s.inFlight - (s.benchedUntil > now ? 100000 : 0);
        if (free > bestFree) {
            bestFree = free;
            best = i;
        }
    }
    m_owner[job.id] = best;
    ++m_states[best].inFlight;
    m_states[best].member.executor->submit(std::move(job));
}

std::optional<core::EvalDone> TargetPool::next(std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
        for (size_t k = 0; k < m_states.size(); ++k) {
            size_t i = (m_nextPoll + k) % m_states.size();
            auto& s = m_states[i];
            if (s.inFlight == 0)
                continue;
            auto wait = std::chrono::milliseconds(m_states.size() == 1 ? timeout.count() : 10);
            if (auto d = s.member.executor->next(wait)) {
                m_nextPoll = i + 1;
                --s.inFlight;
                m_owner.erase(d->id);
                d->result["target"] = s.member.name;
                auto f = d->result.find("failure");
                if (f != d->result.end() && f->is_object() && f->value("kind", std::string()) == "worker_error")
                    s.benchedUntil = std::chrono::steady_clock::now()
                        + std::chrono::milliseconds(static_cast<long>(1000 * m_benchSeconds));
                return d;
            }
        }
        if (std::all_of(m_states.begin(), m_states.end(), [](const State& s) { return s.inFlight == 0; }))
            std::this_thread::sleep_until(std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
    } while (std::chrono::steady_clock::now() < deadline);
    return std::nullopt;
}

void TargetPool::cancelAll()
{
    for (auto& s : m_states) {
        s.member.executor->cancelAll();
        s.inFlight = 0;
    }
    m_owner.clear();
}

} // namespace hone::backends
