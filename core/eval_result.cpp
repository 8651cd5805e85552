#include "core/eval_result.h"

#include "core/utf8.h"

#include <set>
#include <type_traits>
#include <utility>

namespace hone::core::protocol {
namespace {

using nlohmann::json;

template <class T>
bool holds(const json& v)
{
    if constexpr (std::is_same_v<T, bool>)
        return v.is_boolean();
    else if constexpr (std::is_same_v<T, std::string>)
        return v.is_string();
    else if constexpr (std::is_same_v<T, int64_t>)
        return v.is_number_integer();
    else if constexpr (std::is_same_v<T, double>)
        return v.is_number();
    else if constexpr (std::is_same_v<T, std::vector<double>>) {
        if (!v.is_array())
            return false;
        for (const auto& e : v)
            if (!e.is_number())
                return false;
        return true;
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
        if (!v.is_array())
            return false;
        for (const auto& e : v)
            if (!e.is_number_integer())
                return false;
        return true;
    } else {
        static_assert(std::is_same_v<T, std::vector<std::string>>);
        if (!v.is_array())
            return false;
        for (const auto& e : v)
            if (!e.is_string())
                return false;
        return true;
    }
}

template <class T>
const char* typeName()
{
    if constexpr (std::is_same_v<T, bool>)
        return "a boolean";
    else if constexpr (std::is_same_v<T, std::string>)
        return "a string";
    else if constexpr (std::is_same_v<T, int64_t>)
        return "an integer";
    else if constexpr (std::is_same_v<T, double>)
        return "a number";
    else
        return "a list";
}

/// One JSON object being decoded: typed reads consume keys; what is left is the struct's
/// `extra`. `path` names the object in errors ("result.timing").
class In {
public:
    In(const json& j, std::string path)
        : m_j(j)
        , m_path(std::move(path))
    {
        if (!j.is_object())
            throw ProtocolError(m_path + " is not an object");
    }

    std::string at(const char* key) const { return m_path + "." + key; }

    /// The value when present with type T (consumed); otherwise nullopt, and a present value
    /// of another type stays in `extra`.
    template <class T>
    std::optional<T> opt(const char* key)
    {
        auto it = m_j.find(key);
        if (it == m_j.end() || !holds<T>(*it))
            return std::nullopt;
        m_used.insert(key);
        return it->get<T>();
    }

    template <class T>
    T get(const char* key, T fallback)
    {
        return opt<T>(key).value_or(std::move(fallback));
    }

    /// A required field: missing or of another type is a protocol error naming it.
    template <class T>
    T req(const char* key)
    {
        auto it = m_j.find(key);
        if (it == m_j.end())
            throw ProtocolError(at(key) + " missing");
        if (!holds<T>(*it))
            throw ProtocolError(at(key) + " is not " + typeName<T>());
        m_used.insert(key);
        return it->get<T>();
    }

    /// A nested object when present as an object (consumed), else null.
    const json* object(const char* key)
    {
        auto it = m_j.find(key);
        if (it == m_j.end() || !it->is_object())
            return nullptr;
        m_used.insert(key);
        return &*it;
    }

    /// A nested list when present as a list (consumed), else null.
    const json* list(const char* key)
    {
        auto it = m_j.find(key);
        if (it == m_j.end() || !it->is_array())
            return nullptr;
        m_used.insert(key);
        return &*it;
    }

