#include "core/problem_check.h"

#include "core/problem_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace hone::core::detail {

namespace {

constexpr int kMaxRandomShapes = 16;
constexpr int kDefaultRandomShapes = 2;

Pos posOf(const toml::node& n, Pos fallback)
{
    const auto& b = n.source().begin;
    return b.line == 0 ? fallback : Pos { static_cast<int>(b.line), static_cast<int>(b.column) };
}

Pos keyPos(const toml::key& k)
{
    return Pos { static_cast<int>(k.source().begin.line), static_cast<int>(k.source().begin.column) };
}

bool isName(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

std::string kind(const toml::node& n)
{
    if (n.is_string())
        return "a string";
    if (n.is_integer())
        return "an integer";
    if (n.is_floating_point())
        return "a float";
    if (n.is_boolean())
        return "a boolean";
    if (n.is_array())
        return "an array";
    if (n.is_table())
        return "a table";
    return "a date or time";
}

class CheckReader {
public:
    CheckReader(const std::string& file, const ProblemSpec& spec)
        : m_file(file)
        , m_spec(spec)
    {
    }

    CheckCoverage read(const toml::node& node);

private:
    [[noreturn]] void fail(Pos pos, const std::string& path, const std::string& message,
        const std::string& expected) const
    {
        throw ProblemError(m_file, pos.line, pos.column, path, message, expected);
    }

    void checkKeys(const toml::table& t, const std::string& path, const std::vector<std::string>& allowed) const
    {
        for (auto&& [k, v] : t)
            if (std::find(allowed.begin(), allowed.end(), k.str()) == allowed.end())
                fail(keyPos(k), path + "." + std::string(k.str()), "unknown key '" + std::string(k.str()) + "'",
                    "one of " + join(allowed));
    }

    int64_t extent(const toml::node& n, Pos pos, const std::string& path) const
    {
        if (!n.is_integer() || n.as_integer()->get() < 1)
            fail(posOf(n, pos), path, n.is_integer() ? "extent " + std::to_string(n.as_integer()->get()) + " is not positive"
                                                    : "found " + kind(n),
                "a positive integer");
        return n.as_integer()->get();
    }

    Expr expr(const toml::node& n, Pos pos, const std::string& path, const std::string& expected) const
    {
        if (!n.is_string())
            fail(posOf(n, pos), path, "found " + kind(n), expected);
        try {
            return Expr::parse(n.as_string()->get());
        } catch (const ExprError& e) {
            fail(posOf(n, pos), path, e.what(), expected);
        }
    }

    void readRanges(const toml::node& n, Pos pos, CheckCoverage& c);
    void readDistributions(const toml::node& n, Pos pos, CheckCoverage& c);

    const std::string& m_file;
    const ProblemSpec& m_spec;
    std::set<std::string> m_symbols; // every symbol the listed shapes bind
    std::map<std::string, Pos> m_rangePos;
};

void CheckReader::readRanges(const toml::node& n, Pos pos, CheckCoverage& c)
{
    const std::string path = "check.ranges";
    const std::string tableExpected
        = "a table of symbol ranges such as { M = [1, 4096], N = { min = 1, max = 4096, multiple_of = 4 }, "
          "B1 = \"B + 1\" }";
    if (!n.is_table())
        fail(posOf(n, pos), path, "found " + kind(n), tableExpected);
    const Pos rangesPos = posOf(n, pos);
    const std::string rangeExpected
        = "[min, max], { min = .., max = .., multiple_of = .. }, or an expression string over the other symbols";
    for (auto&& [k, v] : *n.as_table()) {
        const std::string sym(k.str());
        const std::string f = path + "." + sym;
        const Pos p = posOf(v, keyPos(k));
        m_rangePos[sym] = p;
        if (!m_symbols.count(sym))
            fail(keyPos(k), f, "'" + sym + "' is not a shape symbol of this problem",
                "one of the symbols the small shapes bind (" + join({ m_symbols.begin(), m_symbols.end() }) + ")");
        SymbolRange r;
        r.symbol = sym;
        if (v.is_string()) {
            c.derived.push_back({ sym, expr(v, p, f, rangeExpected) });
            continue;
        }
        if (const auto* a = v.as_array()) {
            if (a->size() != 2)
                fail(p, f, "an array of " + std::to_string(a->size()) + " values", rangeExpected);
            r.min = extent(*a->get(0), p, f + "[0]");
            r.max = extent(*a->get(1), p, f + "[1]");
        } else if (const auto* t = v.as_table()) {
            checkKeys(*t, f, { "min", "max", "multiple_of" });
            for (const char* key : { "min", "max" })
                if (!t->get(key))
                    fail(p, f + "." + key, "missing required key", rangeExpected);
            r.min = extent(*t->get("min"), p, f + ".min");
            r.max = extent(*t->get("max"), p, f + ".max");
            if (const toml::node* m = t->get("multiple_of"))
                r.multipleOf = extent(*m, p, f + ".multiple_of");
        } else {
            fail(p, f, "found " + kind(v), rangeExpected);
        }
        if (r.max < r.min)
            fail(p, f, "max " + std::to_string(r.max) + " is below min " + std::to_string(r.min), "min <= max");
        if (r.max > (int64_t(1) << 40))
            fail(p, f, "max " + std::to_string(r.max) + " is too large", "at most 2^40 (keep random shapes small to moderate)");
        if (r.max / r.multipleOf < (r.min + r.multipleOf - 1) / r.multipleOf)
            fail(p, f, "no multiple of " + std::to_string(r.multipleOf) + " in [" + std::to_string(r.min) + ", "
                    + std::to_string(r.max) + "]",
                "a range that holds a multiple of multiple_of");
        c.ranges.push_back(r);
    }
    for (const auto& sym : m_symbols)
        if (!m_rangePos.count(sym))
            fail(rangesPos, path + "." + sym, "no range for symbol '" + sym + "'",
                "a range or an expression for every symbol of the listed shapes ("
                    + join({ m_symbols.begin(), m_symbols.end() }) + ")");

    // Derived symbols in an order where each refers only to ranged, earlier derived symbols and
    // params; anything else is a cycle or a symbol without a value.
    std::set<std::string> known;
    for (const auto& r : c.ranges)
        known.insert(r.symbol);
    std::vector<DerivedSymbol> ordered;
    std::vector<DerivedSymbol> pending = c.derived;
    while (!pending.empty()) {
        const size_t before = pending.size();
        for (auto it = pending.begin(); it != pending.end();) {
            const auto syms = it->expr.symbols();
            if (std::all_of(syms.begin(), syms.end(),
                    [&](const std::string& s) { return known.count(s) || m_spec.params.count(s); })) {
                known.insert(it->symbol);
                ordered.push_back(*it);
                it = pending.erase(it);
            } else {
                ++it;
            }
        }
        if (pending.size() == before) {
            const DerivedSymbol& d = pending.front();
            fail(m_rangePos[d.symbol], path + "." + d.symbol,
                "'" + d.expr.text() + "' refers to a symbol without a value, or derived symbols refer to each other",
                "an expression over ranged symbols, earlier derived symbols and params");
        }
    }
    c.derived = std::move(ordered);
}

void CheckReader::readDistributions(const toml::node& n, Pos pos, CheckCoverage& c)
{
    const std::string path = "check.distributions";
    const std::string expected = "an array of tables such as [ { name = \"large\", scale = 30.0 } ]";
    if (!n.is_array())
        fail(posOf(n, pos), path, "found " + kind(n), expected);
    const toml::array& arr = *n.as_array();
    std::vector<std::string> floatInputs;
    for (const auto& t : m_spec.inputs)
        if (isFloat(t.dtype))
            floatInputs.push_back(t.name);
    for (size_t i = 0; i < arr.size(); ++i) {
        const std::string f = indexed(path, i);
        const Pos p = posOf(*arr.get(i), posOf(n, pos));
        if (!arr.get(i)->is_table())
            fail(p, f, "found " + kind(*arr.get(i)), expected);
        const toml::table& t = *arr.get(i)->as_table();
        checkKeys(t, f, { "name", "inputs", "scale", "shift", "sign", "constant" });
        CheckDistribution d;
        const toml::node* name = t.get("name");
        if (!name || !name->is_string() || !isName(name->as_string()->get()))
            fail(name ? posOf(*name, p) : p, f + ".name", name ? "invalid name" : "missing required key",
                "a name of [a-z0-9_]+, such as \"large\" (failures name it)");
        d.name = name->as_string()->get();
        for (const auto& other : c.distributions)
            if (other.name == d.name)
                fail(posOf(*name, p), f + ".name", "a second distribution named '" + d.name + "'", "distinct names");
        auto number = [&](const char* key, double fallback) {
            const toml::node* v = t.get(key);
            if (!v)
                return fallback;
            const double x = v->value<double>().value_or(NAN);
            if ((!v->is_integer() && !v->is_floating_point()) || !std::isfinite(x))
                fail(posOf(*v, p), f + "." + key, "found " + kind(*v), "a finite number");
            return x;
        };
        d.scale = number("scale", 1.0);
        d.shift = number("shift", 0.0);
        if (d.scale == 0)
            fail(posOf(*t.get("scale"), p), f + ".scale", "scale 0 makes every value the shift",
                "a non-zero factor (constant = \"all\" makes a tensor constant)");
        auto word = [&](const char* key, const std::vector<std::string>& words) -> std::string {
            const toml::node* v = t.get(key);
            if (!v)
                return words.front();
            if (!v->is_string() || std::find(words.begin(), words.end(), v->as_string()->get()) == words.end())
                fail(posOf(*v, p), f + "." + key,
                    v->is_string() ? "unknown value '" + v->as_string()->get() + "'" : "found " + kind(*v),
                    "one of " + join(words));
            return v->as_string()->get();
        };
        const std::string sign = word("sign", { "keep", "negative", "positive" });
        d.sign = sign == "negative" ? SignTransform::Negative
            : sign == "positive"    ? SignTransform::Positive
                                    : SignTransform::Keep;
        const std::string constant = word("constant", { "none", "rows", "all" });
        d.constant = constant == "rows" ? ConstantTransform::Rows
            : constant == "all"         ? ConstantTransform::All
                                        : ConstantTransform::None;
        if (d.scale == 1 && d.shift == 0 && d.sign == SignTransform::Keep && d.constant == ConstantTransform::None)
            fail(p, f, "distribution '" + d.name + "' changes nothing",
                "at least one of scale, shift, sign = \"negative\"|\"positive\", constant = \"rows\"|\"all\"");
        const std::string inputsExpected = "an array of float input names (" + join(floatInputs)
            + "); integer inputs (indices, offsets) keep their init";
        if (const toml::node* in = t.get("inputs")) {
            if (!in->is_array() || in->as_array()->empty())
                fail(posOf(*in, p), f + ".inputs", "found " + kind(*in), inputsExpected);
            for (size_t k = 0; k < in->as_array()->size(); ++k) {
                const toml::node& e = *in->as_array()->get(k);
                const std::string s = e.is_string() ? e.as_string()->get() : "";
                if (std::find(floatInputs.begin(), floatInputs.end(), s) == floatInputs.end())
                    fail(posOf(e, p), indexed(f + ".inputs", k),
                        e.is_string() ? "'" + s + "' is not a float input" : "found " + kind(e), inputsExpected);
                d.inputs.push_back(s);
            }
        } else if (floatInputs.empty()) {
            fail(p, f, "the problem has no float inputs to transform", "no distributions for integer-only inputs");
        }
        c.distributions.push_back(std::move(d));
    }
}

CheckCoverage CheckReader::read(const toml::node& node)
{
    CheckCoverage c;
    const std::string tableExpected = "a table with shapes, ranges, require and distributions";
    if (!node.is_table())
        fail(posOf(node, Pos {}), "check", "found " + kind(node), tableExpected);
    const toml::table& t = *node.as_table();
    const Pos pos = posOf(node, Pos {});
    checkKeys(t, "check", { "shapes", "ranges", "require", "distributions" });
    for (const auto& binding : m_spec.smallShapes)
        for (const auto& [sym, extent] : binding)
            m_symbols.insert(sym);

    if (const toml::node* r = t.get("ranges")) {
        readRanges(*r, pos, c);
        c.randomShapes = kDefaultRandomShapes;
    }
    if (const toml::node* s = t.get("shapes")) {
        const Pos p = posOf(*s, pos);
        const std::string expected = "an integer in [0, " + std::to_string(kMaxRandomShapes)
            + "]: random shapes drawn per evaluation";
        if (!s->is_integer() || s->as_integer()->get() < 0 || s->as_integer()->get() > kMaxRandomShapes)
            fail(p, "check.shapes", s->is_integer() ? "value " + std::to_string(s->as_integer()->get()) : "found " + kind(*s),
                expected);
        if (c.ranges.empty() && s->as_integer()->get() > 0)
            fail(p, "check.shapes", "random shapes without ranges",
                "check.ranges = { SYMBOL = [min, max], ... } to draw them from");
        c.randomShapes = static_cast<int>(s->as_integer()->get());
    }
    if (const toml::node* q = t.get("require")) {
        const Pos p = posOf(*q, pos);
        const std::string expected = "an array of expression strings over shape symbols and params, such as [\"L >= B\"]";
        if (!q->is_array())
            fail(p, "check.require", "found " + kind(*q), expected);
        if (c.ranges.empty())
            fail(p, "check.require", "require without ranges", "check.ranges to draw shapes from");
        for (size_t i = 0; i < q->as_array()->size(); ++i) {
            const toml::node& e = *q->as_array()->get(i);
            Expr x = expr(e, p, indexed("check.require", i), expected);
            for (const auto& sym : x.symbols())
                if (!m_symbols.count(sym) && !m_spec.params.count(sym))
                    fail(posOf(e, p), indexed("check.require", i), "unknown symbol '" + sym + "'",
                        "shape symbols (" + join({ m_symbols.begin(), m_symbols.end() }) + ") or params");
            c.require.push_back(std::move(x));
        }
    }
    if (const toml::node* d = t.get("distributions"))
        readDistributions(*d, pos, c);

    // Draw a few shapes now, as the worker will, and resolve them: a derived symbol that is not
    // positive, a require no shape meets or an init that breaks (an empty randint range) is a
    // load-time error with a line, not a worker_error during the search.
    if (!c.ranges.empty()) {
        const Pos rangesPos = posOf(*t.get("ranges"), pos);
        CheckCoverage probe = c;
        probe.randomShapes = 16;
        std::vector<ShapeBinding> drawn;
        try {
            drawn = probe.drawShapes(1, m_spec.smallShapes, m_spec.params);
        } catch (const std::runtime_error& e) {
            fail(rangesPos, "check.ranges", e.what(),
                "ranges whose derived symbols stay positive and where every require can hold");
        }
        const ShapeTemplate shapes = shapeTemplate(m_spec);
        for (const auto& b : drawn) {
            try {
                const nlohmann::json j = shapes.resolve(b, m_spec.params, "check shape (" + symbolsText(b) + ")");
                for (const auto& in : j["inputs"]) {
                    const auto& init = in["init"];
                    const double low = init.value("low", 0.0), high = init.value("high", 1.0);
                    if ((init["dist"] == "uniform" || init["dist"] == "randint") && !(low < high))
                        throw ShapeResolveError("inputs." + in["name"].get<std::string>() + ".init.high",
                            "high is not above low with check shape (" + symbolsText(b) + ")", "high > low");
                }
            } catch (const ShapeResolveError& e) {
                fail(rangesPos, "check.ranges", std::string(e.what()) + " (" + e.path() + ")",
                    "ranges for which " + e.expected());
            }
        }
    }
    return c;
}

} // namespace

CheckCoverage readCheckSection(const toml::node* check, const std::string& file, const ProblemSpec& spec)
{
    if (!check)
        return {};
    return CheckReader(file, spec).read(*check);
}

} // namespace hone::core::detail
