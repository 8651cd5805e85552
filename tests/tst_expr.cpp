#include "core/expr.h"

#include <QtTest>

#include <clocale>
#include <map>
#include <string>

using hone::core::Expr;
using hone::core::ExprError;
using hone::core::Value;

namespace {

// M = 64, N = 1000, K = 7 (ints), eps = 1e-5, half = 0.5 (decimals).
std::optional<Value> lookup(std::string_view name)
{
    static const std::map<std::string, Value, std::less<>> symbols = {
        { "M", Value::ofInt(64) },
        { "N", Value::ofInt(1000) },
        { "K", Value::ofInt(7) },
        { "eps", Value::ofDouble(1e-5) },
        { "half", Value::ofDouble(0.5) },
    };
    const auto it = symbols.find(name);
    if (it == symbols.end())
        return std::nullopt;
    return it->second;
}

} // namespace

class TestExpr : public QObject {
    Q_OBJECT

private slots:
    void evaluates_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("isInt");
        QTest::addColumn<double>("value");

        // One row per case reads as a table, so the formatter leaves these alone.
        // clang-format off
        QTest::addRow("integer") << "42" << true << 42.0;
        QTest::addRow("decimal") << "2.5" << false << 2.5;
        QTest::addRow("leading dot") << ".5" << false << 0.5;
        QTest::addRow("exponent") << "1e-5" << false << 1e-5;
        QTest::addRow("exponent upper plus") << "2.5E+3" << false << 2500.0;
        QTest::addRow("cost model") << "5 * M * N" << true << 320000.0;
        QTest::addRow("precedence") << "2 + 3 * 4" << true << 14.0;
        QTest::addRow("parentheses") << "(2 + 3) * 4" << true << 20.0;
        QTest::addRow("left assoc sub") << "10 - 3 - 2" << true << 5.0;
        QTest::addRow("left assoc div") << "100 / 10 / 5" << true << 2.0;
        QTest::addRow("int division") << "N / M" << true << 15.0;
        QTest::addRow("int division truncates negative") << "-7 / 2" << true << -3.0;
        QTest::addRow("int modulo") << "N % M" << true << 40.0;
        QTest::addRow("int modulo negative like C") << "-7 % 2" << true << -1.0;
        QTest::addRow("decimal division") << "7 / 2.0" << false << 3.5;
        QTest::addRow("decimal modulo") << "7.5 % 2" << false << 1.5;
        QTest::addRow("decimal symbol") << "N * half" << false << 500.0;
        QTest::addRow("param") << "eps * 1e5" << false << 1.0;
        QTest::addRow("unary minus") << "-M + 1" << true << -63.0;
        QTest::addRow("double unary minus") << "--3" << true << 3.0;
        QTest::addRow("unary minus decimal") << "-half" << false << -0.5;
        QTest::addRow("eq true") << "M == 64" << true << 1.0;
        QTest::addRow("ne false") << "M != 64" << true << 0.0;
        QTest::addRow("lt") << "M < N" << true << 1.0;
        QTest::addRow("le") << "64 <= M" << true << 1.0;
        QTest::addRow("gt") << "M > N" << true << 0.0;
        QTest::addRow("ge mixed") << "half >= 0.5" << true << 1.0;
        QTest::addRow("and") << "M > 1 && N > 1" << true << 1.0;
        QTest::addRow("or") << "M > 100 || N > 100" << true << 1.0;
        QTest::addRow("not") << "!0" << true << 1.0;
        QTest::addRow("not decimal") << "!half" << true << 0.0;
        QTest::addRow("comparison binds tighter than and") << "1 < 2 && 3 < 2" << true << 0.0;
        QTest::addRow("and binds tighter than or") << "1 || 0 && 0" << true << 1.0;
        QTest::addRow("arith binds tighter than comparison") << "M * 2 == 128" << true << 1.0;
        QTest::addRow("and short-circuits") << "0 && M / 0" << true << 0.0;
        QTest::addRow("or short-circuits") << "1 || Q" << true << 1.0;
        QTest::addRow("min") << "min(M, N)" << true << 64.0;
        QTest::addRow("max") << "max(M, N)" << true << 1000.0;
        QTest::addRow("max mixed") << "max(M, 0.5)" << false << 64.0;
        QTest::addRow("ceil_div") << "ceil_div(N, M)" << true << 16.0;
        QTest::addRow("ceil_div exact") << "ceil_div(128, M)" << true << 2.0;
        QTest::addRow("ceil_div decimal") << "ceil_div(5, 2.0)" << false << 3.0;
        QTest::addRow("log2") << "log2(M)" << false << 6.0;
        QTest::addRow("nested calls") << "max(min(M, K), ceil_div(N, 3))" << true << 334.0;
        QTest::addRow("nested 100 deep") << QString(100, '(') + "M" + QString(100, ')') << true << 64.0;
        QTest::addRow("whitespace") << "  ( M\t+\nK )  " << true << 71.0;
        // clang-format on
    }

    void evaluates()
    {
        QFETCH(QString, text);
        QFETCH(bool, isInt);
        QFETCH(double, value);
        const Expr e = Expr::parse(text.toStdString());
        const Value v = e.eval(lookup);
        QCOMPARE(v.isInt, isInt);
        QCOMPARE(v.asDouble(), value);
        if (isInt)
            QCOMPARE(v.i, static_cast<int64_t>(value));
        QCOMPARE(QString::fromStdString(e.text()), text);
    }

    void parseErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("column");

        // clang-format off
        QTest::addRow("empty") << "" << "expected an expression at column 1" << 1;
        QTest::addRow("blank") << "   " << "expected an expression at column 4" << 4;
        QTest::addRow("unclosed paren") << "(M + N" << "expected ')' at column 7" << 7;
        QTest::addRow("missing operand") << "M +" << "expected a number, symbol, function or '(' at column 4" << 4;
        QTest::addRow("two operands") << "M N" << "expected an operator or the end of the expression at column 3" << 3;
        QTest::addRow("stray close paren") << "M)" << "expected an operator or the end of the expression at column 2" << 2;
        QTest::addRow("single ampersand") << "M & N" << "expected '&&' at column 3" << 3;
        QTest::addRow("single pipe") << "M | N" << "expected '||' at column 3" << 3;
        QTest::addRow("assignment") << "M = N" << "expected '==' at column 3" << 3;
        QTest::addRow("bad character") << "M $ N" << "unexpected character '$' at column 3" << 3;
        QTest::addRow("bad exponent") << "1e+" << "expected digits of the exponent at column 4" << 4;
        QTest::addRow("number glued to symbol") << "2M" << "expected an operator after the number at column 2" << 2;
        QTest::addRow("integer too large") << "99999999999999999999" << "integer '99999999999999999999' out of range at column 1" << 1;
        QTest::addRow("unknown function") << "foo(M)" << "unknown function 'foo' at column 1 (functions: min, max, ceil_div, log2)" << 1;
        QTest::addRow("function without call") << "min + 1" << "expected '(' after 'min' at column 5" << 5;
        QTest::addRow("too few arguments") << "min(M)" << "expected ',' (min takes 2 arguments) at column 6" << 6;
        QTest::addRow("too many arguments") << "log2(M, N)" << "expected ')' (log2 takes 1 argument) at column 7" << 7;
        QTest::addRow("unary plus") << "+M" << "expected a number, symbol, function or '(' at column 1" << 1;
        QTest::addRow("nested too deeply") << QString(201, '(') + "1" + QString(201, ')') << "expression nested too deeply at column 201" << 201;
        // clang-format on
    }

    void parseErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, message);
        QFETCH(int, column);
        try {
            Expr::parse(text.toStdString());
            QFAIL("no ExprError");
        } catch (const ExprError& e) {
            QCOMPARE(QString::fromUtf8(e.what()), message);
            QCOMPARE(e.column(), column);
        }
    }

    void evalErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::addColumn<int>("column");

        // clang-format off
        QTest::addRow("unknown symbol") << "M * K2" << "unknown symbol 'K2'" << 5;
        QTest::addRow("int division by zero") << "M / (K - 7)" << "division by zero" << 3;
        QTest::addRow("int modulo by zero") << "M % 0" << "division by zero" << 3;
        QTest::addRow("decimal division by zero") << "half / 0.0" << "division by zero" << 6;
        QTest::addRow("ceil_div by zero") << "ceil_div(M, 0)" << "division by zero" << 1;
        QTest::addRow("log2 of zero") << "log2(0)" << "log2 of a non-positive number" << 1;
        QTest::addRow("overflow") << "9223372036854775807 + 1" << "integer overflow at column 21" << 21;
        QTest::addRow("or evaluates rhs when needed") << "0 || Q" << "unknown symbol 'Q'" << 6;
        // clang-format on
    }

    void evalErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, message);
        QFETCH(int, column);
        const Expr e = Expr::parse(text.toStdString());
        try {
            e.eval(lookup);
            QFAIL("no ExprError");
        } catch (const ExprError& err) {
            QCOMPARE(QString::fromUtf8(err.what()), message);
            QCOMPARE(err.column(), column);
        }
    }

    void symbols_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QStringList>("symbols");

        // clang-format off
        QTest::addRow("none") << "1 + 2" << QStringList{};
        QTest::addRow("first use order") << "N * M + M * K" << QStringList{"N", "M", "K"};
        QTest::addRow("function names are not symbols") << "max(min(a, b_1), log2(a))" << QStringList{"a", "b_1"};
        QTest::addRow("inside unary and parens") << "-(x) + !y" << QStringList{"x", "y"};
        // clang-format on
    }

    void symbols()
    {
        QFETCH(QString, text);
        QFETCH(QStringList, symbols);
        QStringList got;
        for (const auto& s : Expr::parse(text.toStdString()).symbols())
            got << QString::fromStdString(s);
        QCOMPARE(got, symbols);
    }

    void copiesShareTheParse()
    {
        Expr a = Expr::parse("M + 1");
        const Expr b = a;
        a = Expr::parse("K");
        QCOMPARE(b.eval(lookup).i, int64_t(65));
        QCOMPARE(a.eval(lookup).i, int64_t(7));
        Expr moved = std::move(a);
        QCOMPARE(moved.eval(lookup).i, int64_t(7));
    }

    void defaultExprRefusesToEvaluate()
    {
        const Expr empty;
        QVERIFY(empty.symbols().empty());
        QVERIFY_THROWS_EXCEPTION(ExprError, empty.eval(lookup));
    }

    void decimalsIgnoreTheLocale()
    {
        // QCoreApplication adopts the user's locale; "1.5" must still be one and a half.
        const char* old = std::setlocale(LC_NUMERIC, nullptr);
        const std::string saved = old ? old : "C";
        if (!std::setlocale(LC_NUMERIC, "de_DE.UTF-8"))
            QSKIP("no de_DE.UTF-8 locale installed");
        const double v = Expr::parse("1.5").eval(lookup).d;
        std::setlocale(LC_NUMERIC, saved.c_str());
        QCOMPARE(v, 1.5);
    }
};

QTEST_GUILESS_MAIN(TestExpr)
#include "tst_expr.moc"
