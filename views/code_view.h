#pragma once

#include <Qsci/qsciscintilla.h>

#include <QList>
#include <QString>
#include <QStringList>

class QsciLexerCPP;

namespace hone::views {

/// A source view over QScintilla: C++ highlighting (with CUDA/HIP words as secondary keywords)
/// for C, C++, CUDA and HIP files, line numbers, a monospace font, read-only unless made
/// editable, and markers for the lines a compiler complained about.
class CodeView : public QsciScintilla {
    Q_OBJECT
public:
    explicit CodeView(QWidget* parent = nullptr);

    /// Shows `text`; the highlighting follows the extension of `fileName`. Clears the marks and
    /// the undo history.
    void setSource(const QString& text, const QString& fileName);
    QString fileName() const { return m_fileName; }

    void setEditable(bool editable);
    bool isEditable() const { return !isReadOnly(); }

    /// Puts the cursor on 1-based `line` and `column` (as compilers print them) and scrolls it
    /// into view; out-of-range values are clamped.
    void goToLine(int line, int column = 1);
    /// The cursor's 1-based line and column.
    int cursorLine() const;
    int cursorColumn() const;

    /// Marks a 1-based line with a margin symbol and a tinted background; `severity` "warning"
    /// or "note" gets the warning colour, anything else the error colour.
    void markLine(int line, const QString& severity = QStringLiteral("error"));
    void clearMarks();
    /// The 1-based lines that carry a mark.
    QList<int> markedLines() const;

    /// Replaces the line numbers by one label per line ("" for none): a diff numbers the lines of
    /// the original file, not its aligned rows. An empty list brings the line numbers back.
    void setLineLabels(const QStringList& labels);

    /// Whether the C++ lexer highlights the current text.
    bool highlightsCpp() const;
    /// .c .cc .cpp .cxx .h .hh .hpp .hxx .cu .cuh .hip (any case).
    static bool isCppFile(const QString& fileName);
    /// The secondary keywords: CUDA and HIP qualifiers, builtins and intrinsics.
    static const char* gpuKeywords();

    static constexpr int kErrorMarker = 20;
    static constexpr int kWarningMarker = 21;
    static constexpr int kErrorBackground = 22;
    static constexpr int kWarningBackground = 23;

private:
    void updateNumberMargin();

    QsciLexerCPP* m_lexer = nullptr;
    QString m_fileName;
    bool m_labels = false;
};

} // namespace hone::views
