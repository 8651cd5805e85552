#pragma once

#include "core/dtype.h"
#include "core/expr.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

/// Input coverage of the checks (problem.toml `[check]`, docs/FORMATS.md): extra input
/// distributions applied on top of each input's init, and shape ranges from which the worker
/// draws random shapes beyond the listed ones. Shared by the problem reader (hone_core) and the
/// worker (hone_proto only), which resolves the shapes it draws with the same `ShapeTemplate`
/// as the engine resolves the listed ones.
namespace hone::core {

/// One entry of a shape set: symbol -> extent.
using ShapeBinding = std::map<std::string, int64_t>;

/// A shape that cannot be resolved: `path` is the problem field ("inputs[0].init.high").
class ShapeResolveError : public std::runtime_error {
public:
    ShapeResolveError(std::string path, const std::string& message, std::string expected)
        : std::runtime_error(message)
        , m_path(std::move(path))
        , m_expected(std::move(expected))
    {
    }
    const std::string& path() const { return m_path; }
    const std::string& expected() const { return m_expected; }

private:
    std::string m_path;
    std::string m_expected;
};

/// The symbolic form of a problem's tensors and cost: what `resolve` turns into the worker
/// protocol's SHAPE object for any binding of the symbols.
struct ShapeTemplate {
    struct Tensor {
        std::string name;
        DType dtype = HONE_F32;
        std::vector<std::string> dims; // a symbol, or the decimal text of a fixed extent
        std::string dist;              // inputs only
        std::map<std::string, Expr> args;
        bool sorted = false;
    };
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    Expr flops;
    Expr bytes;
    std::string compute = "fma";
    bool flopsUnknown = false;

    /// The SHAPE object of docs/FORMATS.md; throws ShapeResolveError.
    nlohmann::json resolve(
        const ShapeBinding& shape, const std::map<std::string, double>& params, const std::string& label) const;

    nlohmann::json toJson() const;
    /// Throws std::runtime_error naming the field under `where`.
    static ShapeTemplate fromJson(const nlohmann::json& j, const std::string& where);
};

/// A symbol's range: extents in [min, max] that are multiples of `multipleOf`.
struct SymbolRange {
    std::string symbol;
    int64_t min = 1;
    int64_t max = 1;
    int64_t multipleOf = 1;
};

/// A symbol computed from the drawn ones (`B1 = "B + 1"`).
struct DerivedSymbol {
    std::string symbol;
    Expr expr;
};

enum class SignTransform { Keep, Negative, Positive };
enum class ConstantTransform { None, Rows, All };

/// A named transform of the float inputs' drawn values: v -> sign(v) * scale + shift, then
/// every row (last dimension) or the whole tensor set to its first value.
struct CheckDistribution {
    std::string name;
    std::vector<std::string> inputs; // empty: every float input
    double scale = 1;
    double shift = 0;
    SignTransform sign = SignTransform::Keep;
    ConstantTransform constant = ConstantTransform::None;

    bool appliesTo(const std::string& input) const;
    /// The `transform` object an input's init carries in a resolved shape.
    nlohmann::json transformJson() const;
};

const char* signName(SignTransform s);
const char* constantName(ConstantTransform c);

struct CheckCoverage {
    int randomShapes = 0; // drawn per evaluation, beyond the listed ones
    std::vector<SymbolRange> ranges;
    std::vector<DerivedSymbol> derived;
    std::vector<Expr> require;
    std::vector<CheckDistribution> distributions;
    ShapeTemplate shape; // set by the engine for the worker; unused without ranges

    bool empty() const { return ranges.empty() && distributions.empty(); }

    /// Draws `randomShapes` bindings, each one none of `listed`, from `seed`: log-uniform
    /// extents within the ranges, derived symbols computed, every `require` holding. Throws
    /// std::runtime_error when 1000 draws find no such shape.
    std::vector<ShapeBinding> drawShapes(uint64_t seed, const std::vector<ShapeBinding>& listed,
        const std::map<std::string, double>& params) const;

    nlohmann::json toJson() const;
    /// Throws std::runtime_error naming the field under `where` ("problem.coverage").
    static CheckCoverage fromJson(const nlohmann::json& j, const std::string& where);
};

/// A shape's binding in the text labels and messages use: "M=13, N=2711".
std::string symbolsText(const ShapeBinding& shape);

} // namespace hone::core
