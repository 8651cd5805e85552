#include "views/code_view.h"

#include <Qsci/qscilexercpp.h>

#include <QFileInfo>
#include <QFontDatabase>

#include <algorithm>

namespace hone::views {

namespace {

/// The C++ lexer with GPU words as keyword set 2 (style KeywordSet2).
class GpuCppLexer : public QsciLexerCPP {
public:
    using QsciLexerCPP::QsciLexerCPP;
    const char* keywords(int set) const override
    {
        if (set == 2)
            return CodeView::gpuKeywords();
        return QsciLexerCPP::keywords(set);
    }
};

QFont monospace()
{
    QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    f.setStyleHint(QFont::Monospace);
    return f;
}

constexpr int kNumberMargin = 0;
constexpr int kSymbolMargin = 1;
constexpr int kFoldMargin = 2;

} // namespace

const char* CodeView::gpuKeywords()
{
    return "__global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ "
           "__launch_bounds__ __forceinline__ __noinline__ __grid_constant__ "
           "__syncthreads __syncwarp __syncthreads_count __syncthreads_and __syncthreads_or "
           "__threadfence __threadfence_block __shfl_sync __shfl_up_sync __shfl_down_sync "
           "__shfl_xor_sync __ballot_sync __any_sync __all_sync __activemask __ldg __ldcs __stcs "
           "__fdividef __expf __logf __sinf __cosf __fmaf_rn __half __half2 __nv_bfloat16 "
           "__nv_bfloat162 half2 "
           "atomicAdd atomicSub atomicMax atomicMin atomicExch atomicCAS "
           "blockIdx threadIdx blockDim gridDim warpSize dim3 cudaStream_t cudaError_t "
           "hipLaunchKernelGGL hipStream_t __builtin_amdgcn_readfirstlane "
           "float2 float4 int2 int4 uint4 double2";
}

CodeView::CodeView(QWidget* parent)
    : QsciScintilla(parent)
{
    setUtf8(true);
    const QFont font = monospace();
    setFont(font);
    setMarginsFont(font);
    setMarginType(kNumberMargin, NumberMargin);
    setMarginLineNumbers(kNumberMargin, true);
    setMarginType(kSymbolMargin, SymbolMargin);
    setMarginWidth(kSymbolMargin, 14);
    setMarginWidth(kFoldMargin, 0);
    setFolding(NoFoldStyle);
    setWrapMode(WrapNone);
    setCaretLineVisible(true);
    setCaretLineBackgroundColor(QColor(0xf2, 0xf4, 0xf8));
    setTabWidth(4);
    setReadOnly(true);

    markerDefine(RightTriangle, kErrorMarker);
    setMarkerBackgroundColor(QColor(0xc6, 0x28, 0x28), kErrorMarker);
    setMarkerForegroundColor(QColor(0xc6, 0x28, 0x28), kErrorMarker);
    markerDefine(RightTriangle, kWarningMarker);
    setMarkerBackgroundColor(QColor(0xef, 0x8f, 0x00), kWarningMarker);
    setMarkerForegroundColor(QColor(0xef, 0x8f, 0x00), kWarningMarker);
    markerDefine(Background, kErrorBackground);
    setMarkerBackgroundColor(QColor(0xff, 0xdd, 0xdd), kErrorBackground);
    markerDefine(Background, kWarningBackground);
    setMarkerBackgroundColor(QColor(0xff, 0xf0, 0xc8), kWarningBackground);
    updateNumberMargin();
}

bool CodeView::isCppFile(const QString& fileName)
{
    static const QStringList kSuffixes
        = { "c", "cc", "cpp", "cxx", "c++", "h", "hh", "hpp", "hxx", "cu", "cuh", "hip" };
    return kSuffixes.contains(QFileInfo(fileName).suffix().toLower());
}

bool CodeView::highlightsCpp() const
{
    return m_lexer && lexer() == m_lexer;
}

void CodeView::setSource(const QString& text, const QString& fileName)
{
    m_fileName = fileName;
    if (isCppFile(fileName)) {
        if (!m_lexer) {
            m_lexer = new GpuCppLexer(this);
            const QFont font = monospace();
            m_lexer->setDefaultFont(font);
            m_lexer->setFont(font);
            m_lexer->setColor(QColor(0x8e, 0x24, 0xaa), QsciLexerCPP::KeywordSet2);
            m_lexer->setFoldComments(false);
        }
        if (lexer() != m_lexer)
            setLexer(m_lexer);
    } else if (lexer()) {
        setLexer(nullptr);
        setFont(monospace());
    }
    const bool readOnly = isReadOnly();
    setReadOnly(false); // Scintilla ignores SETTEXT on a read-only document
    setText(text);
    setReadOnly(readOnly);
    SendScintilla(SCI_EMPTYUNDOBUFFER);
    clearMarks();
    if (m_labels)
        setLineLabels({});
    updateNumberMargin();
}

void CodeView::setEditable(bool editable)
{
    setReadOnly(!editable);
}

void CodeView::goToLine(int line, int column)
{
    const int lastLine = std::max(0, lines() - 1);
    const int l = std::clamp(line - 1, 0, lastLine);
    const int c = std::clamp(column - 1, 0, std::max(0, lineLength(l)));
    setCursorPosition(l, c);
    ensureLineVisible(l);
    // Show a little context above the line rather than leaving it at the edge.
    const int onScreen = static_cast<int>(SendScintilla(SCI_LINESONSCREEN));
    if (l < firstVisibleLine() + 2 || l > firstVisibleLine() + onScreen - 3)
        setFirstVisibleLine(std::max(0, l - onScreen / 3));
}

int CodeView::cursorLine() const
{
    int line = 0, index = 0;
    getCursorPosition(&line, &index);
    return line + 1;
}

int CodeView::cursorColumn() const
{
    int line = 0, index = 0;
    getCursorPosition(&line, &index);
    return index + 1;
}

void CodeView::markLine(int line, const QString& severity)
{
    if (line < 1 || line > lines())
        return;
    const bool warning = severity == QLatin1String("warning") || severity == QLatin1String("note");
    markerAdd(line - 1, warning ? kWarningMarker : kErrorMarker);
    markerAdd(line - 1, warning ? kWarningBackground : kErrorBackground);
}

void CodeView::clearMarks()
{
    for (int m : { kErrorMarker, kWarningMarker, kErrorBackground, kWarningBackground })
        markerDeleteAll(m);
}

QList<int> CodeView::markedLines() const
{
    QList<int> out;
    const unsigned mask = (1u << kErrorMarker) | (1u << kWarningMarker);
    for (int l = markerFindNext(0, mask); l >= 0; l = markerFindNext(l + 1, mask))
        out << l + 1;
    return out;
}

void CodeView::setLineLabels(const QStringList& labels)
{
    SendScintilla(SCI_MARGINTEXTCLEARALL);
    m_labels = !labels.isEmpty();
    if (!m_labels) {
        setMarginType(kNumberMargin, NumberMargin);
        setMarginLineNumbers(kNumberMargin, true);
        updateNumberMargin();
        return;
    }
    setMarginType(kNumberMargin, TextMarginRightJustified);
    int widest = 1;
    const int n = std::min(static_cast<int>(labels.size()), lines());
    for (int i = 0; i < n; ++i) {
        const QString& label = labels[i];
        if (label.isEmpty())
            continue;
        widest = std::max(widest, static_cast<int>(label.size()));
        const QByteArray bytes = label.toUtf8();
        SendScintilla(SCI_MARGINSETTEXT, static_cast<unsigned long>(i), bytes.constData());
        SendScintilla(SCI_MARGINSETSTYLE, static_cast<unsigned long>(i), static_cast<long>(STYLE_LINENUMBER));
    }
    setMarginWidth(kNumberMargin, QString(widest + 1, QLatin1Char('9')));
}

void CodeView::updateNumberMargin()
{
    if (m_labels)
        return;
    const int digits = static_cast<int>(QString::number(std::max(1, lines())).size());
    setMarginWidth(kNumberMargin, QString(std::max(2, digits) + 1, QLatin1Char('9')));
}

} // namespace hone::views