    json rest() const
    {
        json out = json::object();
        for (auto it = m_j.begin(); it != m_j.end(); ++it)
            if (!m_used.count(it.key()))
                out[it.key()] = it.value();
        return out;
    }

private:
    const json& m_j;
    std::string m_path;
    std::set<std::string> m_used;
};

template <class T>
void put(json& j, const char* key, const std::optional<T>& v)
{
    if (v)
        j[key] = *v;
}

/// Writes the kept unknown keys; a typed field of the same name wins.
json withExtra(json j, const json& extra)
{
    if (extra.is_object())
        for (auto it = extra.begin(); it != extra.end(); ++it)
            if (!j.contains(it.key()))
                j[it.key()] = it.value();
    return j;
}

std::string indexed(const std::string& path, size_t i)
{
    return path + "[" + std::to_string(i) + "]";
}

FailureKind kindFrom(const std::string& name, const std::string& path)
{
    if (auto k = failureKindFromName(name))
        return *k;
    throw ProtocolError(path + " is '" + validUtf8(name) + "', not a failure kind");
}

// ---- decoding ----

Failure failureFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Failure f;
    f.kind = kindFrom(in.req<std::string>("kind"), in.at("kind"));
    f.stage = in.get<std::string>("stage", {});
    f.message = in.get<std::string>("message", {});
    f.extra = in.rest();
    return f;
}

CompileInfo compileFrom(const json& j, const std::string& path)
{
    In in(j, path);
    CompileInfo c;
    c.ok = in.opt<bool>("ok");
    c.cached = in.get<bool>("cached", false);
    c.seconds = in.opt<double>("seconds");
    c.command = in.opt<std::string>("command");
    c.log = in.opt<std::string>("log");
    if (const json* ms = in.list("messages"))
        for (size_t i = 0; i < ms->size(); ++i) {
            In m((*ms)[i], indexed(path + ".messages", i));
            CompileMessage x;
            x.file = m.opt<std::string>("file");
            x.line = m.get<int64_t>("line", 0);
            x.column = m.get<int64_t>("column", 0);
            x.severity = m.get<std::string>("severity", {});
            x.text = m.get<std::string>("text", {});
            x.extra = m.rest();
            c.messages.push_back(std::move(x));
        }
    if (const json* rs = in.list("resources")) {
        for (size_t i = 0; i < rs->size(); ++i) {
            In r((*rs)[i], indexed(path + ".resources", i));
            KernelResources k;
            k.name = r.get<std::string>("name", {});
            k.registers = r.opt<int64_t>("registers");
            k.smemStatic = r.opt<int64_t>("smem_static");
            k.stackBytes = r.opt<int64_t>("stack_bytes");
            k.spillStores = r.opt<int64_t>("spill_stores");
            k.spillLoads = r.opt<int64_t>("spill_loads");
            k.vgprs = r.opt<int64_t>("vgprs");
            k.agprs = r.opt<int64_t>("agprs");
            k.sgprs = r.opt<int64_t>("sgprs");
            k.ldsBytes = r.opt<int64_t>("lds_bytes");
            k.scratchBytes = r.opt<int64_t>("scratch_bytes");
            k.vgprSpills = r.opt<int64_t>("vgpr_spills");
            k.sgprSpills = r.opt<int64_t>("sgpr_spills");
            if (const json* o = r.object("occupancy")) {
                In oi(*o, indexed(path + ".resources", i) + ".occupancy");
                KernelResources::AmdOccupancy a;
                a.arch = oi.get<std::string>("arch", {});
                a.block = oi.opt<int64_t>("block");
                a.wavesPerSimd = oi.opt<double>("waves_per_simd");
                a.limiter = oi.get<std::string>("limiter", {});
                a.extra = oi.rest();
                k.amdOccupancy = std::move(a);
            }
            k.extra = r.rest();
            c.resources.push_back(std::move(k));
        }
    } else if (const auto it = j.find("resources"); it != j.end() && it->is_object() && it->size() == 1
               && it->contains("error") && (*it)["error"].is_string()) {
        c.resourcesError = (*it)["error"].get<std::string>();
        (void)in.object("resources");
    }
    c.isa = in.opt<std::string>("isa");
    c.objectSha256 = in.opt<std::string>("object_sha256");
    c.extra = in.rest();
    return c;
}

CacheRecord cacheFrom(const json& j, const std::string& path)
{
    In in(j, path);
    CacheRecord c;
    if (const json* es = in.list("entries"))
        for (size_t i = 0; i < es->size(); ++i) {
            In e((*es)[i], indexed(path + ".entries", i));
            CacheEntry x;
            x.kind = e.get<std::string>("kind", {});
            x.key = e.get<std::string>("key", {});
            x.sha256 = e.get<std::string>("sha256", {});
            x.extra = e.rest();
            c.entries.push_back(std::move(x));
        }
    c.warnings = in.get<std::vector<std::string>>("warnings", {});
    c.extra = in.rest();
    return c;
}

Check checkFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Check c;
    c.shape = in.get<std::string>("shape", {});
    c.seed = in.get<int64_t>("seed", 0);
    c.ok = in.req<bool>("ok");
    c.maxAbsErr = in.opt<double>("max_abs_err");
    c.maxRelErr = in.opt<double>("max_rel_err");
    c.mismatches = in.get<int64_t>("mismatches", 0);
    if (const json* ms = in.list("first_mismatches"))
        for (size_t i = 0; i < ms->size(); ++i) {
            In m((*ms)[i], indexed(path + ".first_mismatches", i));
            Mismatch x;
            x.output = m.get<std::string>("output", {});
            x.index = m.get<int64_t>("index", 0);
            x.got = m.opt<double>("got");
            x.want = m.opt<double>("want");
            x.unwritten = m.get<bool>("unwritten", false);
            x.extra = m.rest();
            c.firstMismatches.push_back(std::move(x));
        }
    c.afterTiming = in.get<bool>("after_timing", false);
    if (const json* f = in.object("failure")) {
        In fi(*f, path + ".failure");
        c.failureKind = kindFrom(fi.req<std::string>("kind"), fi.at("kind"));
        c.failureMessage = fi.get<std::string>("message", {});
        if (!fi.rest().empty())
            throw ProtocolError(path + ".failure has fields this hone does not know");
    }
    c.extra = in.rest();
    return c;
}

