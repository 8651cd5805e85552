#include "core/expr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace hone::core {

namespace {

enum class Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Neg,
    Not,
    Min,
    Max,
    CeilDiv,
    Log2,
};

enum class TokKind { End, Number, Ident, LParen, RParen, Comma, Op };

struct Token {
    TokKind kind = TokKind::End;
    std::string_view text;
    int column = 1; // 1-based
    Op op = Op::Add;
    Value number;
};

std::string at(int column)
{
    return " at column " + std::to_string(column);
}

bool isIdentStart(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

bool isIdentChar(char c)
{
    return isIdentStart(c) || isDigit(c);
}

} // namespace

struct Expr::Node {
    enum class Kind { Number, Symbol, Unary, Binary, Call };
    Kind kind = Kind::Number;
    Value value; // Number
    std::string name; // Symbol
    Op op = Op::Add; // Unary, Binary, Call
    int column = 0; // where errors in this node point
    std::vector<std::unique_ptr<Node>> kids;
};

namespace {

using Node = Expr::Node;
using NodePtr = std::unique_ptr<Node>;

class Lexer {
public:
    explicit Lexer(std::string_view text)
        : m_text(text)
    {
    }

    Token next()
    {
        while (m_pos < m_text.size()
            && (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n'
                || m_text[m_pos] == '\r'))
            ++m_pos;
        Token t;
        t.column = static_cast<int>(m_pos) + 1;
        if (m_pos >= m_text.size())
            return t;
        const size_t start = m_pos;
        const char c = m_text[m_pos];
        if (isDigit(c) || (c == '.' && m_pos + 1 < m_text.size() && isDigit(m_text[m_pos + 1])))
            return number(t);
        if (isIdentStart(c)) {
            while (m_pos < m_text.size() && isIdentChar(m_text[m_pos]))
                ++m_pos;
            t.kind = TokKind::Ident;
            t.text = m_text.substr(start, m_pos - start);
            return t;
        }
        const char n = m_pos + 1 < m_text.size() ? m_text[m_pos + 1] : '\0';
        auto one = [&](TokKind kind) {
            ++m_pos;
            t.kind = kind;
            t.text = m_text.substr(start, 1);
            return t;
        };
        auto op = [&](Op o, size_t len) {
            m_pos += len;
            t.kind = TokKind::Op;
            t.op = o;
            t.text = m_text.substr(start, len);
            return t;
        };
        switch (c) {
        case '(':
            return one(TokKind::LParen);
        case ')':
            return one(TokKind::RParen);
        case ',':
            return one(TokKind::Comma);
        case '+':
            return op(Op::Add, 1);
        case '-':
            return op(Op::Sub, 1);
        case '*':
            return op(Op::Mul, 1);
        case '/':
            return op(Op::Div, 1);
        case '%':
            return op(Op::Mod, 1);
        case '<':
            return n == '=' ? op(Op::Le, 2) : op(Op::Lt, 1);
        case '>':
            return n == '=' ? op(Op::Ge, 2) : op(Op::Gt, 1);
        case '!':
            return n == '=' ? op(Op::Ne, 2) : op(Op::Not, 1);
        case '=':
            if (n == '=')
                return op(Op::Eq, 2);
            throw ExprError("expected '=='" + at(t.column), t.column);
        case '&':
            if (n == '&')
                return op(Op::And, 2);
            throw ExprError("expected '&&'" + at(t.column), t.column);
        case '|':
            if (n == '|')
                return op(Op::Or, 2);
            throw ExprError("expected '||'" + at(t.column), t.column);
        default:
            break;
        }
        throw ExprError("unexpected character '" + std::string(1, c) + "'" + at(t.column), t.column);
    }

private:
    Token number(Token t)
    {
        const size_t start = m_pos;
        bool isInt = true;
        while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
            ++m_pos;
        if (m_pos < m_text.size() && m_text[m_pos] == '.') {
            isInt = false;
            ++m_pos;
            while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
                ++m_pos;
        }
        if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
            isInt = false;
            ++m_pos;
            if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-'))
                ++m_pos;
            if (m_pos >= m_text.size() || !isDigit(m_text[m_pos])) {
                const int col = static_cast<int>(m_pos) + 1;
                throw ExprError("expected digits of the exponent" + at(col), col);
            }
            while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
                ++m_pos;
        }
        // "2x" is almost certainly a typo for "2*x"; refusing it beats reading two tokens.
        if (m_pos < m_text.size() && isIdentChar(m_text[m_pos])) {
            const int col = static_cast<int>(m_pos) + 1;
            throw ExprError("expected an operator after the number" + at(col), col);
        }
        t.kind = TokKind::Number;
        t.text = m_text.substr(start, m_pos - start);
        const char* first = t.text.data();
        const char* last = first + t.text.size();
        if (isInt) {
            int64_t v = 0;
            const auto r = std::from_chars(first, last, v);
            if (r.ec != std::errc() || r.ptr != last)
                throw ExprError(
                    "integer '" + std::string(t.text) + "' out of range" + at(t.column), t.column);
            t.number = Value::ofInt(v);
        } else {
            // from_chars, not strtod: QCoreApplication sets the user's locale, and a ','
            // decimal separator must not change what "1.5" means.
            double v = 0.0;
            const auto r = std::from_chars(first, last, v);
            if (r.ec != std::errc() || r.ptr != last || !std::isfinite(v))
                throw ExprError("number '" + std::string(t.text) + "' out of range" + at(t.column), t.column);
            t.number = Value::ofDouble(v);
        }
        return t;
    }

