#include "core/eval_request.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace hone::core::protocol {
namespace {

const nlohmann::json& member(const nlohmann::json& obj, const char* key, const std::string& where)
{
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
        throw RequestError(where + " has no '" + key + "'");
    return *it;
}

std::string text(const nlohmann::json& obj, const char* key, const std::string& where,
    const std::string& fallback, bool needed)
{
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        if (needed)
            throw RequestError(where + " has no '" + key + "' string");
        return fallback;
    }
    if (!it->is_string())
        throw RequestError(where + "." + key + " is not a string");
    return it->get<std::string>();
}

double number(const nlohmann::json& obj, const char* key, const std::string& where, double fallback)
{
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null())
        return fallback;
    if (!it->is_number())
        throw RequestError(where + "." + key + " is not a number");
    return it->get<double>();
}

uint64_t seedValue(const nlohmann::json& config, const char* key, uint64_t fallback)
{
    auto it = config.find(key);
    if (it == config.end() || it->is_null())
        return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
        throw RequestError(std::string("config.") + key + " is not a non-negative integer");
    return it->get<uint64_t>();
}

/// A knob value as the -D text: strings as they are, integers without a decimal point.
std::string knobText(const nlohmann::json& v, const std::string& where)
{
    if (v.is_string())
        return v.get<std::string>();
    if (v.is_number_integer())
        return std::to_string(v.get<int64_t>());
    if (v.is_number())
        return nlohmann::json(v.get<double>()).dump();
    if (v.is_boolean())
        return v.get<bool>() ? "1" : "0";
    throw RequestError(where + " is not a string or number");
}

/// The keys of `obj` not in `known`, as an object (fields of a newer version, kept).
nlohmann::json unknownKeys(const nlohmann::json& obj, std::initializer_list<const char*> known)
{
    nlohmann::json out = nlohmann::json::object();
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
            out[it.key()] = it.value();
    return out;
}

void mergeInto(nlohmann::json& into, const nlohmann::json& extra)
{
    for (auto it = extra.begin(); it != extra.end(); ++it)
        if (!into.contains(it.key()))
            into[it.key()] = it.value();
}

std::vector<ShapeSpec> parseShapes(const nlohmann::json& problem, const char* set, bool needed)
{
    std::vector<ShapeSpec> out;
    auto it = problem.find(set);
    if (it == problem.end() || it->is_null()) {
        if (needed)
            throw RequestError(std::string("problem has no '") + set + "' shapes");
        return out;
    }
    if (!it->is_array())
        throw RequestError(std::string("problem.") + set + " is not an array");
    for (size_t i = 0; i < it->size(); ++i)
        out.push_back(ShapeSpec::fromJson((*it)[i], set, i));
    if (needed && out.empty())
        throw RequestError(std::string("problem.") + set + " is empty");
    return out;
}

/// The `problem` object into `r`; the reference is needed when a stage runs it.
void readProblem(const nlohmann::json& problem, EvalRequest& r)
{
    if (!problem.is_object())
        throw RequestError("'problem' is not an object");
    r.problemName = text(problem, "name", "problem", "", false);
    r.family = text(problem, "family", "problem", "", false);
    if (r.wantCheck || r.wantTime)
        r.reference
            = SourceSpec::fromJson(member(problem, "reference", "problem"), "problem.reference", "reference.cpp");
    if (auto p = problem.find("params"); p != problem.end() && !p->is_null()) {
        if (!p->is_object())
            throw RequestError("problem.params is not an object");
        for (auto it = p->begin(); it != p->end(); ++it) {
            if (!it->is_number())
                throw RequestError("problem.params." + it.key() + " is not a number");
            r.params[it.key()] = it->get<double>();
        }
    }
    if (auto t = problem.find("tolerance"); t != problem.end() && !t->is_null()) {
        if (!t->is_object())
            throw RequestError("problem.tolerance is not an object");
        r.tolerance = *t;
    }
    if (auto l = problem.find("libraries"); l != problem.end() && !l->is_null()) {
        if (!l->is_array())
            throw RequestError("problem.libraries is not an array");
        for (const auto& v : *l) {
            if (!v.is_string())
                throw RequestError("problem.libraries holds a value that is not a string");
            r.libraries.push_back(v.get<std::string>());
        }
    }
    r.check = parseShapes(problem, "check", r.wantCheck);
    r.bench = parseShapes(problem, "bench", r.wantTime);
    if (auto cov = problem.find("coverage"); cov != problem.end() && !cov->is_null()) {
        try {
            r.coverage = core::CheckCoverage::fromJson(*cov, "problem.coverage");
        } catch (const std::runtime_error& e) {
            throw RequestError(e.what());
        }
    }
    r.problemExtra = unknownKeys(problem,
        { "name", "family", "reference", "params", "tolerance", "libraries", "check", "bench", "coverage" });
}

} // namespace