SampleStats statsFrom(In& in)
{
    SampleStats s;
    s.samplesNs = in.get<std::vector<double>>("samples_ns", {});
    s.medianNs = in.req<double>("median_ns");
    s.p10Ns = in.opt<double>("p10_ns");
    s.p90Ns = in.opt<double>("p90_ns");
    s.cv = in.opt<double>("cv");
    return s;
}

Timing timingFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Timing t;
    t.shape = in.opt<std::string>("shape");
    t.stats = statsFrom(in);
    if (const json* b = in.object("baseline")) {
        In bi(*b, path + ".baseline");
        t.baseline = statsFrom(bi);
        t.baseline->extra = bi.rest();
    }
    t.speedup = in.opt<double>("speedup");
    t.extra = in.rest();
    return t;
}

Roofline rooflineFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Roofline r;
    r.flops = in.opt<double>("flops");
    r.bytes = in.opt<double>("bytes");
    r.gflops = in.opt<double>("gflops");
    r.gbps = in.opt<double>("gbps");
    r.intensity = in.opt<double>("intensity");
    r.peakGflops = in.opt<double>("peak_gflops");
    r.peakGbps = in.opt<double>("peak_gbps");
    r.fracCompute = in.opt<double>("frac_compute");
    r.fracBandwidth = in.opt<double>("frac_bandwidth");
    r.floorNs = in.opt<double>("floor_ns");
    r.extra = in.rest();
    return r;
}

Diagnosis diagnosisFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Diagnosis d;
    d.bound = in.get<std::string>("bound", {});
    d.evidence = in.get<std::string>("evidence", {});
    d.suspicious = in.get<bool>("suspicious", false);
    d.extra = in.rest();
    return d;
}

Occupancy occupancyFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Occupancy o;
    if (const json* ks = in.list("kernels"))
        for (size_t i = 0; i < ks->size(); ++i) {
            In k((*ks)[i], indexed(path + ".kernels", i));
            LaunchOccupancy l;
            l.name = k.get<std::string>("name", {});
            if (auto dims = k.opt<std::vector<int64_t>>("block"))
                l.block = *dims;
            l.threads = k.opt<int64_t>("threads");
            l.registers = k.opt<int64_t>("registers");
            l.staticSmem = k.opt<int64_t>("static_smem");
            l.dynamicSmem = k.opt<int64_t>("dynamic_smem");
            l.blocksPerSm = k.opt<int64_t>("blocks_per_sm");
            l.occupancy = k.opt<double>("occupancy");
            l.limiter = k.get<std::string>("limiter", {});
            l.extra = k.rest();
            o.kernels.push_back(std::move(l));
        }
    o.theoretical = in.opt<double>("theoretical");
    o.limiter = in.get<std::string>("limiter", {});
    o.mainKernel = in.get<std::string>("main_kernel", {});
    o.error = in.opt<std::string>("error");
    o.extra = in.rest();
    return o;
}

