#include "core/problem_spec.h"

#include "core/problem_reader.h"
#include "core/sha256.h"
#include "core/utf8.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace hone::core {

namespace fs = std::filesystem;

namespace {

std::string formatProblemError(const std::string& file, int line, int column, const std::string& field,
    const std::string& message, const std::string& expected)
{
    std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": field '" + field
        + "': " + message;
    if (!expected.empty())
        s += "; expected " + expected;
    return s;
}

std::optional<std::string> readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Sources travel to the worker as JSON text, which must be UTF-8: say where a file is not.
void requireUtf8(const fs::path& path, const std::string& text)
{
    const size_t at = firstInvalidUtf8(text);
    if (at == std::string::npos)
        return;
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
    const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const size_t lineStart = newline == std::string::npos ? 0 : newline + 1;
    const int column = 1 + static_cast<int>(at - lineStart);
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[at]));
    throw ProblemError(path.string(), line, column, "", std::string("not valid UTF-8 (byte ") + byte + ")",
        "source text saved as UTF-8");
}

void hashPart(std::string& data, const std::string& name, const std::string& content)
{
    // Length-prefixed so that moving text between files changes the hash.
    data += name;
    data += '\0';
    data += std::to_string(content.size());
    data += '\0';
    data += content;
}

using detail::indexed;
using detail::join;

} // namespace

ProblemError::ProblemError(
    std::string file, int line, int column, std::string field, std::string message, std::string expected)
    : std::runtime_error(formatProblemError(file, line, column, field, message, expected))
    , m_file(std::move(file))
    , m_line(line)
    , m_column(column)
    , m_field(std::move(field))
{
}

const Seed* ProblemSpec::baselineSeed() const
{
    for (const auto& s : seeds)
        if (s.fileName == baseline)
            return &s;
    if (referenceLang == "python" && baseline == "reference.py")
        return &referenceSeed;
    return nullptr;
}

ProblemSpec parseProblemToml(std::string_view text, const std::string& fileName)
{
    return detail::readProblemToml(text, fileName).spec;
}

ProblemSpec loadProblem(const fs::path& dir)
{
    const fs::path tomlPath = dir / "problem.toml";
    const auto toml = readFile(tomlPath);
    if (!toml)
        throw ProblemError(tomlPath.string(), 1, 1, "", "cannot read the file",
            "a problem folder with problem.toml, reference.cpp and seeds/");
    detail::ParsedProblem parsed = detail::readProblemToml(*toml, tomlPath.string());
    ProblemSpec& spec = parsed.spec;
    spec.dir = dir;

    // A C++ reference (reference.cpp), or a PyTorch one (reference.py) that the worker runs
    // in a Python process (docs/FORMATS.md); never both.
    const bool torchReference = fs::exists(dir / "reference.py");
    if (torchReference && fs::exists(dir / "reference.cpp"))
        throw ProblemError((dir / "reference.py").string(), 1, 1, "", "both reference.cpp and reference.py",
            "one reference: reference.cpp (C++) or reference.py (PyTorch)");
    spec.referenceLang = torchReference ? "python" : "cpp";
    const fs::path refPath = dir / spec.referenceFile();
    const auto reference = readFile(refPath);
    if (!reference)
        throw ProblemError(refPath.string(), 1, 1, "", "cannot read the file",
            "a CPU reference implementing resources/include/hone/kernel.h, or a PyTorch reference.py");
    requireUtf8(refPath, *reference);
    spec.referenceSource = *reference;
    spec.referenceSeed = Seed { "reference.py", "python", *reference };

    const fs::path seedDir = dir / "seeds";
    std::error_code ec;
    std::vector<fs::path> paths;
    for (fs::directory_iterator it(seedDir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().rfind('.', 0) != 0) // editors and VCS leave dotfiles
            paths.push_back(it->path());
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
        const std::string ext = p.extension().string();
        const std::string lang = ext == ".cpp" ? "cpp" : ext == ".cu" ? "cuda" : ext == ".hip" ? "hip" : "";
        if (lang.empty() || !fs::is_regular_file(p))
            throw ProblemError(p.string(), 1, 1, "",
                lang.empty() ? "unknown seed extension '" + ext + "'" : "not a regular file",
                "seed files ending in .cpp, .cu or .hip");
        const auto source = readFile(p);
        if (!source)
            throw ProblemError(p.string(), 1, 1, "", "cannot read the file", "a readable seed source");
        requireUtf8(p, *source);
        spec.seeds.push_back(Seed { p.filename().string(), lang, *source });
    }
    // A PyTorch reference is also a baseline, so such a problem needs no seed (an LLM writes
    // the kernels from the reference).
    if (spec.seeds.empty() && !torchReference)
        throw ProblemError(
            seedDir.string(), 1, 1, "", "no seed sources", "at least one seeds/*.cpp, *.cu or *.hip");

    std::vector<std::string> seedNames;
    for (const auto& s : spec.seeds)
        seedNames.push_back(s.fileName);
    if (torchReference)
        seedNames.push_back("reference.py");
    if (spec.baseline.empty() && spec.seeds.empty()) {
        spec.baseline = "reference.py";
    } else if (spec.baseline.empty()) {
        const bool hasNaive = std::find(seedNames.begin(), seedNames.end(), "naive.cpp") != seedNames.end();
        spec.baseline = hasNaive ? "naive.cpp" : seedNames.front();
    } else if (!spec.baselineSeed()) {
        const detail::Pos pos = parsed.baselinePos.value_or(detail::Pos {});
        throw ProblemError(tomlPath.string(), pos.line, pos.column, "baseline",
            "no seed named '" + spec.baseline + "' in seeds/", "one of " + join(seedNames));
    }

    std::string data;
    hashPart(data, "problem.toml", *toml);
    hashPart(data, spec.referenceFile(), spec.referenceSource);
    if (!spec.production.empty()) // the weights come from it
        hashPart(data, "production/" + spec.production, parsed.productionText);
    for (const auto& s : spec.seeds)
        hashPart(data, "seeds/" + s.fileName, s.source);
    spec.contentHash = sha256Hex(data);
    return spec;
}

