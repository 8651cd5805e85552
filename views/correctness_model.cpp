#include "views/correctness_model.h"

#include <QBrush>
#include <QLocale>
#include <QStringList>

namespace hone::views {

namespace {

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

QString number(const std::optional<double>& v)
{
    return v ? QString::number(*v, 'g', QLocale::FloatingPointShortest) : QStringLiteral("null");
}

} // namespace

// ---------------------------------------------------------------------------------------------
// CorrectnessModel

void CorrectnessModel::setChecks(const std::vector<core::protocol::Check>& checks)
{
    beginResetModel();
    m_rows.clear();
    for (const auto& c : checks) {
        Row r;
        r.shape = qs(c.shape);
        if (c.afterTiming)
            r.shape += tr(" (after timing)");
        r.seed = static_cast<qint64>(c.seed);
        r.ok = c.ok;
        r.maxAbs = c.maxAbsErr.value_or(0.0);
        r.maxRel = c.maxRelErr.value_or(0.0);
        r.mismatches = static_cast<qint64>(c.mismatches);
        QStringList lines;
        if (c.failureKind)
            lines << tr("%1: %2").arg(QLatin1String(core::protocol::failureKindName(*c.failureKind)), qs(c.failureMessage));
        if (!c.firstMismatches.empty()) {
            lines << tr("First mismatches:");
            for (const auto& m : c.firstMismatches) {
                const QString where = QStringLiteral("%1[%2]").arg(qs(m.output)).arg(static_cast<qint64>(m.index));
                if (m.unwritten)
                    lines << tr("  %1: never written (want %2)").arg(where, QString::number(m.want.value_or(0.0), 'g', 7));
                else
                    lines << tr("  %1: got %2, want %3").arg(where, number(m.got), number(m.want));
            }
        }
        r.details = lines.isEmpty() ? tr("No mismatches.") : lines.join(QLatin1Char('\n'));
        m_rows.push_back(std::move(r));
    }
    endResetModel();
}

int CorrectnessModel::failedCount() const
{
    return static_cast<int>(std::count_if(m_rows.begin(), m_rows.end(), [](const Row& r) { return !r.ok; }));
}

int CorrectnessModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int CorrectnessModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CorrectnessModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Row& r = m_rows[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case ShapeColumn:
            return r.shape;
        case SeedColumn:
            return r.seed;
        case OkColumn:
            return r.ok ? tr("ok") : tr("FAILED");
        case MaxAbsColumn:
            return QString::number(r.maxAbs, 'g', 3);
        case MaxRelColumn:
            return QString::number(r.maxRel, 'g', 3);
        case MismatchesColumn:
            return r.mismatches;
        }
        return {};
    case Qt::ToolTipRole:
        return r.details;
    case Qt::BackgroundRole:
        return r.ok ? QVariant() : QVariant(QBrush(QColor(0xfd, 0xe2, 0xe2)));
    case Qt::TextAlignmentRole:
        return index.column() >= SeedColumn && index.column() != OkColumn
            ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
            : QVariant();
    case Qt::UserRole: // the raw value, for sorting and tests
        switch (index.column()) {
        case OkColumn:
            return r.ok;
        case MaxAbsColumn:
            return r.maxAbs;
        case MaxRelColumn:
            return r.maxRel;
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    return {};
}

QVariant CorrectnessModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const kNames[] = { "Shape", "Seed", "OK", "Max abs err", "Max rel err", "Mismatches" };
    return tr(kNames[section]);
}

} // namespace hone::views