Profile profileFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Profile p;
    p.dramBytes = in.opt<double>("dram_bytes");
    p.error = in.get<std::string>("error", {});
    if (const json* m = in.object("main")) {
        In mi(*m, path + ".main");
        ProfiledKernel k;
        k.name = mi.get<std::string>("name", {});
        k.dramPct = mi.opt<double>("dram_pct");
        k.smPct = mi.opt<double>("sm_pct");
        k.achievedOccupancyPct = mi.opt<double>("achieved_occupancy_pct");
        if (const json* ss = mi.list("stalls"))
            for (size_t i = 0; i < ss->size(); ++i) {
                In si((*ss)[i], indexed(path + ".main.stalls", i));
                Stall st;
                st.reason = si.get<std::string>("reason", {});
                st.pct = si.get<double>("pct", 0.0);
                st.extra = si.rest();
                k.stalls.push_back(std::move(st));
            }
        k.extra = mi.rest();
        p.main = std::move(k);
    }
    p.extra = in.rest();
    return p;
}

ShapeResult shapeFrom(const json& j, const std::string& path, bool ok)
{
    In in(j, path);
    ShapeResult s;
    const auto it = j.find("index");
    if (it == j.end())
        throw ProtocolError(in.at("index") + " missing");
    if (!it->is_number())
        throw ProtocolError(in.at("index") + " is not a number");
    const double index = it->get<double>();
    if (index < 0)
        throw ProtocolError(in.at("index") + " is negative");
    // Converting a double past size_t's range is undefined (tests/fuzz/fuzz_protocol).
    if (index > 1e9 || !it->is_number_integer())
        throw ProtocolError(in.at("index") + " is not the index of a bench shape");
    s.index = static_cast<size_t>(in.req<int64_t>("index"));
    s.label = in.get<std::string>("shape", {});
    if (const json* t = in.object("timing"))
        s.timing = timingFrom(*t, path + ".timing");
    else if (ok)
        throw ProtocolError(in.at("timing") + " missing");
    if (ok && !(s.timing->stats.medianNs > 0))
        throw ProtocolError(path + ".timing.median_ns is not positive in an ok result");
    s.speedup = in.opt<double>("speedup");
    if (const json* r = in.object("roofline"))
        s.roofline = rooflineFrom(*r, path + ".roofline");
    if (const json* d = in.object("diagnosis"))
        s.diagnosis = diagnosisFrom(*d, path + ".diagnosis");
    s.extra = in.rest();
    return s;
}

ObjectiveRecord objectiveFrom(const json& j, const std::string& path)
{
    In in(j, path);
    ObjectiveRecord o;
    o.value = in.req<double>("value");
    o.screened = in.get<bool>("screened", false);
    o.slowerOn = in.get<std::vector<std::string>>("slower_on", {});
    o.weights = in.get<std::vector<double>>("weights", {});
    o.extra = in.rest();
    return o;
}

Environment environmentFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Environment e;
    e.device = in.get<std::string>("device", {});
    e.backend = in.get<std::string>("backend", {});
    e.compiler = in.opt<std::string>("compiler");
    e.flags = in.opt<std::string>("flags");
    e.cpuFlags = in.opt<std::string>("cpu_flags");
    e.extra = in.rest();
    return e;
}

Phases phasesFrom(const json& j, const std::string& path)
{
    In in(j, path);
    Phases p;
    p.generate = in.opt<double>("generate");
    p.cacheRead = in.opt<double>("cache_read");
    p.cacheHash = in.opt<double>("cache_hash");
    p.cacheWrite = in.opt<double>("cache_write");
    p.reference = in.opt<double>("reference");
    p.transfer = in.opt<double>("transfer");
    p.candidate = in.opt<double>("candidate");
    p.verify = in.opt<double>("verify");
    p.extra = in.rest();
    return p;
}

// ---- encoding ----

json toJson(const Failure& f)
{
    return withExtra({ { "kind", failureKindName(f.kind) }, { "stage", validUtf8(f.stage) },
                         { "message", validUtf8(f.message) } },
        f.extra);
}

