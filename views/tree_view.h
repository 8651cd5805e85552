#pragma once

#include "views/node_menu.h"
#include "views/tree_legend.h"

#include <QColor>
#include <QGraphicsView>
#include <QTimer>

#include <vector>

class QGraphicsScene;

namespace hone::views {

class EdgesItem;
class NodeActions;
class NodeItem;
class SessionData;
class Selection;

/// How a node is drawn; recomputed for every node on each refresh, repainted only when it differs.
struct NodeLook {
    QColor fill;
    QColor outline;
    QColor text;
    double radius = 6;
    QChar op;             ///< I(nherit) C(ompare) M (combine) R(estart), or none (the root)
    QString label;        ///< under the node: the chosen metric (nodeLabelText), "root" for the root
    bool labelLow = false; ///< the label one line lower, so neighbours' labels do not collide
    bool pending = false; ///< drawn as a dashed grey outline
    bool dimmed = false;  ///< pruned, or inside a pruned subtree
    bool best = false;    ///< gold ring
    bool current = false; ///< the Selection's node: blue ring
    bool boosted = false;
    bool operator==(const NodeLook&) const = default;
};

/// The live search tree: one lightweight item per node, laid out tidily (tree_layout), coloured
/// by status and speedup (SpeedupScale: log, viridis), sized by visits, labelled with a chosen
/// metric (the speedup by default; TreeLegend explains colours and letters). Batches from SessionData only mark it dirty; it
/// refreshes at most every 100 ms, reusing its items. Wheel or Ctrl +/- zooms, dragging the
/// background pans, F (or fitAll()) shows everything; a click selects, the context menu steers.
class TreeView : public QGraphicsView {
    Q_OBJECT
public:
    TreeView(SessionData* session, Selection* selection, NodeActions* actions, QWidget* parent = nullptr);
    ~TreeView() override;

    static constexpr int kRefreshMs = 100;
    /// QGraphicsItem::type() of the node items.
    static constexpr int kNodeItemType = 65536 + 0x7e1; // QGraphicsItem::UserType + 0x7e1
    /// Scene units between neighbouring nodes and between depths.
    static constexpr double kColumn = 48;
    static constexpr double kRow = 72;

    /// How "Add hint…" asks for the text (default: a dialog over this view).
    void setHintTextProvider(NodeMenu::HintTextProvider provider) { m_hintText = std::move(provider); }

    /// Number of node items in the scene (one per node once refreshed).
    int nodeItemCount() const { return static_cast<int>(m_items.size()); }
    /// The item of a node, or null before the refresh that creates it.
    QGraphicsItem* itemFor(qint64 id) const;
    /// The scene position of a node's centre.
    QPointF nodePos(qint64 id) const;
    NodeLook lookOf(qint64 id) const;
    /// The tooltip of a node: id, source, knobs, status, bound, op...
    QString toolTipFor(qint64 id) const;
    /// Number of layouts computed so far (structure changes since the last refresh).
    int layoutCount() const { return m_layouts; }
    /// Milliseconds the last layout took (layout + moving the items).
    double lastLayoutMs() const { return m_lastLayoutMs; }
    /// The node under a viewport position, or -1.
    qint64 nodeAt(const QPoint& viewportPos) const;
    /// The node's context menu, added to `menu` (what a right click shows).
    NodeMenu::Built buildMenu(QMenu& menu, qint64 node);
    NodeLabel label() const { return m_label; }
    /// The colour scale of the last refresh.
    const SpeedupScale& speedupScale() const { return m_scale; }

public slots:
    void fitAll();
    void zoomIn();
    void zoomOut();
    /// Applies pending changes now instead of at the next tick.
    void refresh();
    /// What the nodes' labels show.
    void setLabel(hone::views::NodeLabel label);

signals:
    void scaleChanged(const hone::views::SpeedupScale& scale);

protected:
    void wheelEvent(QWheelEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    bool viewportEvent(QEvent* event) override;

private:
    void onReset();
    void onNodesAdded();
    void onNodesChanged();
    void onCurrentChanged(qint64 id);
    void schedule();
    void relayout();
    void restyle();
    void zoomBy(double factor);
    NodeLook computeLook(qint64 id) const;

    SessionData* m_data;
    Selection* m_selection;
    NodeActions* m_actions;
    QGraphicsScene* m_scene;
    EdgesItem* m_edges = nullptr;
    std::vector<NodeItem*> m_items;
    std::vector<char> m_dimmed; // pruned or below a pruned node, per id
    std::vector<char> m_low;    // label one line lower (odd layout column), per id
    NodeLabel m_label = NodeLabel::Speedup;
    SpeedupScale m_scale;
    QTimer m_timer;
    bool m_structureDirty = false;
    bool m_styleDirty = false;
    bool m_userMoved = false; // zoomed or panned: stop fitting the whole tree after each layout
    int m_layouts = 0;
    double m_lastLayoutMs = 0;
    NodeMenu::HintTextProvider m_hintText;
};

} // namespace hone::views