size_t TensorDesc::numel() const
{
    size_t n = 1;
    for (int64_t d : shape)
        n *= static_cast<size_t>(d);
    return n;
}

nlohmann::json TensorDesc::toJson() const
{
    nlohmann::json j = { { "name", name }, { "dtype", dtypeName(dtype) }, { "shape", shape } };
    if (!init.is_null())
        j["init"] = init;
    return j;
}

std::vector<TensorDesc> parseTensors(const nlohmann::json& shape, const char* key, const std::string& where)
{
    auto list = shape.find(key);
    if (list == shape.end() || !list->is_array())
        throw RequestError(where + " has no '" + key + "' array");
    std::vector<TensorDesc> out;
    for (size_t i = 0; i < list->size(); ++i) {
        const auto& t = (*list)[i];
        const std::string at = where + "." + key + "[" + std::to_string(i) + "]";
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
            throw RequestError(at + " has no string 'name'");
        TensorDesc d;
        d.name = t["name"].get<std::string>();
        if (!t.contains("dtype") || !t["dtype"].is_string())
            throw RequestError(at + " ('" + d.name + "') has no string 'dtype'");
        const std::string dtype = t["dtype"].get<std::string>();
        if (const auto dt = dtypeFromName(dtype))
            d.dtype = *dt;
        else
            throw RequestError(at + " ('" + d.name + "'): unknown dtype '" + dtype
                + "'; expected one of f32, f16, bf16, f64, i32, i64, u8");
        if (!t.contains("shape") || !t["shape"].is_array())
            throw RequestError(at + " ('" + d.name + "') has no 'shape' array");
        if (t["shape"].size() > HONE_MAX_RANK)
            throw RequestError(at + " ('" + d.name + "') has rank " + std::to_string(t["shape"].size())
                + "; at most " + std::to_string(HONE_MAX_RANK) + " is supported");
        double total = 1;
        for (const auto& dim : t["shape"]) {
            if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
                throw RequestError(
                    at + " ('" + d.name + "') has a shape entry that is not a non-negative integer");
            d.shape.push_back(dim.get<int64_t>());
            total *= static_cast<double>(d.shape.back());
        }
        if (total * static_cast<double>(dtypeSize(d.dtype)) > static_cast<double>(1ull << 40))
            throw RequestError(at + " ('" + d.name + "') would take more than 1 TiB");
        if (t.contains("init"))
            d.init = t["init"];
        out.push_back(std::move(d));
    }
    return out;
}

nlohmann::json SourceSpec::toJson() const
{
    nlohmann::json k = nlohmann::json::object();
    for (const auto& [name_, value] : knobs)
        k[name_] = value;
    return { { "name", name }, { "lang", lang }, { "source", source }, { "knobs", k }, { "flags", flags } };
}

SourceSpec SourceSpec::fromJson(const nlohmann::json& j, const std::string& where, const std::string& defaultName)
{
    if (!j.is_object())
        throw RequestError(where + " is not an object");
    SourceSpec s;
    s.name = text(j, "name", where, defaultName, false);
    s.lang = text(j, "lang", where, "cpp", false);
    s.source = text(j, "source", where, "", true);
    s.flags = text(j, "flags", where, "", false);
    if (auto k = j.find("knobs"); k != j.end() && !k->is_null()) {
        if (!k->is_object())
            throw RequestError(where + ".knobs is not an object");
        for (auto it = k->begin(); it != k->end(); ++it)
            s.knobs[it.key()] = knobText(it.value(), where + ".knobs." + it.key());
    }
    return s;
}

