#pragma once

#include <QString>
#include <QtGlobal>

#include <functional>
#include <optional>

class QAction;
class QMenu;
class QWidget;

namespace hone::views {

class NodeActions;
class SessionData;
class Selection;

/// The context menu of a node, shared by the tree and the table: Prune, Boost, Add hint…,
/// Edit as new child…, Compare with…, Review. Each action emits the matching NodeActions signal.
class NodeMenu {
public:
    /// Asks for a hint's text; nullopt (or empty text) when the engineer cancels.
    using HintTextProvider = std::function<std::optional<QString>(qint64 node)>;

    struct Built {
        QAction* prune = nullptr;
        QAction* boost = nullptr;
        QAction* hint = nullptr;
        QAction* edit = nullptr;
        QAction* compare = nullptr;
        QAction* review = nullptr;
    };

    /// Adds the node's actions to `menu` (they are children of it) and returns them, so a caller
    /// (or a test) can trigger() one without showing the menu. Actions that make no sense for the
    /// node are disabled: all of them on the root (it has no source), Prune/Boost on a pruned node,
    /// Review on a node that did not evaluate successfully. "Compare with…" compares with
    /// `selection->other()` when that is another node, else emits -1 (ask). `hintText` defaults
    /// to dialogHintText(menu's parent widget).
    static Built build(QMenu& menu, qint64 node, const SessionData* data, const Selection* selection,
        NodeActions* actions, HintTextProvider hintText = {});

    /// A provider that asks with a QInputDialog over `parent`.
    static HintTextProvider dialogHintText(QWidget* parent);
};

} // namespace hone::views
