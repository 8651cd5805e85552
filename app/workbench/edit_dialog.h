#pragma once

#include "core/steering.h"

#include <QDialog>

#include <nlohmann/json.hpp>

class QLineEdit;
class QTableWidget;

namespace hone::views {
class CodeView;
}

namespace hone::app {

/// "Edit as new child": the node's source in an editor, its knobs and flags in a table; OK
/// turns it into a manual-child steering command for the node.
class EditDialog : public QDialog {
    Q_OBJECT
public:
    EditDialog(qint64 parentNode, const QString& sourceName, const QString& source, const nlohmann::json& knobs,
        const QString& flags, QWidget* parent = nullptr);

    /// The command the dialog describes: the source only when it was changed, knobs, flags.
    core::SteeringCommand command(const QString& author) const;

    views::CodeView* editor() const { return m_editor; }
    QTableWidget* knobTable() const { return m_knobs; }
    QLineEdit* flagsEdit() const { return m_flags; }

private:
    qint64 m_parent;
    QString m_sourceName;
    QString m_original;
    views::CodeView* m_editor;
    QTableWidget* m_knobs;
    QLineEdit* m_flags;
};

} // namespace hone::app