    std::string_view m_text;
    size_t m_pos = 0;
};

class Parser {
public:
    explicit Parser(std::string_view text)
        : m_lexer(text)
    {
        advance();
    }

    NodePtr parseAll()
    {
        if (m_tok.kind == TokKind::End)
            throw ExprError("expected an expression" + at(m_tok.column), m_tok.column);
        NodePtr n = parseBinary(0);
        if (m_tok.kind != TokKind::End)
            throw ExprError(
                "expected an operator or the end of the expression" + at(m_tok.column), m_tok.column);
        return n;
    }

private:
    // C precedence, lowest first: || && (== !=) (< <= > >=) (+ -) (* / %).
    static int precedence(Op op)
    {
        switch (op) {
        case Op::Or:
            return 1;
        case Op::And:
            return 2;
        case Op::Eq:
        case Op::Ne:
            return 3;
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge:
            return 4;
        case Op::Add:
        case Op::Sub:
            return 5;
        case Op::Mul:
        case Op::Div:
        case Op::Mod:
            return 6;
        default:
            return -1; // unary-only operators
        }
    }

    void advance() { m_tok = m_lexer.next(); }

    NodePtr parseBinary(int minPrec)
    {
        NodePtr lhs = parseUnary();
        while (m_tok.kind == TokKind::Op) {
            const int prec = precedence(m_tok.op);
            if (prec < 0 || prec < minPrec)
                break;
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Binary;
            n->op = m_tok.op;
            n->column = m_tok.column;
            advance();
            NodePtr rhs = parseBinary(prec + 1); // left-associative
            n->kids.push_back(std::move(lhs));
            n->kids.push_back(std::move(rhs));
            lhs = std::move(n);
        }
        return lhs;
    }

    NodePtr parseUnary()
    {
        // Every level of nesting (parentheses, unary operators, call arguments) passes through
        // here; a bound keeps a hostile "((((..." from overflowing the stack.
        if (++m_depth > kMaxDepth)
            throw ExprError("expression nested too deeply" + at(m_tok.column), m_tok.column);
        NodePtr n = parseUnaryInner();
        --m_depth;
        return n;
    }

    NodePtr parseUnaryInner()
    {
        if (m_tok.kind == TokKind::Op && (m_tok.op == Op::Sub || m_tok.op == Op::Not)) {
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Unary;
            n->op = m_tok.op == Op::Sub ? Op::Neg : Op::Not;
            n->column = m_tok.column;
            advance();
            n->kids.push_back(parseUnary());
            return n;
        }
        return parsePrimary();
    }

    void expect(TokKind kind, const char* what)
    {
        if (m_tok.kind != kind)
            throw ExprError(std::string("expected ") + what + at(m_tok.column), m_tok.column);
        advance();
    }