json toJson(const CompileInfo& c)
{
    json j = json::object();
    put(j, "ok", c.ok);
    j["cached"] = c.cached;
    put(j, "seconds", c.seconds);
    put(j, "command", c.command);
    put(j, "log", c.log);
    json messages = json::array();
    for (const auto& m : c.messages) {
        json x = json::object();
        put(x, "file", m.file);
        x["line"] = m.line;
        x["column"] = m.column;
        x["severity"] = m.severity;
        x["text"] = m.text;
        messages.push_back(withExtra(std::move(x), m.extra));
    }
    j["messages"] = messages;
    if (!c.resources.empty()) {
        json rs = json::array();
        for (const auto& k : c.resources) {
            json x = { { "name", k.name } };
            put(x, "registers", k.registers);
            put(x, "smem_static", k.smemStatic);
            put(x, "stack_bytes", k.stackBytes);
            put(x, "spill_stores", k.spillStores);
            put(x, "spill_loads", k.spillLoads);
            put(x, "vgprs", k.vgprs);
            put(x, "agprs", k.agprs);
            put(x, "sgprs", k.sgprs);
            put(x, "lds_bytes", k.ldsBytes);
            put(x, "scratch_bytes", k.scratchBytes);
            put(x, "vgpr_spills", k.vgprSpills);
            put(x, "sgpr_spills", k.sgprSpills);
            if (const auto& a = k.amdOccupancy) {
                json o = json::object();
                if (!a->arch.empty())
                    o["arch"] = a->arch;
                put(o, "block", a->block);
                put(o, "waves_per_simd", a->wavesPerSimd);
                if (!a->limiter.empty())
                    o["limiter"] = a->limiter;
                x["occupancy"] = withExtra(std::move(o), a->extra);
            }
            rs.push_back(withExtra(std::move(x), k.extra));
        }
        j["resources"] = rs;
    } else if (c.resourcesError) {
        j["resources"] = { { "error", *c.resourcesError } };
    }
    put(j, "isa", c.isa);
    put(j, "object_sha256", c.objectSha256);
    return withExtra(std::move(j), c.extra);
}

json toJson(const Check& c)
{
    json mismatches = json::array();
    for (const auto& m : c.firstMismatches) {
        json x = { { "output", m.output }, { "index", m.index } };
        x["got"] = m.got ? json(*m.got) : json();
        x["want"] = m.want ? json(*m.want) : json();
        if (m.unwritten)
            x["unwritten"] = true;
        mismatches.push_back(withExtra(std::move(x), m.extra));
    }
    json j = { { "shape", c.shape }, { "seed", c.seed }, { "ok", c.ok }, { "mismatches", c.mismatches },
        { "first_mismatches", mismatches } };
    put(j, "max_abs_err", c.maxAbsErr);
    put(j, "max_rel_err", c.maxRelErr);
    if (c.afterTiming)
        j["after_timing"] = true;
    if (c.failureKind)
        j["failure"] = { { "kind", failureKindName(*c.failureKind) }, { "message", validUtf8(c.failureMessage) } };
    return withExtra(std::move(j), c.extra);
}

json toJson(const SampleStats& s)
{
    json j = { { "median_ns", s.medianNs }, { "samples_ns", s.samplesNs } };
    put(j, "p10_ns", s.p10Ns);
    put(j, "p90_ns", s.p90Ns);
    put(j, "cv", s.cv);
    return withExtra(std::move(j), s.extra);
}

json toJson(const Timing& t)
{
    json j = toJson(t.stats);
    put(j, "shape", t.shape);
    if (t.baseline)
        j["baseline"] = toJson(*t.baseline);
    put(j, "speedup", t.speedup);
    return withExtra(std::move(j), t.extra);
}

json toJson(const Roofline& r)
{
    json j = json::object();
    put(j, "flops", r.flops);
    put(j, "bytes", r.bytes);
    put(j, "gflops", r.gflops);
    put(j, "gbps", r.gbps);
    put(j, "intensity", r.intensity);
    put(j, "peak_gflops", r.peakGflops);
    put(j, "peak_gbps", r.peakGbps);
    put(j, "frac_compute", r.fracCompute);
    put(j, "frac_bandwidth", r.fracBandwidth);
    put(j, "floor_ns", r.floorNs);
    return withExtra(std::move(j), r.extra);
}

json toJson(const Diagnosis& d)
{
    return withExtra({ { "bound", d.bound }, { "evidence", validUtf8(d.evidence) }, { "suspicious", d.suspicious } },
        d.extra);
}

json toJson(const Occupancy& o)
{
    json j = json::object();
    if (!o.kernels.empty()) {
        json ks = json::array();
        for (const auto& l : o.kernels) {
            json x = { { "name", l.name } };
            if (!l.block.empty())
                x["block"] = l.block;
            put(x, "threads", l.threads);
            put(x, "registers", l.registers);
            put(x, "static_smem", l.staticSmem);
            put(x, "dynamic_smem", l.dynamicSmem);
            put(x, "blocks_per_sm", l.blocksPerSm);
            put(x, "occupancy", l.occupancy);
            if (!l.limiter.empty())
                x["limiter"] = l.limiter;
            ks.push_back(withExtra(std::move(x), l.extra));
        }
        j["kernels"] = ks;
    }
    put(j, "theoretical", o.theoretical);
    if (!o.limiter.empty())
        j["limiter"] = o.limiter;
    if (!o.mainKernel.empty())
        j["main_kernel"] = o.mainKernel;
    put(j, "error", o.error);
    return withExtra(std::move(j), o.extra);
}

