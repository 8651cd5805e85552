#include "views/node_menu.h"

#include "views/session_data.h"

#include <QAction>
#include <QInputDialog>
#include <QMenu>
#include <QPointer>

namespace hone::views {

NodeMenu::HintTextProvider NodeMenu::dialogHintText(QWidget* parent)
{
    QPointer<QWidget> guard(parent);
    return [guard](qint64 node) -> std::optional<QString> {
        bool ok = false;
        const QString text = QInputDialog::getMultiLineText(guard.data(), QObject::tr("Add hint"),
            QObject::tr("Hint for node #%1 (the synthesizer sees it in the prompts of this subtree):").arg(node),
            QString(), &ok);
        if (!ok)
            return std::nullopt;
        return text;
    };
}

NodeMenu::Built NodeMenu::build(QMenu& menu, qint64 node, const SessionData* data, const Selection* selection,
    NodeActions* actions, HintTextProvider hintText)
{
    const NodeInfo* info = data ? data->node(node) : nullptr;
    const bool isRoot = info && info->parent < 0;
    const bool pruned = info && info->pruned;
    const bool ok = info && info->status == NodeInfo::Status::Ok;
    if (!hintText)
        hintText = dialogHintText(menu.parentWidget());

    Built b;
    b.prune = menu.addAction(QObject::tr("Prune"));
    b.prune->setToolTip(QObject::tr("Stop the search from expanding this subtree"));
    b.prune->setEnabled(info && !isRoot && !pruned);
    b.boost = menu.addAction(QObject::tr("Boost"));
    b.boost->setToolTip(QObject::tr("Make the search expand this node sooner"));
    b.boost->setEnabled(info && !isRoot && !pruned);
    b.hint = menu.addAction(QObject::tr("Add hint…"));
    b.hint->setEnabled(info && !isRoot);
    menu.addSeparator();
    b.edit = menu.addAction(QObject::tr("Edit as new child…"));
    b.edit->setEnabled(info && !isRoot && !info->sourceHash.isEmpty());

    const qint64 other = selection ? selection->other() : -1;
    const bool hasOther = other >= 0 && other != node && (!data || data->node(other));
    b.compare = menu.addAction(hasOther ? QObject::tr("Compare with #%1").arg(other) : QObject::tr("Compare with…"));
    b.compare->setEnabled(info && !isRoot);
    b.review = menu.addAction(QObject::tr("Review"));
    b.review->setEnabled(ok);

    if (!actions) {
        for (QAction* a : {b.prune, b.boost, b.hint, b.edit, b.compare, b.review})
            a->setEnabled(false);
        return b;
    }
    // Connected with `actions` as context: if the session's actions object goes, so do these.
    QObject::connect(b.prune, &QAction::triggered, actions, [actions, node] { emit actions->pruneRequested(node); });
    QObject::connect(b.boost, &QAction::triggered, actions, [actions, node] { emit actions->boostRequested(node); });
    QObject::connect(b.hint, &QAction::triggered, actions, [actions, node, hintText] {
        const auto text = hintText(node);
        if (text && !text->trimmed().isEmpty())
            emit actions->hintRequested(node, text->trimmed());
    });
    QObject::connect(b.edit, &QAction::triggered, actions, [actions, node] { emit actions->editRequested(node); });
    const qint64 compareWith = hasOther ? other : -1;
    QObject::connect(b.compare, &QAction::triggered, actions,
        [actions, node, compareWith] { emit actions->compareRequested(node, compareWith); });
    QObject::connect(b.review, &QAction::triggered, actions, [actions, node] { emit actions->reviewRequested(node); });
    return b;
}

} // namespace hone::views
