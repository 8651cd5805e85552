#include "core/problem_reader.h"

#include "core/problem_check.h"
#include "core/shape_trace.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace hone::core::detail {

std::string join(const std::vector<std::string>& items, const char* sep)
{
    std::string s;
    for (const auto& item : items)
        s += (s.empty() ? "" : sep) + item;
    return s;
}

std::string indexed(const std::string& prefix, size_t i)
{
    return prefix + "[" + std::to_string(i) + "]";
}

nlohmann::json toJson(Value v)
{
    return v.isInt ? nlohmann::json(v.i) : nlohmann::json(v.d);
}

namespace {

constexpr const char* kDtypes = "one of f32, f16, bf16, f64, i32, i64, u8";
constexpr size_t kMaxRank = 8;

bool isIdentifier(std::string_view s)
{
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
        return false;
    return std::all_of(
        s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool isProblemName(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
}

std::string typeName(const toml::node& n)
{
    switch (n.type()) {
    case toml::node_type::string:
        return "a string";
    case toml::node_type::integer:
        return "an integer";
    case toml::node_type::floating_point:
        return "a float";
    case toml::node_type::boolean:
        return "a boolean";
    case toml::node_type::array:
        return "an array";
    case toml::node_type::table:
        return "a table";
    default:
        return "a date or time";
    }
}

std::string field(const std::string& prefix, std::string_view key)
{
    return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

/// An integer literal stays an integer, a float literal stays a decimal ("4.0", not "4"), so
/// that `mean = 4.0` and `mean = "4.0"` mean the same.
std::string numberText(const toml::node& n)
{
    if (const auto* i = n.as_integer())
        return std::to_string(i->get());
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, n.as_floating_point()->get());
    std::string s(buf, r.ptr);
    if (s.find_first_of(".ein") == std::string::npos) // not for "inf" and "nan" either
        s += ".0";
    return s;
}

/// Walks the TOML tree once, validating as it goes; keeps every field's position so that
/// checks that run after the walk (symbol binding, evaluation) can still point at a line.
class Reader {
public:
    explicit Reader(std::string fileName)
        : m_file(std::move(fileName))
    {
    }

    ParsedProblem read(std::string_view text);

private:
    [[noreturn]] void fail(
        Pos pos, const std::string& path, const std::string& message, const std::string& expected) const
    {
        throw ProblemError(m_file, pos.line, pos.column, path, message, expected);
    }
    [[noreturn]] void fail(
        const std::string& path, const std::string& message, const std::string& expected) const
    {
        const auto it = m_pos.find(path);
        fail(it == m_pos.end() ? Pos {} : it->second, path, message, expected);
    }

    Pos posOf(const toml::node& n, Pos fallback) const
    {
        const auto& b = n.source().begin;
        // Implicit tables (created by `a.b = 1`) have no position of their own.
        return b.line == 0 ? fallback : Pos { static_cast<int>(b.line), static_cast<int>(b.column) };
    }

    static Pos keyPos(const toml::key& k)
    {
        return Pos { static_cast<int>(k.source().begin.line), static_cast<int>(k.source().begin.column) };
    }

    /// Rejects keys outside `allowed`, reporting the one that comes first in the file.
    void checkKeys(
        const toml::table& t, const std::string& path, const std::vector<std::string>& allowed) const
    {
        const toml::key* first = nullptr;
        for (auto&& [k, v] : t) {
            if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end())
                continue;
            const auto& b = k.source().begin;
            if (!first || b.line < first->source().begin.line
                || (b.line == first->source().begin.line && b.column < first->source().begin.column))
                first = &k;
        }
        if (first) // point at the key: the value is fine, its name is not
            fail(keyPos(*first), field(path, first->str()), "unknown key '" + std::string(first->str()) + "'",
                "one of " + join(allowed));
    }

    /// The node at `t.key`, recording its position; nullptr when absent and optional.
    const toml::node* get(const toml::table& t, Pos tablePos, const std::string& path, std::string_view key,
        bool required, const std::string& expected)
    {
        const std::string f = field(path, key);
        const toml::node* n = t.get(key);
        if (!n) {
            if (required)
                fail(tablePos, f, "missing required key", expected);
            m_pos[f] = tablePos;
            return nullptr;
        }
        m_pos[f] = posOf(*n, tablePos);
        return n;
    }

    std::optional<std::string> getString(const toml::table& t, Pos tablePos, const std::string& path,
        std::string_view key, bool required, const std::string& expected)
    {
        const toml::node* n = get(t, tablePos, path, key, required, expected);
        if (!n)
            return std::nullopt;
        if (!n->is_string())
            fail(field(path, key), "found " + typeName(*n), expected);
        return n->as_string()->get();
    }

    const toml::table& asTable(const toml::node& n, const std::string& path, const std::string& expected)
    {
        if (!n.is_table())
            fail(path, "found " + typeName(n), expected);
        return *n.as_table();
    }

    Expr readExpr(const toml::node& n, const std::string& path)
    {
        const std::string expected = "a number or an expression string";
        if (n.is_integer() || n.is_floating_point()) {
            if (n.is_floating_point() && !std::isfinite(n.as_floating_point()->get()))
                fail(path, "non-finite number", "a finite number");
            return Expr::parse(numberText(n));
        }
        if (!n.is_string())
            fail(path, "found " + typeName(n), expected);
        try {
            return Expr::parse(n.as_string()->get());
        } catch (const ExprError& e) {
            fail(path, e.what(), "an expression over shape symbols and params");
        }
    }

    void readParams(const toml::table& root);
    void readTensors(const toml::table& root, bool inputs);
    void readInit(const toml::table& t, Pos tablePos, const std::string& path, TensorSpec& tensor);
    void readShapes(const toml::table& root);
    void readProduction(const std::string& name);
    void readCost(const toml::table& root);
    void readTolerance(const toml::table& root);
    void readLibraries(const toml::table& root);
    void checkSymbols();
    void checkValues();

    std::string m_file;
    std::map<std::string, Pos> m_pos; // field path -> where it is (or where it is missing)
    ProblemSpec m_spec;
    std::map<std::string, std::string> m_tensorNames; // name -> field that declared it
    std::vector<std::pair<std::string, Expr>> m_exprs; // cost and init expressions by field
    std::string m_productionFile; // the trace's path, when [shapes] production names one
    std::string m_productionText;
    std::vector<int> m_traceLines; // per bench shape from the trace: its first row's line
};

ParsedProblem Reader::read(std::string_view text)
{
    toml::table root;
    try {
        root = toml::parse(text, std::string_view(m_file));
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        fail(Pos { static_cast<int>(b.line), static_cast<int>(b.column) }, "", std::string(e.description()),
            "valid TOML");
    }
    checkKeys(root, "",
        { "name", "family", "description", "baseline", "inputs", "outputs", "params", "shapes", "cost",
            "tolerance", "libraries", "check" });
    const Pos rootPos;
    m_spec.name = *getString(root, rootPos, "", "name", true, "a string of [a-z0-9_]+");
    if (!isProblemName(m_spec.name))
        fail("name", "invalid name '" + m_spec.name + "'",
            "only lower-case letters, digits and '_' ([a-z0-9_]+)");
    m_spec.family = *getString(root, rootPos, "", "family", true, "a non-empty string such as \"softmax\"");
    if (m_spec.family.empty())
        fail("family", "empty family", "a non-empty string such as \"softmax\"");
    m_spec.description = getString(root, rootPos, "", "description", false, "a string").value_or("");

    ParsedProblem parsed;
    if (auto baseline
        = getString(root, rootPos, "", "baseline", false, "a seed file name such as \"naive.cpp\"")) {
        if (baseline->empty() || baseline->find('/') != std::string::npos)
            fail("baseline", "invalid seed name '" + *baseline + "'",
                "a seed file name such as \"naive.cpp\"");
        m_spec.baseline = *baseline;
        parsed.baselinePos = m_pos["baseline"];
    }

    readParams(root);
    readTensors(root, true);
    readTensors(root, false);
    readShapes(root);
    readCost(root);
    readTolerance(root);
    readLibraries(root);
    checkSymbols();
    checkValues();
    m_spec.coverage = readCheckSection(root.get("check"), m_file, m_spec);
    parsed.productionText = std::move(m_productionText);
    parsed.spec = std::move(m_spec);
    return parsed;
}

void Reader::readParams(const toml::table& root)
{
    const toml::node* n = get(root, Pos {}, "", "params", false, "a table of numbers");
    if (!n)
        return;
    const toml::table& t = asTable(*n, "params", "a table of numbers");
    for (auto&& [k, v] : t) {
        const std::string f = field("params", k.str());
        m_pos[f] = posOf(v, m_pos["params"]);
        if (!isIdentifier(k.str()))
            fail(keyPos(k), f, "invalid param name '" + std::string(k.str()) + "'", "a C identifier");
        if (!v.is_integer() && !v.is_floating_point())
            fail(f, "found " + typeName(v), "a number");
        const double d = v.value<double>().value_or(0.0);
        if (!std::isfinite(d))
            fail(f, "non-finite number", "a finite number");
        m_spec.params[std::string(k.str())] = d;
    }
}

void Reader::readTensors(const toml::table& root, bool inputs)
{
    const std::string key = inputs ? "inputs" : "outputs";
    const std::string arrayExpected = "an array of tables ([[" + key + "]])";
    const toml::node* n = get(root, Pos {}, "", key, true, arrayExpected);
    if (!n->is_array())
        fail(key, "found " + typeName(*n), arrayExpected);
    const toml::array& arr = *n->as_array();
    if (arr.empty())
        fail(key, "empty array", "at least one tensor");
    std::vector<std::string> allowed = { "name", "dtype", "shape" };
    if (inputs)
        allowed.push_back("init");

    for (size_t i = 0; i < arr.size(); ++i) {
        const std::string path = indexed(key, i);
        m_pos[path] = posOf(*arr.get(i), m_pos[key]);
        const toml::table& t = asTable(*arr.get(i), path, "a table with name, dtype and shape");
        const Pos tablePos = m_pos[path];
        checkKeys(t, path, allowed);
        TensorSpec tensor;

        tensor.name = *getString(t, tablePos, path, "name", true, "a C identifier");
        if (!isIdentifier(tensor.name))
            fail(field(path, "name"), "invalid tensor name '" + tensor.name + "'", "a C identifier");
        const auto [it, fresh] = m_tensorNames.emplace(tensor.name, field(path, "name"));
        if (!fresh)
            fail(field(path, "name"), "duplicate tensor name '" + tensor.name + "' (also " + it->second + ")",
                "names unique across inputs and outputs");

        const std::string dtype = *getString(t, tablePos, path, "dtype", true, kDtypes);
        const auto dt = dtypeFromName(dtype);
        if (!dt)
            fail(field(path, "dtype"), "unknown dtype '" + dtype + "'", kDtypes);
        tensor.dtype = *dt;

        const std::string shapePath = field(path, "shape");
        const std::string shapeExpected = "an array of symbols and positive integers, e.g. [\"M\", 4]";
        const toml::node* s = get(t, tablePos, path, "shape", true, shapeExpected);
        if (!s->is_array())
            fail(shapePath, "found " + typeName(*s), shapeExpected);
        const toml::array& dims = *s->as_array();
        if (dims.empty())
            fail(shapePath, "empty shape", "at least one dimension (use [1] for a scalar)");
        if (dims.size() > kMaxRank)
            fail(shapePath, "rank " + std::to_string(dims.size()) + " is too high",
                "at most " + std::to_string(kMaxRank) + " dimensions");
        for (size_t d = 0; d < dims.size(); ++d) {
            const toml::node& dim = *dims.get(d);
            const std::string dimPath = indexed(shapePath, d);
            m_pos[dimPath] = posOf(dim, m_pos[shapePath]);
            Dim out;
            if (dim.is_integer()) {
                out.extent = dim.as_integer()->get();
                if (out.extent <= 0)
                    fail(dimPath, "extent " + std::to_string(out.extent) + " is not positive",
                        "a positive integer");
            } else if (dim.is_string()) {
                out.symbol = dim.as_string()->get();
                if (!isIdentifier(out.symbol))
                    fail(dimPath, "invalid symbol '" + out.symbol + "'",
                        "a symbol name or a positive integer");
                if (m_spec.params.count(out.symbol))
                    fail(dimPath, "'" + out.symbol + "' is a param", "a shape symbol bound by [shapes]");
            } else {
                fail(dimPath, "found " + typeName(dim), "a symbol name or a positive integer");
            }
            tensor.shape.push_back(std::move(out));
        }

        if (inputs)
            readInit(t, tablePos, path, tensor);
        (inputs ? m_spec.inputs : m_spec.outputs).push_back(std::move(tensor));
    }
}

void Reader::readInit(const toml::table& t, Pos tablePos, const std::string& path, TensorSpec& tensor)
{
    const std::string initPath = field(path, "init");
    const bool intType = !isFloat(tensor.dtype);
    std::vector<std::string> dists = intType ? std::vector<std::string> { "uniform", "randint" }
                                             : std::vector<std::string> { "normal", "uniform" };
    if (intType && tensor.shape.size() == 1)
        dists.push_back("offsets");
    const std::string forDtype = " for " + std::string(dtypeName(tensor.dtype))
        + (intType && tensor.shape.size() != 1 ? " with rank " + std::to_string(tensor.shape.size()) : "");

    const std::string tableExpected = "a table such as { dist = \"normal\" }";
    const toml::node* n = get(t, tablePos, path, "init", false, tableExpected);
    static const toml::table kNoInit;
    const toml::table& init = n ? asTable(*n, initPath, tableExpected) : kNoInit;
    const Pos initPos = m_pos[initPath]; // the tensor's table when init is absent
    const std::string distExpected = "one of " + join(dists) + forDtype;
    std::string& dist = tensor.init.dist;
    // Without an init table: unit normal floats, small non-negative ints.
    dist = intType ? "randint" : "normal";
    if (n) {
        dist = *getString(init, initPos, initPath, "dist", true, distExpected);
        const std::string distPath = field(initPath, "dist");
        if (dist != "normal" && dist != "uniform" && dist != "randint" && dist != "offsets")
            fail(distPath, "unknown distribution '" + dist + "'", distExpected);
        if (std::find(dists.begin(), dists.end(), dist) == dists.end())
            fail(distPath,
                "'" + dist + "' does not fit " + path + " (" + dtypeName(tensor.dtype) + ", rank "
                    + std::to_string(tensor.shape.size()) + ")",
                distExpected);
    }

    // name, default (empty: required)
    std::vector<std::pair<std::string, std::string>> args;
    if (dist == "normal")
        args = { { "mean", "0.0" }, { "std", "1.0" } };
    else if (dist == "offsets")
        args = { { "total", "" } };
    else if (!n)
        args = { { "low", "0" }, { "high", "100" } };
    else
        args = { { "low", "" }, { "high", "" } };
    std::vector<std::string> allowed = { "dist" };
    for (const auto& a : args)
        allowed.push_back(a.first);
    const bool sortable = !intType && tensor.shape.size() == 1 && (dist == "normal" || dist == "uniform");
    if (sortable)
        allowed.push_back("sorted");
    checkKeys(init, initPath, allowed);
    if (const toml::node* s = sortable ? init.get("sorted") : nullptr) {
        const std::string sortedPath = field(initPath, "sorted");
        m_pos[sortedPath] = posOf(*s, initPos);
        if (!s->is_boolean())
            fail(sortedPath, "found " + typeName(*s), "true or false");
        tensor.init.sorted = s->as_boolean()->get();
    }
    for (const auto& [name, fallback] : args) {
        const toml::node* v
            = get(init, initPos, initPath, name, fallback.empty(), "a number or an expression string");
        const std::string argPath = field(initPath, name);
        Expr e = v ? readExpr(*v, argPath) : Expr::parse(fallback);
        m_exprs.emplace_back(argPath, e);
        tensor.init.args[name] = std::move(e);
    }
}

void Reader::readShapes(const toml::table& root)
{
    const std::string setExpected = "a non-empty array of tables such as [ { M = 64, N = 128 } ]";
    const toml::node* n = get(root, Pos {}, "", "shapes", true, "a table with small and bench (or production)");
    const toml::table& shapes = asTable(*n, "shapes", "a table with small and bench (or production)");
    checkKeys(shapes, "shapes", { "small", "bench", "production" });
    const auto production = getString(shapes, m_pos["shapes"], "shapes", "production", false,
        "a trace file next to problem.toml, such as \"trace.csv\"");
    if (production && shapes.get("bench"))
        fail("shapes.production", "both bench and production are set",
            "either a weighted bench set or a production trace, not both");
    for (const bool small : { true, false }) {
        const std::string path = small ? "shapes.small" : "shapes.bench";
        if (!small && production) {
            readProduction(*production);
            continue;
        }
        const toml::node* s = get(shapes, m_pos["shapes"], "shapes", small ? "small" : "bench", true,
            small ? setExpected : setExpected + " (or production = \"trace.csv\")");
        if (!s->is_array())
            fail(path, "found " + typeName(*s), setExpected);
        const toml::array& arr = *s->as_array();
        if (arr.empty())
            fail(path, "empty array", setExpected);
        for (size_t i = 0; i < arr.size(); ++i) {
            const std::string entryPath = indexed(path, i);
            m_pos[entryPath] = posOf(*arr.get(i), m_pos[path]);
            const toml::table& entry
                = asTable(*arr.get(i), entryPath, "a table of symbol extents such as { M = 64 }");
            ShapeBinding binding;
            double weight = 1.0;
            for (auto&& [k, v] : entry) {
                const std::string f = field(entryPath, k.str());
                m_pos[f] = posOf(v, m_pos[entryPath]);
                const std::string sym(k.str());
                if (!small && sym == "weight") {
                    if (!v.is_integer() && !v.is_floating_point())
                        fail(f, "found " + typeName(v), "a positive number (the shape's share of calls)");
                    weight = v.value<double>().value_or(0.0);
                    if (!(weight > 0) || !std::isfinite(weight))
                        fail(f, "weight " + numberText(v) + " is not positive",
                            "a positive number (the shape's share of calls)");
                    continue;
                }
                if (small && sym == "weight")
                    fail(keyPos(k), f, "small shapes have no weight",
                        "weights on bench shapes only ('weight' is not a shape symbol)");
                if (!isIdentifier(sym))
                    fail(keyPos(k), f, "invalid symbol '" + sym + "'", "a C identifier");
                if (m_spec.params.count(sym))
                    fail(keyPos(k), f, "symbol '" + sym + "' is also a param",
                        "distinct names for shape symbols and params");
                if (!v.is_integer())
                    fail(f, "found " + typeName(v), "a positive integer");
                binding[sym] = v.as_integer()->get();
                if (binding[sym] <= 0)
                    fail(f, "extent " + std::to_string(binding[sym]) + " is not positive",
                        "a positive integer");
            }
            auto& set = small ? m_spec.smallShapes : m_spec.benchShapes;
            if (!small)
                for (size_t j = 0; j < set.size(); ++j)
                    if (set[j] == binding)
                        fail(entryPath, "the same shape as " + indexed(path, j),
                            "distinct bench shapes (give one entry a larger weight instead)");
            set.push_back(std::move(binding));
            if (!small)
                m_spec.benchWeights.push_back(weight);
        }
    }
}

void Reader::readProduction(const std::string& name)
{
    const std::string expected = "a trace file next to problem.toml, such as \"trace.csv\"";
    const std::filesystem::path rel(name);
    if (name.empty() || rel.is_absolute()
        || std::any_of(rel.begin(), rel.end(), [](const std::filesystem::path& p) { return p == ".."; }))
        fail("shapes.production", "invalid trace path '" + name + "'", expected);
    const std::filesystem::path path = std::filesystem::path(m_file).parent_path() / rel;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail("shapes.production", "cannot read " + path.string(), expected);
    std::ostringstream ss;
    ss << in.rdbuf();
    m_productionText = ss.str();
    m_spec.production = name;
    m_productionFile = path.string();
    for (TraceRow& row : readShapeTrace(m_productionText, m_productionFile)) {
        for (const auto& [sym, extent] : row.shape)
            if (m_spec.params.count(sym))
                throw ProblemError(m_productionFile, row.line, 1, sym, "symbol '" + sym + "' is also a param",
                    "distinct names for shape symbols and params");
        m_traceLines.push_back(row.line);
        m_spec.benchShapes.push_back(std::move(row.shape));
        m_spec.benchWeights.push_back(row.count);
    }
}

void Reader::readCost(const toml::table& root)
{
    const std::string expected = "an expression over shape symbols and params";
    const toml::node* n = get(root, Pos {}, "", "cost", true, "a table with flops and bytes");
    const toml::table& cost = asTable(*n, "cost", "a table with flops and bytes");
    checkKeys(cost, "cost", { "flops", "bytes", "compute" });
    if (auto unit = getString(cost, m_pos["cost"], "cost", "compute", false, "\"fma\" or \"tensor\"")) {
        if (*unit != "fma" && *unit != "tensor")
            fail("cost.compute", "unknown compute unit '" + *unit + "'", "\"fma\" or \"tensor\"");
        m_spec.computeUnit = *unit;
    }
    for (const char* key : { "flops", "bytes" }) {
        const toml::node* v = get(cost, m_pos["cost"], "cost", key, true, expected);
        // An imported problem whose FLOPs could not be derived says so; the roofline then
        // places its bytes only (docs/FORMATS.md).
        if (std::string_view(key) == "flops" && v->value<std::string>() == std::optional<std::string>("unknown")) {
            m_spec.flopsUnknown = true;
            m_spec.flops = Expr::parse("0");
            continue;
        }
        Expr e = readExpr(*v, field("cost", key));
        m_exprs.emplace_back(field("cost", key), e);
        (std::string_view(key) == "flops" ? m_spec.flops : m_spec.bytes) = std::move(e);
    }
}

void Reader::readTolerance(const toml::table& root)
{
    const std::string expected = "a table of output dtypes such as f32 = { atol = 1e-6, rtol = 1e-4 }";
    const toml::node* n = get(root, Pos {}, "", "tolerance", true, expected);
    const toml::table& tol = asTable(*n, "tolerance", expected);
    for (auto&& [k, v] : tol) {
        const std::string path = field("tolerance", k.str());
        m_pos[path] = posOf(v, m_pos["tolerance"]);
        const auto dt = dtypeFromName(k.str());
        if (!dt)
            fail(keyPos(k), path, "unknown dtype '" + std::string(k.str()) + "'", kDtypes);
        const toml::table& entry = asTable(v, path, "a table { atol = ..., rtol = ... }");
        checkKeys(entry, path, { "atol", "rtol" });
        Tolerance t;
        for (const char* key : { "atol", "rtol" }) {
            const toml::node* x = get(entry, m_pos[path], path, key, true, "a number >= 0");
            const std::string f = field(path, key);
            if (!x->is_integer() && !x->is_floating_point())
                fail(f, "found " + typeName(*x), "a number >= 0");
            const double d = x->value<double>().value_or(0.0);
            if (!(d >= 0.0) || !std::isfinite(d))
                fail(f, "tolerance " + numberText(*x) + " is not a finite number >= 0", "a number >= 0");
            (std::string_view(key) == "atol" ? t.atol : t.rtol) = d;
        }
        // Exact equality only makes sense for integers; float kernels legitimately round differently.
        if (isFloat(*dt) && t.atol == 0.0 && t.rtol == 0.0)
            fail(path, "atol and rtol are both 0", "a positive atol or rtol for a float dtype");
        m_spec.tolerance[*dt] = t;
    }
    for (size_t i = 0; i < m_spec.outputs.size(); ++i) {
        const DType dt = m_spec.outputs[i].dtype;
        if (!m_spec.tolerance.count(dt))
            fail(m_pos["tolerance"], field("tolerance", dtypeName(dt)),
                "missing tolerance for outputs[" + std::to_string(i) + "] (" + dtypeName(dt) + ")",
                "a table { atol = ..., rtol = ... }");
    }
}

void Reader::readLibraries(const toml::table& root)
{
    const toml::node* n = get(root, Pos {}, "", "libraries", false, "a table with allowed");
    if (!n)
        return;
    const toml::table& libs = asTable(*n, "libraries", "a table with allowed");
    checkKeys(libs, "libraries", { "allowed" });
    const std::string expected = "an array of library names such as [\"cublas\"]";
    const toml::node* a = get(libs, m_pos["libraries"], "libraries", "allowed", false, expected);
    if (!a)
        return;
    if (!a->is_array())
        fail("libraries.allowed", "found " + typeName(*a), expected);
    const toml::array& arr = *a->as_array();
    for (size_t i = 0; i < arr.size(); ++i) {
        const std::string f = indexed("libraries.allowed", i);
        m_pos[f] = posOf(*arr.get(i), m_pos["libraries.allowed"]);
        if (!arr.get(i)->is_string() || arr.get(i)->as_string()->get().empty())
            fail(f, "found " + typeName(*arr.get(i)), "a non-empty library name");
        m_spec.allowedLibraries.push_back(arr.get(i)->as_string()->get());
    }
}

void Reader::checkSymbols()
{
    // Every symbol in use, with the field that first used it, in file order.
    std::vector<std::pair<std::string, std::string>> used;
    auto use = [&](const std::string& sym, const std::string& where) {
        if (m_spec.params.count(sym))
            return;
        for (const auto& u : used)
            if (u.first == sym)
                return;
        used.emplace_back(sym, where);
    };
    std::set<std::string> known;
    for (const auto* list : { &m_spec.inputs, &m_spec.outputs })
        for (size_t i = 0; i < list->size(); ++i)
            for (size_t d = 0; d < (*list)[i].shape.size(); ++d)
                if (const auto& sym = (*list)[i].shape[d].symbol; !sym.empty()) {
                    known.insert(sym);
                    use(sym,
                        indexed(
                            field(indexed(list == &m_spec.inputs ? "inputs" : "outputs", i), "shape"), d));
                }
    for (const auto* set : { &m_spec.smallShapes, &m_spec.benchShapes })
        for (const auto& binding : *set)
            for (const auto& [sym, extent] : binding)
                known.insert(sym);

    std::vector<std::string> names(known.begin(), known.end());
    std::string expected = "a shape symbol (" + join(names) + ")";
    if (!m_spec.params.empty()) {
        std::vector<std::string> params;
        for (const auto& [p, v] : m_spec.params)
            params.push_back(p);
        expected += " or a param (" + join(params) + ")";
    }
    for (const auto& [path, e] : m_exprs)
        for (const auto& sym : e.symbols()) {
            if (!known.count(sym) && !m_spec.params.count(sym))
                fail(path, "unknown symbol '" + sym + "'", expected);
            use(sym, path);
        }

    std::vector<std::string> needed;
    for (const auto& u : used)
        needed.push_back(u.first);
    for (const bool small : { true, false }) {
        const auto& set = small ? m_spec.smallShapes : m_spec.benchShapes;
        for (size_t i = 0; i < set.size(); ++i)
            for (const auto& [sym, where] : used)
                if (!set[i].count(sym)) {
                    if (!small && !m_productionFile.empty())
                        throw ProblemError(m_productionFile, m_traceLines[i], 1, sym,
                            "no extent for symbol '" + sym + "' (used by " + where + ")",
                            "a column (CSV) or key (JSON) for every symbol in use (" + join(needed) + ")");
                    const std::string entry = indexed(small ? "shapes.small" : "shapes.bench", i);
                    fail(m_pos[entry], field(entry, sym),
                        "missing extent for symbol '" + sym + "' (used by " + where + ")",
                        "a positive integer for every symbol in use (" + join(needed) + ")");
                }
    }
}

void Reader::checkValues()
{
    // Evaluating every expression for every shape now turns a division by zero or an empty
    // randint range into a load-time error with a line number, not a failed run hours later.
    for (const bool small : { true, false }) {
        const auto& set = small ? m_spec.smallShapes : m_spec.benchShapes;
        for (size_t i = 0; i < set.size(); ++i) {
            const std::string label = indexed(small ? "shapes.small" : "shapes.bench", i);
            const ShapeBinding& binding = set[i];
            auto lookup = [&](std::string_view name) -> std::optional<Value> {
                if (const auto it = binding.find(std::string(name)); it != binding.end())
                    return Value::ofInt(it->second);
                if (const auto it = m_spec.params.find(std::string(name)); it != m_spec.params.end())
                    return Value::ofDouble(it->second);
                return std::nullopt;
            };
            std::map<std::string, Value> values;
            for (const auto& [path, e] : m_exprs) {
                try {
                    values[path] = e.eval(lookup);
                } catch (const ExprError& err) {
                    fail(path, std::string(err.what()) + " with " + label,
                        "an expression valid for every shape");
                }
            }
            for (const char* key : { "cost.flops", "cost.bytes" }) {
                const double v = values[key].asDouble();
                if (!(v >= 0.0) || !std::isfinite(v))
                    fail(key, "value " + std::to_string(v) + " with " + label, "a finite number >= 0");
            }
            for (size_t t = 0; t < m_spec.inputs.size(); ++t) {
                const std::string init = field(indexed("inputs", t), "init");
                const std::string& dist = m_spec.inputs[t].init.dist;
                auto arg = [&](const char* name) { return values[field(init, name)].asDouble(); };
                if (dist == "normal" && !(arg("std") >= 0.0))
                    fail(field(init, "std"), "negative std with " + label, "a number >= 0");
                if ((dist == "uniform" || dist == "randint") && !(arg("low") < arg("high")))
                    fail(field(init, "high"), "high is not above low with " + label, "high > low");
                if (dist == "offsets" && !(arg("total") >= 0.0))
                    fail(field(init, "total"), "negative total with " + label, "a number >= 0");
            }
        }
    }
}

} // namespace

ParsedProblem readProblemToml(std::string_view text, const std::string& fileName)
{
    return Reader(fileName).read(text);
}

} // namespace hone::core::detail
