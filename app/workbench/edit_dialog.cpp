#include "app/workbench/edit_dialog.h"

#include "views/code_view.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace hone::app {

EditDialog::EditDialog(qint64 parentNode, const QString& sourceName, const QString& source, const nlohmann::json& knobs,
    const QString& flags, QWidget* parent)
    : QDialog(parent)
    , m_parent(parentNode)
    , m_sourceName(sourceName)
    , m_original(source)
{
    setWindowTitle(tr("Edit node %1 as a new child").arg(parentNode));
    m_editor = new views::CodeView(this);
    m_editor->setSource(source, sourceName);
    m_editor->setEditable(true);
    m_knobs = new QTableWidget(0, 2, this);
    m_knobs->setHorizontalHeaderLabels({tr("knob"), tr("value")});
    m_knobs->horizontalHeader()->setStretchLastSection(true);
    m_knobs->verticalHeader()->hide();
    if (knobs.is_object())
        for (auto it = knobs.begin(); it != knobs.end(); ++it) {
            const int row = m_knobs->rowCount();
            m_knobs->insertRow(row);
            auto* name = new QTableWidgetItem(QString::fromStdString(it.key()));
            name->setFlags(name->flags() & ~Qt::ItemIsEditable);
            m_knobs->setItem(row, 0, name);
            const std::string v = it->is_string() ? it->get<std::string>() : it->dump();
            m_knobs->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(v)));
        }
    m_flags = new QLineEdit(flags, this);
    m_flags->setPlaceholderText(tr("compile flags (checked against the allow-list when evaluated)"));
    auto* side = new QWidget(this);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->addWidget(new QLabel(tr("Knobs (a -D definition each)"), side));
    sideLayout->addWidget(m_knobs, 1);
    auto* form = new QFormLayout;
    form->addRow(tr("Flags"), m_flags);
    sideLayout->addLayout(form);
    auto* split = new QSplitter(this);
    split->addWidget(m_editor);
    split->addWidget(side);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Evaluate as child"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("The edited candidate is evaluated like any other (compile, check on every "
                                    "shape and seed, time against the baseline) and joins the tree under node %1.")
                                     .arg(parentNode),
        this));
    layout->addWidget(split, 1);
    layout->addWidget(buttons);
    resize(1100, 700);
}

core::SteeringCommand EditDialog::command(const QString& author) const
{
    core::SteeringCommand c;
    c.kind = core::SteeringCommand::Kind::ManualChild;
    c.node = m_parent;
    const QString text = m_editor->text();
    if (text != m_original) {
        c.text = text.toStdString();
        c.sourceName = m_sourceName.toStdString();
    }
    for (int r = 0; r < m_knobs->rowCount(); ++r)
        c.knobs[m_knobs->item(r, 0)->text().toStdString()] = m_knobs->item(r, 1)->text().trimmed().toStdString();
    c.flags = m_flags->text().trimmed().toStdString();
    c.author = author.toStdString();
    return c;
}

} // namespace hone::app