nlohmann::json ShapeSpec::toJson() const
{
    nlohmann::json j = { { "label", label }, { "symbols", symbols }, { "flops", flops }, { "bytes", bytes },
        { "compute", compute }, { "inputs", nlohmann::json::array() }, { "outputs", nlohmann::json::array() } };
    if (flopsUnknown)
        j["flops_unknown"] = true;
    for (const auto& t : inputs)
        j["inputs"].push_back(t.toJson());
    for (const auto& t : outputs)
        j["outputs"].push_back(t.toJson());
    return j;
}

ShapeSpec ShapeSpec::fromJson(const nlohmann::json& j, const std::string& set, size_t index)
{
    const std::string where = "problem." + set + "[" + std::to_string(index) + "]";
    if (!j.is_object())
        throw RequestError(where + " is not an object");
    ShapeSpec s;
    s.label = text(j, "label", where, set + "[" + std::to_string(index) + "]", false);
    if (auto sym = j.find("symbols"); sym != j.end() && !sym->is_null()) {
        if (!sym->is_object())
            throw RequestError(where + ".symbols is not an object");
        for (auto it = sym->begin(); it != sym->end(); ++it) {
            if (!it->is_number())
                throw RequestError(where + ".symbols." + it.key() + " is not a number");
            s.symbols[it.key()] = it->get<double>();
        }
    }
    s.flops = number(j, "flops", where, 0);
    if (auto u = j.find("flops_unknown"); u != j.end() && !u->is_null()) {
        if (!u->is_boolean())
            throw RequestError(where + ".flops_unknown is not a boolean");
        s.flopsUnknown = u->get<bool>();
    }
    s.bytes = number(j, "bytes", where, 0);
    s.compute = text(j, "compute", where, "fma", false);
    if (s.compute != "fma" && s.compute != "tensor")
        throw RequestError(where + ".compute is '" + s.compute + "'; expected \"fma\" or \"tensor\"");
    s.inputs = parseTensors(j, "inputs", where);
    s.outputs = parseTensors(j, "outputs", where);
    if (s.outputs.empty())
        throw RequestError(where + " has no outputs; there would be nothing to check");
    return s;
}

nlohmann::json EvalRequest::problemToJson() const
{
    nlohmann::json p = { { "name", problemName }, { "params", params }, { "tolerance", tolerance },
        { "libraries", libraries }, { "check", nlohmann::json::array() }, { "bench", nlohmann::json::array() } };
    if (!family.empty())
        p["family"] = family;
    if (!reference.source.empty()) {
        p["reference"] = reference.toJson();
        p["reference"].erase("knobs"); // a reference has no knobs
        if (reference.flags.empty())
            p["reference"].erase("flags");
    }
    for (const auto& s : check)
        p["check"].push_back(s.toJson());
    for (const auto& s : bench)
        p["bench"].push_back(s.toJson());
    if (!coverage.empty())
        p["coverage"] = coverage.toJson();
    mergeInto(p, problemExtra);
    return p;
}

nlohmann::json EvalRequest::configToJson() const
{
    nlohmann::json c = { { "seeds", seeds }, { "samples", samples }, { "warmup", warmup },
        { "timing_shape", timingShape } };
    if (timingShapes.size() > 1)
        c["timing_shapes"] = timingShapes;
    if (screenSpeedup > 0)
        c["screen_speedup"] = screenSpeedup;
    if (screenProbe)
        c["screen_probe"] = { { "index", *screenProbe }, { "speedup", screenProbeSpeedup } };
    if (timingSeed != kDefaultTimingSeed)
        c["timing_seed"] = timingSeed;
    if (recheckSeed != kDefaultRecheckSeed)
        c["recheck_seed"] = recheckSeed;
    if (givenCoverageSeed)
        c["coverage_seed"] = *givenCoverageSeed;
    mergeInto(c, configExtra);
    return c;
}

