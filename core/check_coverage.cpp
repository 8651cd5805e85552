#include "core/check_coverage.h"

#include "resources/include/hone/draws.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

namespace hone::core {

namespace {

using json = nlohmann::json;

std::string indexed(const std::string& prefix, size_t i)
{
    return prefix + "[" + std::to_string(i) + "]";
}

[[noreturn]] void bad(const std::string& where, const std::string& what)
{
    throw std::runtime_error(where + " " + what);
}

const json& need(const json& j, const char* key, const std::string& where)
{
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        bad(where, std::string("has no '") + key + "'");
    return *it;
}

std::string needString(const json& j, const char* key, const std::string& where)
{
    const json& v = need(j, key, where);
    if (!v.is_string())
        bad(where + "." + key, "is not a string");
    return v.get<std::string>();
}

int64_t needInt(const json& j, const char* key, const std::string& where)
{
    const json& v = need(j, key, where);
    if (!v.is_number_integer())
        bad(where + "." + key, "is not an integer");
    return v.get<int64_t>();
}

double numberOr(const json& j, const char* key, const std::string& where, double fallback)
{
    auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return fallback;
    if (!it->is_number() || !std::isfinite(it->get<double>()))
        bad(where + "." + key, "is not a finite number");
    return it->get<double>();
}

Expr parseExpr(const json& j, const std::string& where)
{
    if (!j.is_string())
        bad(where, "is not an expression string");
    try {
        return Expr::parse(j.get<std::string>());
    } catch (const ExprError& e) {
        bad(where, std::string("is not an expression: ") + e.what());
    }
}

SymbolLookup lookupIn(const ShapeBinding& shape, const std::map<std::string, double>& params)
{
    return [&shape, &params](std::string_view name) -> std::optional<Value> {
        if (const auto it = shape.find(std::string(name)); it != shape.end())
            return Value::ofInt(it->second);
        if (const auto it = params.find(std::string(name)); it != params.end())
            return Value::ofDouble(it->second);
        return std::nullopt;
    };
}

json valueJson(Value v)
{
    return v.isInt ? json(v.i) : json(v.d);
}

json tensorJson(const ShapeTemplate::Tensor& t, bool input)
{
    json j = { { "name", t.name }, { "dtype", dtypeName(t.dtype) }, { "shape", t.dims } };
    if (input) {
        json args = json::object();
        for (const auto& [name, e] : t.args)
            args[name] = e.text();
        j["init"] = { { "dist", t.dist }, { "args", args }, { "sorted", t.sorted } };
    }
    return j;
}

ShapeTemplate::Tensor tensorFromJson(const json& j, const std::string& where, bool input)
{
    if (!j.is_object())
        bad(where, "is not an object");
    ShapeTemplate::Tensor t;
    t.name = needString(j, "name", where);
    const auto dtype = dtypeFromName(needString(j, "dtype", where));
    if (!dtype)
        bad(where + ".dtype", "is not a known dtype");
    t.dtype = *dtype;
    const json& dims = need(j, "shape", where);
    if (!dims.is_array())
        bad(where + ".shape", "is not an array");
    for (const auto& d : dims) {
        const std::string text = d.is_string() ? d.get<std::string>() : std::string();
        // A symbol (an identifier), or a fixed extent as decimal digits that fit an int64.
        const bool extent = !text.empty() && text.size() <= 18
            && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        const bool symbol = !text.empty() && !std::isdigit(static_cast<unsigned char>(text[0]))
            && std::all_of(text.begin(), text.end(),
                [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
        if (!extent && !symbol)
            bad(where + ".shape", "holds a value that is not a symbol or an extent string");
        t.dims.push_back(text);
    }
    if (input) {
        const json& init = need(j, "init", where);
        if (!init.is_object())
            bad(where + ".init", "is not an object");
        t.dist = needString(init, "dist", where + ".init");
        if (auto a = init.find("args"); a != init.end() && !a->is_null()) {
            if (!a->is_object())
                bad(where + ".init.args", "is not an object");
            for (auto it = a->begin(); it != a->end(); ++it)
                t.args[it.key()] = parseExpr(it.value(), where + ".init.args." + it.key());
        }
        if (auto s = init.find("sorted"); s != init.end() && !s->is_null()) {
            if (!s->is_boolean())
                bad(where + ".init.sorted", "is not a boolean");
            t.sorted = s->get<bool>();
        }
    }
    return t;
}

/// Extents in [min, max] that are multiples of `multipleOf`, log-uniform so that small and odd
/// extents come often and the largest ones still come.
int64_t drawExtent(const SymbolRange& r, hone_draws::Xoshiro256& gen)
{
    const int64_t lo = (r.min + r.multipleOf - 1) / r.multipleOf; // in units of multipleOf
    const int64_t hi = r.max / r.multipleOf;
    if (hi <= lo)
        return lo * r.multipleOf;
    const double u = static_cast<double>(gen.next() >> 11) * 0x1.0p-53;
    const double logLo = std::log(static_cast<double>(lo));
    const double logHi = std::log(static_cast<double>(hi) + 1.0);
    const auto k = static_cast<int64_t>(std::exp(logLo + u * (logHi - logLo)));
    return std::clamp(k, lo, hi) * r.multipleOf;
}

} // namespace

nlohmann::json ShapeTemplate::resolve(
    const ShapeBinding& shape, const std::map<std::string, double>& params, const std::string& label) const
{
    const SymbolLookup lookup = lookupIn(shape, params);
    auto eval = [&](const Expr& e, const std::string& path) {
        try {
            return e.eval(lookup);
        } catch (const ExprError& err) {
            throw ShapeResolveError(path, std::string(err.what()) + " with " + label,
                "an expression valid for every shape");
        }
    };
    auto tensors = [&](const std::vector<Tensor>& list, const std::string& key) {
        json out = json::array();
        for (size_t i = 0; i < list.size(); ++i) {
            const Tensor& t = list[i];
            json dims = json::array();
            for (const std::string& d : t.dims) {
                if (std::isdigit(static_cast<unsigned char>(d[0]))) {
                    dims.push_back(std::stoll(d));
                    continue;
                }
                const auto it = shape.find(d);
                if (it == shape.end())
                    throw ShapeResolveError(indexed(key, i) + ".shape", "symbol '" + d + "' not bound by " + label,
                        "an extent for every shape symbol");
                dims.push_back(it->second);
            }
            json j = { { "name", t.name }, { "dtype", dtypeName(t.dtype) }, { "shape", dims } };
            if (key == "inputs") {
                json init = { { "dist", t.dist } };
                for (const auto& [name, e] : t.args)
                    init[name] = valueJson(eval(e, indexed(key, i) + ".init." + name));
                if (t.sorted)
                    init["sorted"] = true;
                j["init"] = init;
            }
            out.push_back(std::move(j));
        }
        return out;
    };
    json symbols = json::object();
    for (const auto& [sym, extent] : shape)
        symbols[sym] = extent;
    json out = {
        { "label", label },
        { "symbols", symbols },
        { "flops", eval(flops, "cost.flops").asDouble() },
        { "bytes", eval(bytes, "cost.bytes").asDouble() },
        { "compute", compute },
        { "inputs", tensors(inputs, "inputs") },
        { "outputs", tensors(outputs, "outputs") },
    };
    if (flopsUnknown)
        out["flops_unknown"] = true;
    return out;
}

nlohmann::json ShapeTemplate::toJson() const
{
    json in = json::array();
    for (const auto& t : inputs)
        in.push_back(tensorJson(t, true));
    json out = json::array();
    for (const auto& t : outputs)
        out.push_back(tensorJson(t, false));
    return { { "inputs", in }, { "outputs", out }, { "flops", flops.text() }, { "bytes", bytes.text() },
        { "compute", compute }, { "flops_unknown", flopsUnknown } };
}

ShapeTemplate ShapeTemplate::fromJson(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        bad(where, "is not an object");
    ShapeTemplate t;
    for (const bool input : { true, false }) {
        const char* key = input ? "inputs" : "outputs";
        const json& list = need(j, key, where);
        if (!list.is_array())
            bad(where + "." + key, "is not an array");
        for (size_t i = 0; i < list.size(); ++i)
            (input ? t.inputs : t.outputs)
                .push_back(tensorFromJson(list[i], indexed(where + "." + key, i), input));
    }
    t.flops = parseExpr(need(j, "flops", where), where + ".flops");
    t.bytes = parseExpr(need(j, "bytes", where), where + ".bytes");
    if (auto c = j.find("compute"); c != j.end() && !c->is_null())
        t.compute = needString(j, "compute", where);
    if (auto u = j.find("flops_unknown"); u != j.end() && !u->is_null()) {
        if (!u->is_boolean())
            bad(where + ".flops_unknown", "is not a boolean");
        t.flopsUnknown = u->get<bool>();
    }
    return t;
}

const char* signName(SignTransform s)
{
    switch (s) {
    case SignTransform::Negative:
        return "negative";
    case SignTransform::Positive:
        return "positive";
    default:
        return "keep";
    }
}

const char* constantName(ConstantTransform c)
{
    switch (c) {
    case ConstantTransform::Rows:
        return "rows";
    case ConstantTransform::All:
        return "all";
    default:
        return "none";
    }
}

bool CheckDistribution::appliesTo(const std::string& input) const
{
    return inputs.empty() || std::find(inputs.begin(), inputs.end(), input) != inputs.end();
}

nlohmann::json CheckDistribution::transformJson() const
{
    return { { "name", name }, { "scale", scale }, { "shift", shift }, { "sign", signName(sign) },
        { "constant", constantName(constant) } };
}

std::vector<ShapeBinding> CheckCoverage::drawShapes(
    uint64_t seed, const std::vector<ShapeBinding>& listed, const std::map<std::string, double>& params) const
{
    std::vector<ShapeBinding> out;
    if (ranges.empty() || randomShapes <= 0)
        return out;
    hone_draws::Xoshiro256 gen(seed ^ 0x636f766572616765ull); // "coverage"
    for (int tries = 0; static_cast<int>(out.size()) < randomShapes; ++tries) {
        if (tries >= 1000)
            throw std::runtime_error("1000 draws from the [check] ranges found no shape that meets every "
                                     "require and differs from the listed ones; widen the ranges");
        ShapeBinding b;
        for (const auto& r : ranges)
            b[r.symbol] = drawExtent(r, gen);
        const SymbolLookup lookup = lookupIn(b, params);
        bool ok = true;
        try {
            for (const auto& d : derived) {
                const Value v = d.expr.eval(lookup);
                b[d.symbol] = v.isInt ? v.i : static_cast<int64_t>(std::llround(v.d));
                ok = ok && b[d.symbol] > 0;
            }
            for (const auto& r : require)
                ok = ok && r.eval(lookup).truthy();
        } catch (const ExprError&) {
            ok = false;
        }
        if (!ok)
            continue;
        // Compared on the symbols the ranges and derived symbols bind: a listed shape is
        // already checked, and a shape drawn twice proves nothing new.
        auto same = [&](const ShapeBinding& l) {
            return std::all_of(b.begin(), b.end(), [&](const auto& kv) {
                const auto it = l.find(kv.first);
                return it != l.end() && it->second == kv.second;
            });
        };
        if (std::any_of(listed.begin(), listed.end(), same) || std::any_of(out.begin(), out.end(), same))
            continue;
        out.push_back(std::move(b));
    }
    return out;
}

nlohmann::json CheckCoverage::toJson() const
{
    json r = json::array();
    for (const auto& x : ranges)
        r.push_back({ { "symbol", x.symbol }, { "min", x.min }, { "max", x.max }, { "multiple_of", x.multipleOf } });
    json d = json::array();
    for (const auto& x : derived)
        d.push_back({ { "symbol", x.symbol }, { "expr", x.expr.text() } });
    json q = json::array();
    for (const auto& x : require)
        q.push_back(x.text());
    json dists = json::array();
    for (const auto& x : distributions) {
        json t = x.transformJson();
        t["inputs"] = x.inputs;
        dists.push_back(std::move(t));
    }
    json j = { { "shapes", randomShapes }, { "ranges", r }, { "derived", d }, { "require", q },
        { "distributions", dists } };
    if (!ranges.empty())
        j["template"] = shape.toJson();
    return j;
}

CheckCoverage CheckCoverage::fromJson(const nlohmann::json& j, const std::string& where)
{
    if (!j.is_object())
        bad(where, "is not an object");
    CheckCoverage c;
    auto list = [&](const char* key) -> const json& {
        static const json kEmpty = json::array();
        auto it = j.find(key);
        if (it == j.end() || it->is_null())
            return kEmpty;
        if (!it->is_array())
            bad(where + "." + key, "is not an array");
        return *it;
    };
    const int64_t shapes = j.contains("shapes") ? needInt(j, "shapes", where) : 0;
    if (shapes < 0 || shapes > 64)
        bad(where + ".shapes", "is not an integer in [0, 64]");
    c.randomShapes = static_cast<int>(shapes);
    const json& ranges = list("ranges");
    for (size_t i = 0; i < ranges.size(); ++i) {
        const std::string w = indexed(where + ".ranges", i);
        if (!ranges[i].is_object())
            bad(w, "is not an object");
        SymbolRange r;
        r.symbol = needString(ranges[i], "symbol", w);
        r.min = needInt(ranges[i], "min", w);
        r.max = needInt(ranges[i], "max", w);
        r.multipleOf = ranges[i].contains("multiple_of") ? needInt(ranges[i], "multiple_of", w) : 1;
        if (r.min < 1 || r.max < r.min || r.max > (int64_t(1) << 40) || r.multipleOf < 1
            || r.max / r.multipleOf < (r.min + r.multipleOf - 1) / r.multipleOf)
            bad(w, "is not a range of positive extents holding a multiple of multiple_of");
        c.ranges.push_back(std::move(r));
    }
    const json& derived = list("derived");
    for (size_t i = 0; i < derived.size(); ++i) {
        const std::string w = indexed(where + ".derived", i);
        if (!derived[i].is_object())
            bad(w, "is not an object");
        c.derived.push_back({ needString(derived[i], "symbol", w), parseExpr(need(derived[i], "expr", w), w + ".expr") });
    }
    const json& require = list("require");
    for (size_t i = 0; i < require.size(); ++i)
        c.require.push_back(parseExpr(require[i], indexed(where + ".require", i)));
    const json& dists = list("distributions");
    for (size_t i = 0; i < dists.size(); ++i) {
        const std::string w = indexed(where + ".distributions", i);
        const json& x = dists[i];
        if (!x.is_object())
            bad(w, "is not an object");
        CheckDistribution d;
        d.name = needString(x, "name", w);
        d.scale = numberOr(x, "scale", w, 1.0);
        d.shift = numberOr(x, "shift", w, 0.0);
        const std::string sign = x.contains("sign") ? needString(x, "sign", w) : "keep";
        if (sign == "negative")
            d.sign = SignTransform::Negative;
        else if (sign == "positive")
            d.sign = SignTransform::Positive;
        else if (sign != "keep")
            bad(w + ".sign", "is not keep, negative or positive");
        const std::string constant = x.contains("constant") ? needString(x, "constant", w) : "none";
        if (constant == "rows")
            d.constant = ConstantTransform::Rows;
        else if (constant == "all")
            d.constant = ConstantTransform::All;
        else if (constant != "none")
            bad(w + ".constant", "is not none, rows or all");
        if (auto in = x.find("inputs"); in != x.end() && !in->is_null()) {
            if (!in->is_array())
                bad(w + ".inputs", "is not an array");
            for (const auto& name : *in) {
                if (!name.is_string())
                    bad(w + ".inputs", "holds a value that is not a string");
                d.inputs.push_back(name.get<std::string>());
            }
        }
        c.distributions.push_back(std::move(d));
    }
    if (!c.ranges.empty())
        c.shape = ShapeTemplate::fromJson(need(j, "template", where), where + ".template");
    return c;
}

std::string symbolsText(const ShapeBinding& shape)
{
    std::string s;
    for (const auto& [sym, extent] : shape)
        s += (s.empty() ? "" : ", ") + sym + "=" + std::to_string(extent);
    return s;
}

} // namespace hone::core
