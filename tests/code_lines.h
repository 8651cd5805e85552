#pragma once

#include <QStringList>

/// `n` lines that look like code (assignments, a blank line and a brace every ten): the text the
/// diff view's tests and bench_workbench diff.
inline QStringList codeLines(int n)
{
    QStringList out;
    for (int i = 0; i < n; ++i)
        out << (i % 10 == 9   ? QStringLiteral("}")
                : i % 10 == 0 ? QString()
                              : QStringLiteral("    x[%1] = y[%1] * %2;").arg(i).arg(i % 7));
    return out;
}