nlohmann::json EvalRequest::toJson() const
{
    nlohmann::json j = makeMessage("eval");
    j["id"] = id;
    j["problem"] = problemToJson();
    j["candidate"] = candidate.toJson();
    if (baseline)
        j["baseline"] = baseline->toJson();
    nlohmann::json stages = { "compile" };
    if (wantCheck)
        stages.push_back("check");
    if (wantTime)
        stages.push_back("time");
    if (wantProfile)
        stages.push_back("profile");
    j["stages"] = stages;
    j["config"] = configToJson();
    j["limits"] = { { "compile_s", compileSeconds }, { "run_s", runSeconds } };
    if (secret)
        j["secret"] = *secret;
    mergeInto(j, extra);
    return j;
}

EvalRequest EvalRequest::forProblem(const nlohmann::json& problem)
{
    EvalRequest r;
    readProblem(problem, r);
    return r;
}

EvalRequest EvalRequest::fromJson(const nlohmann::json& request)
{
    EvalRequest r;
    r.id = requestId(request);

    // Stages: compile is implied by anything else; names this backend does not know (a
    // GPU "profile") are ignored.
    if (auto st = request.find("stages"); st != request.end() && !st->is_null()) {
        if (!st->is_array())
            throw RequestError("'stages' is not an array");
        r.wantCheck = r.wantTime = false;
        for (const auto& s : *st) {
            if (!s.is_string())
                throw RequestError("'stages' holds a value that is not a string");
            r.wantCheck |= s == "check";
            r.wantTime |= s == "time";
            r.wantProfile |= s == "profile";
        }
    }

    readProblem(member(request, "problem", "the eval request"), r);

    r.candidate = SourceSpec::fromJson(member(request, "candidate", "the eval request"), "candidate", "candidate.cpp");
    if (auto b = request.find("baseline"); b != request.end() && !b->is_null())
        r.baseline = SourceSpec::fromJson(*b, "baseline", "baseline.cpp");

    if (auto c = request.find("config"); c != request.end() && !c->is_null()) {
        if (!c->is_object())
            throw RequestError("'config' is not an object");
        if (auto s = c->find("seeds"); s != c->end() && !s->is_null()) {
            if (!s->is_array())
                throw RequestError("config.seeds is not an array");
            for (const auto& v : *s) {
                if (!v.is_number_integer() || v.get<int64_t>() < 0)
                    throw RequestError("config.seeds holds a value that is not a non-negative integer");
                r.seeds.push_back(v.get<uint64_t>());
            }
        }
        r.samples = static_cast<int>(std::clamp(number(*c, "samples", "config", 25), 20.0, 100000.0));
        r.warmup = static_cast<int>(std::clamp(number(*c, "warmup", "config", 3), 0.0, 1000.0));
        const double shape = number(*c, "timing_shape", "config", 0);
        // Bounded before the cast: 1e300 is integral too, and past size_t (found by fuzzing).
        if (!(shape >= 0 && shape <= 1e9) || shape != std::floor(shape))
            throw RequestError("config.timing_shape is not a non-negative integer index");
        r.timingShape = static_cast<size_t>(shape);
        if (auto ts = c->find("timing_shapes"); ts != c->end() && !ts->is_null()) {
            if (!ts->is_array() || ts->empty())
                throw RequestError("config.timing_shapes is not a non-empty array");
            std::set<size_t> distinct;
            for (const auto& v : *ts) {
                if (!v.is_number_integer() || v.get<int64_t>() < 0)
                    throw RequestError("config.timing_shapes holds a value that is not a non-negative integer");
                if (!distinct.insert(v.get<size_t>()).second)
                    throw RequestError("config.timing_shapes names bench shape " + v.dump() + " twice");
                r.timingShapes.push_back(v.get<size_t>());
            }
        }
        r.screenSpeedup = number(*c, "screen_speedup", "config", 0);
        if (!(r.screenSpeedup >= 0) || !std::isfinite(r.screenSpeedup))
            throw RequestError("config.screen_speedup is not a number >= 0");
        if (auto p = c->find("screen_probe"); p != c->end() && !p->is_null()) {
            if (!p->is_object())
                throw RequestError("config.screen_probe is not an object {\"index\": N, \"speedup\": X}");
            const double index = number(*p, "index", "config.screen_probe", -1);
            if (!(index >= 0 && index <= 1e9) || index != std::floor(index))
                throw RequestError("config.screen_probe.index is not a non-negative integer index");
            r.screenProbe = static_cast<size_t>(index);
            r.screenProbeSpeedup = number(*p, "speedup", "config.screen_probe", 0);
            if (!(r.screenProbeSpeedup >= 0) || !std::isfinite(r.screenProbeSpeedup))
                throw RequestError("config.screen_probe.speedup is not a number >= 0");
        }
        r.timingSeed = seedValue(*c, "timing_seed", r.timingSeed);
        r.recheckSeed = seedValue(*c, "recheck_seed", r.recheckSeed);
        r.configExtra = unknownKeys(*c, { "seeds", "samples", "warmup", "timing_shape", "timing_shapes",
            "screen_speedup", "screen_probe", "timing_seed", "recheck_seed", "coverage_seed" });
    }
    if (r.seeds.empty())
        r.seeds = { 1, 2, 3 };
    // The coverage draw: given, else from the per-request secret, which the candidate never
    // holds, so it cannot know which shapes and values it will be checked on.
    std::string coverageKey;
    if (auto s = request.find("secret"); s != request.end() && s->is_string())
        r.secret = s->get<std::string>();
    if (auto c = request.find("config"); c != request.end() && c->is_object() && c->contains("coverage_seed"))
        r.coverageSeed = *(r.givenCoverageSeed = seedValue(*c, "coverage_seed", 0));
    else if (r.secret)
        coverageKey = "secret:" + *r.secret;
    else
        coverageKey = "seeds:" + nlohmann::json(r.seeds).dump();
    if (!coverageKey.empty()) {
        uint64_t h = 14695981039346656037ull; // FNV-1a
        for (unsigned char ch : coverageKey)
            h = (h ^ ch) * 1099511628211ull;
        r.coverageSeed = h;
    }
    // At least three distinct seeds, whatever was asked: one lucky seed proves little.
    std::set<uint64_t> seen;
    std::vector<uint64_t> unique;
    for (uint64_t s : r.seeds)
        if (seen.insert(s).second)
            unique.push_back(s);
    uint64_t next = *std::max_element(unique.begin(), unique.end()) + 1;
    while (unique.size() < 3)
        unique.push_back(next++);
    r.seeds = unique;
    if (r.timingShapes.empty())
        r.timingShapes = { r.timingShape };
    r.timingShape = r.timingShapes.front();
    for (size_t i : r.timingShapes)
        if (r.wantTime && i >= r.bench.size())
            throw RequestError(std::string(r.timingShapes.size() > 1 ? "config.timing_shapes holds " : "config.timing_shape ")
                + std::to_string(i) + " is out of range; problem.bench has " + std::to_string(r.bench.size())
                + " shapes");

    if (r.screenProbe
        && std::find(r.timingShapes.begin() + 1, r.timingShapes.end(), *r.screenProbe) == r.timingShapes.end())
        throw RequestError("config.screen_probe.index " + std::to_string(*r.screenProbe)
            + " is not one of config.timing_shapes after the first");

    if (auto l = request.find("limits"); l != request.end() && !l->is_null()) {
        if (!l->is_object())
            throw RequestError("'limits' is not an object");
        r.compileSeconds = number(*l, "compile_s", "limits", 120);
        r.runSeconds = number(*l, "run_s", "limits", 60);
        if (!(r.compileSeconds > 0))
            throw RequestError("limits.compile_s must be positive");
    }
    r.extra = unknownKeys(request,
        { "protocol", "type", "id", "problem", "candidate", "baseline", "stages", "config", "limits", "secret" });
    return r;
}

} // namespace hone::core::protocol