ShapeTemplate shapeTemplate(const ProblemSpec& spec)
{
    ShapeTemplate t;
    auto tensors = [](const std::vector<TensorSpec>& list, bool input) {
        std::vector<ShapeTemplate::Tensor> out;
        for (const TensorSpec& s : list) {
            ShapeTemplate::Tensor x;
            x.name = s.name;
            x.dtype = s.dtype;
            for (const Dim& d : s.shape)
                x.dims.push_back(d.symbol.empty() ? std::to_string(d.extent) : d.symbol);
            if (input) {
                x.dist = s.init.dist;
                x.args = s.init.args;
                x.sorted = s.init.sorted;
            }
            out.push_back(std::move(x));
        }
        return out;
    };
    t.inputs = tensors(spec.inputs, true);
    t.outputs = tensors(spec.outputs, false);
    t.flops = spec.flops;
    t.bytes = spec.bytes;
    t.compute = spec.computeUnit;
    t.flopsUnknown = spec.flopsUnknown;
    return t;
}

nlohmann::json resolveShape(const ProblemSpec& spec, const ShapeBinding& shape, const std::string& label)
{
    try {
        return shapeTemplate(spec).resolve(shape, spec.params, label);
    } catch (const ShapeResolveError& e) {
        const std::string file = spec.dir.empty() ? "problem.toml" : (spec.dir / "problem.toml").string();
        throw ProblemError(file, 1, 1, e.path(), e.what(), e.expected());
    }
}

nlohmann::json resolveProblem(const ProblemSpec& spec)
{
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, v] : spec.params)
        params[name] = v;
    nlohmann::json tolerance = nlohmann::json::object();
    for (const auto& [dt, t] : spec.tolerance)
        tolerance[dtypeName(dt)] = { { "atol", t.atol }, { "rtol", t.rtol } };
    nlohmann::json check = nlohmann::json::array();
    for (size_t i = 0; i < spec.smallShapes.size(); ++i)
        check.push_back(resolveShape(spec, spec.smallShapes[i], indexed("small", i)));
    nlohmann::json bench = nlohmann::json::array();
    for (size_t i = 0; i < spec.benchShapes.size(); ++i)
        bench.push_back(resolveShape(spec, spec.benchShapes[i], indexed("bench", i)));
    nlohmann::json reference = { { "lang", spec.referenceLang }, { "source", spec.referenceSource } };
    if (spec.referenceLang == "python")
        reference["name"] = spec.referenceFile();
    nlohmann::json problem = {
        { "name", spec.name },
        { "family", spec.family },
        { "reference", reference },
        { "params", params },
        { "tolerance", tolerance },
        { "libraries", spec.allowedLibraries },
        { "check", check },
        { "bench", bench },
    };
    if (!spec.coverage.empty()) {
        CheckCoverage coverage = spec.coverage;
        if (!coverage.ranges.empty())
            coverage.shape = shapeTemplate(spec);
        problem["coverage"] = coverage.toJson();
    }
    return problem;
}

} // namespace hone::core
