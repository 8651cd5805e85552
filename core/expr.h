#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hone::core {

/// A number in a cost-model, init or `require` expression: integers stay integers so that
/// `M / 4` divides like C, anything touched by a decimal becomes a double.
struct Value {
    bool isInt = true;
    int64_t i = 0;
    double d = 0.0;

    static Value ofInt(int64_t v) { return Value{true, v, static_cast<double>(v)}; }
    static Value ofDouble(double v) { return Value{false, static_cast<int64_t>(v), v}; }
    double asDouble() const { return isInt ? static_cast<double>(i) : d; }
    bool truthy() const { return isInt ? i != 0 : d != 0.0; }
};

/// Raised for a syntax error or an evaluation error (unknown symbol, division by zero).
/// `column` is 1-based within the expression text, 0 when not tied to a position.
class ExprError : public std::runtime_error {
public:
    ExprError(const std::string& message, int column)
        : std::runtime_error(message)
        , m_column(column)
    {
    }
    int column() const { return m_column; }

private:
    int m_column;
};

/// Looks a symbol up; nullopt means "unknown symbol".
using SymbolLookup = std::function<std::optional<Value>(std::string_view)>;

/// A parsed expression: integers and decimals, symbols, + - * / %, parentheses,
/// == != < <= > >=, && || !, unary -, and min(a,b), max(a,b), ceil_div(a,b), log2(a).
class Expr {
public:
    struct Node;

    /// Parses `text`; throws ExprError naming the column and what was expected.
    static Expr parse(std::string_view text);

    /// Evaluates with the given symbols; throws ExprError for an unknown symbol or x/0.
    Value eval(const SymbolLookup& lookup) const;

    /// The distinct symbol names the expression refers to, in order of first use.
    std::vector<std::string> symbols() const;

    const std::string& text() const { return m_text; }

    Expr();
    ~Expr();
    Expr(const Expr&);
    Expr& operator=(const Expr&);
    Expr(Expr&&) noexcept;
    Expr& operator=(Expr&&) noexcept;

private:
    std::string m_text;
    std::shared_ptr<const Node> m_root; // immutable after parse, so sharing is safe
};

} // namespace hone::core