json toJson(const Profile& p)
{
    json j = json::object();
    put(j, "dram_bytes", p.dramBytes);
    if (!p.error.empty())
        j["error"] = p.error;
    if (p.main) {
        json m = { { "name", p.main->name } };
        put(m, "dram_pct", p.main->dramPct);
        put(m, "sm_pct", p.main->smPct);
        put(m, "achieved_occupancy_pct", p.main->achievedOccupancyPct);
        json ss = json::array();
        for (const auto& st : p.main->stalls)
            ss.push_back(withExtra({ { "reason", st.reason }, { "pct", st.pct } }, st.extra));
        m["stalls"] = ss;
        j["main"] = withExtra(std::move(m), p.main->extra);
    }
    return withExtra(std::move(j), p.extra);
}

json toJson(const ShapeResult& s)
{
    json j = { { "index", s.index }, { "shape", s.label } };
    if (s.timing)
        j["timing"] = toJson(*s.timing);
    put(j, "speedup", s.speedup);
    if (s.roofline)
        j["roofline"] = toJson(*s.roofline);
    if (s.diagnosis)
        j["diagnosis"] = toJson(*s.diagnosis);
    return withExtra(std::move(j), s.extra);
}

json toJson(const ObjectiveRecord& o)
{
    return withExtra(
        { { "value", o.value }, { "screened", o.screened }, { "slower_on", o.slowerOn }, { "weights", o.weights } },
        o.extra);
}

json toJson(const CacheRecord& c)
{
    json entries = json::array();
    for (const auto& e : c.entries)
        entries.push_back(withExtra({ { "kind", e.kind }, { "key", e.key }, { "sha256", e.sha256 } }, e.extra));
    json warnings = json::array();
    for (const auto& w : c.warnings)
        warnings.push_back(validUtf8(w));
    return withExtra({ { "entries", entries }, { "warnings", warnings } }, c.extra);
}

json toJson(const Environment& e)
{
    json j = { { "device", e.device }, { "backend", e.backend } };
    put(j, "compiler", e.compiler);
    put(j, "flags", e.flags);
    put(j, "cpu_flags", e.cpuFlags);
    return withExtra(std::move(j), e.extra);
}

json toJson(const Phases& p)
{
    json j = json::object();
    put(j, "generate", p.generate);
    put(j, "cache_read", p.cacheRead);
    put(j, "cache_hash", p.cacheHash);
    put(j, "cache_write", p.cacheWrite);
    put(j, "reference", p.reference);
    put(j, "transfer", p.transfer);
    put(j, "candidate", p.candidate);
    put(j, "verify", p.verify);
    return withExtra(std::move(j), p.extra);
}

} // namespace

nlohmann::json Profile::toJson() const
{
    return protocol::toJson(*this);
}

double EvalResult::speedup() const
{
    if (!ok())
        return 0.0;
    return objective ? objective->value : timedSpeedup();
}

const std::vector<ShapeResult>& EvalResult::shapeResults() const
{
    static const std::vector<ShapeResult> none;
    return shapes ? *shapes : none;
}