    NodePtr parsePrimary()
    {
        const Token t = m_tok;
        switch (t.kind) {
        case TokKind::Number: {
            advance();
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Number;
            n->value = t.number;
            n->column = t.column;
            return n;
        }
        case TokKind::LParen: {
            advance();
            NodePtr inner = parseBinary(0);
            expect(TokKind::RParen, "')'");
            return inner;
        }
        case TokKind::Ident: {
            advance();
            const auto fn = function(t.text);
            if (m_tok.kind == TokKind::LParen)
                return parseCall(t, fn);
            if (fn) // function names are reserved so that `min` never silently means a symbol
                throw ExprError(
                    "expected '(' after '" + std::string(t.text) + "'" + at(m_tok.column), m_tok.column);
            auto n = std::make_unique<Node>();
            n->kind = Node::Kind::Symbol;
            n->name = std::string(t.text);
            n->column = t.column;
            return n;
        }
        default:
            throw ExprError("expected a number, symbol, function or '('" + at(t.column), t.column);
        }
    }

    struct Function {
        Op op;
        size_t arity;
    };

    static std::optional<Function> function(std::string_view name)
    {
        if (name == "min")
            return Function { Op::Min, 2 };
        if (name == "max")
            return Function { Op::Max, 2 };
        if (name == "ceil_div")
            return Function { Op::CeilDiv, 2 };
        if (name == "log2")
            return Function { Op::Log2, 1 };
        return std::nullopt;
    }

    NodePtr parseCall(const Token& name, const std::optional<Function>& fn)
    {
        if (!fn)
            throw ExprError("unknown function '" + std::string(name.text) + "'" + at(name.column)
                    + " (functions: min, max, ceil_div, log2)",
                name.column);
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::Call;
        n->op = fn->op;
        n->column = name.column;
        advance(); // '('
        const std::string arity = fn->arity == 1 ? "1 argument" : std::to_string(fn->arity) + " arguments";
        for (size_t i = 0; i < fn->arity; ++i) {
            if (i > 0) {
                if (m_tok.kind != TokKind::Comma)
                    throw ExprError("expected ',' (" + std::string(name.text) + " takes " + arity + ")"
                            + at(m_tok.column),
                        m_tok.column);
                advance();
            }
            n->kids.push_back(parseBinary(0));
        }
        if (m_tok.kind != TokKind::RParen)
            throw ExprError(
                "expected ')' (" + std::string(name.text) + " takes " + arity + ")" + at(m_tok.column),
                m_tok.column);
        advance();
        return n;
    }

    static constexpr int kMaxDepth = 200;
    Lexer m_lexer;
    Token m_tok;
    int m_depth = 0;
};

[[noreturn]] void overflow(const Node& n)
{
    throw ExprError("integer overflow" + at(n.column), n.column);
}

Value arith(const Node& n, Op op, Value a, Value b)
{
    if (a.isInt && b.isInt) {
        int64_t r = 0;
        switch (op) {
        case Op::Add:
            if (__builtin_add_overflow(a.i, b.i, &r))
                overflow(n);
            return Value::ofInt(r);
        case Op::Sub:
            if (__builtin_sub_overflow(a.i, b.i, &r))
                overflow(n);
            return Value::ofInt(r);
        case Op::Mul:
            if (__builtin_mul_overflow(a.i, b.i, &r))
                overflow(n);
            return Value::ofInt(r);
        case Op::Div:
        case Op::Mod:
        case Op::CeilDiv: {
            if (b.i == 0)
                throw ExprError("division by zero", n.column);
            if (a.i == std::numeric_limits<int64_t>::min() && b.i == -1)
                overflow(n);
            if (op == Op::Mod)
                return Value::ofInt(a.i % b.i);
            int64_t q = a.i / b.i; // C truncation toward zero
            if (op == Op::CeilDiv && a.i % b.i != 0 && ((a.i < 0) == (b.i < 0)))
                ++q;
            return Value::ofInt(q);
        }
        case Op::Min:
            return Value::ofInt(std::min(a.i, b.i));
        case Op::Max:
            return Value::ofInt(std::max(a.i, b.i));
        default:
            break;
        }
    }
    const double x = a.asDouble();
    const double y = b.asDouble();
    switch (op) {
    case Op::Add:
        return Value::ofDouble(x + y);
    case Op::Sub:
        return Value::ofDouble(x - y);
    case Op::Mul:
        return Value::ofDouble(x * y);
    case Op::Div:
    case Op::Mod:
    case Op::CeilDiv:
        // Refused for decimals too: an infinite flop count or init bound is never intended.
        if (y == 0.0)
            throw ExprError("division by zero", n.column);
        if (op == Op::Div)
            return Value::ofDouble(x / y);
        if (op == Op::Mod)
            return Value::ofDouble(std::fmod(x, y));
        return Value::ofDouble(std::ceil(x / y));
    case Op::Min:
        return Value::ofDouble(std::min(x, y));
    case Op::Max:
        return Value::ofDouble(std::max(x, y));
    default:
        break;
    }
    return Value::ofInt(0); // unreachable: callers pass arithmetic ops only
}

