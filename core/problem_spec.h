#pragma once

#include "core/check_coverage.h"
#include "core/dtype.h"
#include "core/expr.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::core {


/// A problem-file error: `file:line:col: field 'path': message; expected what`.
class ProblemError : public std::runtime_error {
public:
    ProblemError(std::string file, int line, int column, std::string field, std::string message,
        std::string expected);
    const std::string& file() const { return m_file; }
    int line() const { return m_line; }
    int column() const { return m_column; }
    const std::string& field() const { return m_field; }

private:
    std::string m_file;
    int m_line;
    int m_column;
    std::string m_field;
};

/// One dimension of a symbolic shape: a symbol ("M") or a fixed extent.
struct Dim {
    std::string symbol; // empty when fixed
    int64_t extent = 0;
};

struct InitSpec {
    std::string dist = "normal";          // normal | uniform | randint | offsets
    std::map<std::string, Expr> args;     // mean, std, low, high, total (expressions)
    bool sorted = false;                  // rank-1 floats only: sorted ascending
};

struct TensorSpec {
    std::string name;
    DType dtype = HONE_F32;
    std::vector<Dim> shape;
    InitSpec init;                        // inputs only
};

struct Tolerance {
    double atol = 0.0;
    double rtol = 0.0;
};

struct Seed {
    std::string fileName;                 // "naive.cpp"
    std::string lang;                     // cpp | cuda | hip (from the extension)
    std::string source;
};

struct ProblemSpec {
    std::filesystem::path dir;
    std::string name;
    std::string family;
    std::string description;
    std::string baseline;                 // seed file name
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
    std::map<std::string, double> params;
    std::vector<ShapeBinding> smallShapes;
    std::vector<ShapeBinding> benchShapes;
    /// One per bench shape: its share of calls (`weight`, default 1, or the trace's counts).
    std::vector<double> benchWeights;
    /// The trace file `[shapes] production` names (relative to the folder); empty without one.
    std::string production;
    Expr flops;
    Expr bytes;
    std::string computeUnit = "fma";      // which compute ceiling flops run against: fma | tensor
    std::map<DType, Tolerance> tolerance;
    std::vector<std::string> allowedLibraries;
    std::string referenceSource;          // reference.cpp or reference.py
    std::string referenceLang = "cpp";    // cpp (reference.cpp) | python (reference.py, PyTorch)
    std::vector<Seed> seeds;              // sorted by file name; may be empty with reference.py
    bool flopsUnknown = false;            // [cost] flops = "unknown": the roofline places bytes only
    /// `[check]`: extra input distributions and shape ranges for the checks (docs/FORMATS.md).
    CheckCoverage coverage;

    /// Content hash of problem.toml, reference.cpp and the seeds (hex SHA-256).
    std::string contentHash;

    /// The `baseline` seed, or nullptr. `baseline = "reference.py"` names the PyTorch reference
    /// itself (lang "python"): speedups are then over PyTorch eager.
    const Seed* baselineSeed() const;
    /// The file name of the reference: reference.cpp or reference.py.
    std::string referenceFile() const { return referenceLang == "python" ? "reference.py" : "reference.cpp"; }

    Seed referenceSeed;                   // the PyTorch reference as a baseline (lang "python")
};

/// Loads and validates a problem folder. Throws ProblemError for any problem in
/// problem.toml (with line/column/field), a missing reference (reference.cpp, or reference.py
/// for a PyTorch reference), no seeds with a C++ reference, a seed with an unknown extension,
/// or a baseline that names no seed.
ProblemSpec loadProblem(const std::filesystem::path& dir);

/// Same, from problem.toml text (for tests); `fileName` is used in messages. Reference and
/// seeds are not read.
ProblemSpec parseProblemToml(std::string_view text, const std::string& fileName);

/// The worker-protocol form of one shape (see docs/FORMATS.md): symbols, evaluated flops and
/// bytes, concrete tensor shapes and init numbers. `label` is e.g. "small[1]".
nlohmann::json resolveShape(const ProblemSpec& spec, const ShapeBinding& shape, const std::string& label);

/// The symbolic tensors and cost of the problem, which `resolveShape` and the worker's
/// random check shapes resolve.
ShapeTemplate shapeTemplate(const ProblemSpec& spec);

/// The `problem` object of an eval request: name, reference, params, tolerance, check and
/// bench shapes, and `coverage` when the problem has a `[check]` section.
nlohmann::json resolveProblem(const ProblemSpec& spec);

} // namespace hone::core