EvalResult EvalResult::fromJson(const nlohmann::json& j)
{
    In in(j, "result");
    EvalResult r;
    // The envelope (parseMessage checked it where the line arrived; toJson writes it anew).
    // Version 1 results (stored before the secret of version 2) have the same layout.
    if (auto version = in.opt<int64_t>("protocol"); version && (*version < 1 || *version > kVersion))
        throw ProtocolError("result.protocol is " + std::to_string(*version) + "; this hone reads versions 1 to "
            + std::to_string(kVersion));
    if (auto type = in.opt<std::string>("type"); type && *type != "result")
        throw ProtocolError("result.type is '" + validUtf8(*type) + "', not 'result'");
    if (auto id = in.opt<std::string>("id"))
        r.id = *id;
    else if (auto num = in.opt<int64_t>("id"))
        r.id = std::to_string(*num);
    const std::string status = in.req<std::string>("status");
    if (status != "ok" && status != "failed")
        throw ProtocolError("result.status is '" + validUtf8(status) + "'; expected 'ok' or 'failed'");
    r.status = status == "ok" ? EvalStatus::Ok : EvalStatus::Failed;
    if (const json* f = in.object("failure"))
        r.failure = failureFrom(*f, "result.failure");
    else if (!r.ok())
        throw ProtocolError("result.failure missing in a failed result");
    if (const json* c = in.object("compile"))
        r.compile = compileFrom(*c, "result.compile");
    if (const json* cs = in.list("checks")) {
        r.checks.emplace();
        for (size_t i = 0; i < cs->size(); ++i)
            r.checks->push_back(checkFrom((*cs)[i], indexed("result.checks", i)));
    }
    if (const json* t = in.object("timing")) {
        r.timing = timingFrom(*t, "result.timing");
        if (r.ok() && !(r.timing->stats.medianNs > 0))
            throw ProtocolError("result.timing.median_ns is not positive in an ok result");
    }
    if (const json* x = in.object("roofline"))
        r.roofline = rooflineFrom(*x, "result.roofline");
    if (const json* x = in.object("diagnosis"))
        r.diagnosis = diagnosisFrom(*x, "result.diagnosis");
    if (const json* x = in.object("occupancy"))
        r.occupancy = occupancyFrom(*x, "result.occupancy");
    if (const json* x = in.object("profile"))
        r.profile = profileFrom(*x, "result.profile");
    if (const auto sh = j.find("shapes"); sh != j.end() && !sh->is_array())
        throw ProtocolError("result.shapes is not a list");
    if (const json* sh = in.list("shapes")) {
        r.shapes.emplace();
        for (size_t i = 0; i < sh->size(); ++i)
            r.shapes->push_back(shapeFrom((*sh)[i], indexed("result.shapes", i), r.ok()));
    }
    r.screened = in.opt<bool>("screened");
    if (const json* o = in.object("objective"))
        r.objective = objectiveFrom(*o, "result.objective");
    if (const json* e = in.object("environment"))
        r.environment = environmentFrom(*e, "result.environment");
    if (const json* c = in.object("cache"))
        r.cache = cacheFrom(*c, "result.cache");
    if (const json* p = in.object("phases"))
        r.phases = phasesFrom(*p, "result.phases");
    r.deviceLost = in.get<bool>("device_lost", false);
    r.extra = in.rest();
    return r;
}

nlohmann::json EvalResult::toJson() const
{
    json j = makeMessage("result");
    j["id"] = validUtf8(id);
    j["status"] = ok() ? "ok" : "failed";
    if (failure)
        j["failure"] = protocol::toJson(*failure);
    if (compile)
        j["compile"] = protocol::toJson(*compile);
    if (checks) {
        json cs = json::array();
        for (const auto& c : *checks)
            cs.push_back(protocol::toJson(c));
        j["checks"] = cs;
    }
    if (timing)
        j["timing"] = protocol::toJson(*timing);
    if (roofline)
        j["roofline"] = protocol::toJson(*roofline);
    if (diagnosis)
        j["diagnosis"] = protocol::toJson(*diagnosis);
    if (occupancy)
        j["occupancy"] = protocol::toJson(*occupancy);
    if (profile)
        j["profile"] = protocol::toJson(*profile);
    if (shapes) {
        json sh = json::array();
        for (const auto& s : *shapes)
            sh.push_back(protocol::toJson(s));
        j["shapes"] = sh;
    }
    put(j, "screened", screened);
    if (objective)
        j["objective"] = protocol::toJson(*objective);
    if (environment)
        j["environment"] = protocol::toJson(*environment);
    if (cache)
        j["cache"] = protocol::toJson(*cache);
    if (phases)
        j["phases"] = protocol::toJson(*phases);
    if (deviceLost)
        j["device_lost"] = true;
    return withExtra(std::move(j), extra);
}

EvalResult EvalResult::failed(std::string id, FailureKind kind, std::string stage, std::string message)
{
    EvalResult r;
    r.id = std::move(id);
    r.status = EvalStatus::Failed;
    r.failure = Failure { kind, std::move(stage), std::move(message), nlohmann::json::object() };
    return r;
}

bool operator==(const EvalResult& a, const EvalResult& b)
{
    return a.toJson() == b.toJson();
}

} // namespace hone::core::protocol