Value compare(Op op, Value a, Value b)
{
    bool r = false;
    if (a.isInt && b.isInt) {
        switch (op) {
        case Op::Eq:
            r = a.i == b.i;
            break;
        case Op::Ne:
            r = a.i != b.i;
            break;
        case Op::Lt:
            r = a.i < b.i;
            break;
        case Op::Le:
            r = a.i <= b.i;
            break;
        case Op::Gt:
            r = a.i > b.i;
            break;
        case Op::Ge:
            r = a.i >= b.i;
            break;
        default:
            break;
        }
    } else {
        const double x = a.asDouble();
        const double y = b.asDouble();
        switch (op) {
        case Op::Eq:
            r = x == y;
            break;
        case Op::Ne:
            r = x != y;
            break;
        case Op::Lt:
            r = x < y;
            break;
        case Op::Le:
            r = x <= y;
            break;
        case Op::Gt:
            r = x > y;
            break;
        case Op::Ge:
            r = x >= y;
            break;
        default:
            break;
        }
    }
    return Value::ofInt(r ? 1 : 0);
}

Value evalNode(const Node& n, const SymbolLookup& lookup)
{
    switch (n.kind) {
    case Node::Kind::Number:
        return n.value;
    case Node::Kind::Symbol: {
        std::optional<Value> v = lookup ? lookup(n.name) : std::nullopt;
        if (!v)
            throw ExprError("unknown symbol '" + n.name + "'", n.column);
        return *v;
    }
    case Node::Kind::Unary: {
        const Value a = evalNode(*n.kids[0], lookup);
        if (n.op == Op::Not)
            return Value::ofInt(a.truthy() ? 0 : 1);
        if (a.isInt) {
            if (a.i == std::numeric_limits<int64_t>::min())
                overflow(n);
            return Value::ofInt(-a.i);
        }
        return Value::ofDouble(-a.d);
    }
    case Node::Kind::Binary: {
        // && and || short-circuit like C, so `N > 0 && M / N > 2` is safe.
        if (n.op == Op::And || n.op == Op::Or) {
            const bool lhs = evalNode(*n.kids[0], lookup).truthy();
            if (n.op == Op::And && !lhs)
                return Value::ofInt(0);
            if (n.op == Op::Or && lhs)
                return Value::ofInt(1);
            return Value::ofInt(evalNode(*n.kids[1], lookup).truthy() ? 1 : 0);
        }
        const Value a = evalNode(*n.kids[0], lookup);
        const Value b = evalNode(*n.kids[1], lookup);
        switch (n.op) {
        case Op::Eq:
        case Op::Ne:
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge:
            return compare(n.op, a, b);
        default:
            return arith(n, n.op, a, b);
        }
    }
    case Node::Kind::Call: {
        const Value a = evalNode(*n.kids[0], lookup);
        if (n.op == Op::Log2) {
            if (a.asDouble() <= 0.0)
                throw ExprError("log2 of a non-positive number", n.column);
            return Value::ofDouble(std::log2(a.asDouble()));
        }
        return arith(n, n.op, a, evalNode(*n.kids[1], lookup));
    }
    }
    return Value::ofInt(0); // unreachable
}

void collectSymbols(const Node& n, std::vector<std::string>& out)
{
    if (n.kind == Node::Kind::Symbol) {
        for (const auto& s : out)
            if (s == n.name)
                return;
        out.push_back(n.name);
        return;
    }
    for (const auto& k : n.kids)
        collectSymbols(*k, out);
}

} // namespace

Expr Expr::parse(std::string_view text)
{
    Parser parser(text);
    Expr e;
    e.m_text = std::string(text);
    e.m_root = parser.parseAll();
    return e;
}

Value Expr::eval(const SymbolLookup& lookup) const
{
    if (!m_root)
        throw ExprError("empty expression", 0);
    return evalNode(*m_root, lookup);
}

std::vector<std::string> Expr::symbols() const
{
    std::vector<std::string> out;
    if (m_root)
        collectSymbols(*m_root, out);
    return out;
}

Expr::Expr() = default;
Expr::~Expr() = default;
Expr::Expr(const Expr&) = default;
Expr& Expr::operator=(const Expr&) = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

} // namespace hone::core
