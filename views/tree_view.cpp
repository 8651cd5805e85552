#include "views/tree_view.h"

#include "views/node_table.h"
#include "views/session_data.h"
#include "views/tree_layout.h"

#include <QContextMenuEvent>
#include <QElapsedTimer>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>
#include <QScrollBar>
#include <QStyleOptionGraphicsItem>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace hone::views {

namespace {

constexpr double kMinRadius = 5;
constexpr double kMaxRadius = 15;
constexpr double kRootRadius = 9;
constexpr double kLabelLod = 0.4;      // labels show from this zoom up
constexpr double kLabelWidthPx = 80;
constexpr double kLabelLinePx = 12;
const QColor kGold(0xff, 0xb3, 0x00);
const QColor kCurrent(0x1e, 0x88, 0xe5);

QColor mix(const QColor& a, const QColor& b, double t)
{
    t = std::clamp(t, 0.0, 1.0);
    return QColor::fromRgbF(static_cast<float>(a.redF() + (b.redF() - a.redF()) * t),
        static_cast<float>(a.greenF() + (b.greenF() - a.greenF()) * t),
        static_cast<float>(a.blueF() + (b.blueF() - a.blueF()) * t));
}

QChar opLetter(const QString& op)
{
    if (op == QLatin1String("inherit"))
        return QLatin1Char('I');
    if (op == QLatin1String("compare"))
        return QLatin1Char('C');
    if (op == QLatin1String("combine"))
        return QLatin1Char('M');
    if (op == QLatin1String("restart"))
        return QLatin1Char('R');
    return {};
}

} // namespace

/// One node: a circle with its memory operator inside when zoomed in far enough, its id below
/// when zoomed in further. Paints from a precomputed NodeLook; no child items, no text items.
class NodeItem : public QGraphicsItem {
public:
    enum { Type = TreeView::kNodeItemType };
    static_assert(TreeView::kNodeItemType == UserType + 0x7e1);
    explicit NodeItem(qint64 id)
        : m_id(id)
    {
        setAcceptedMouseButtons(Qt::NoButton); // the view handles clicks (select) and drags (pan)
        setZValue(1);
    }
    int type() const override { return Type; }
    qint64 id() const { return m_id; }
    const NodeLook& look() const { return m_look; }
    void setLook(const NodeLook& look)
    {
        if (look == m_look)
            return;
        m_look = look;
        update();
    }

    QRectF boundingRect() const override
    {
        // Constant, so that a look change never moves geometry: the largest circle with its rings
        // and two label lines below it, drawn at a fixed pixel size down to kLabelLod.
        constexpr double r = kMaxRadius + 6;
        constexpr double w = kLabelWidthPx / kLabelLod;
        return QRectF(-w / 2, -r, w, r + kMaxRadius + 2 + 2 * kLabelLinePx / kLabelLod);
    }
    QPainterPath shape() const override
    {
        QPainterPath p;
        const double r = m_look.radius + 3;
        p.addEllipse(QPointF(0, 0), r, r);
        return p;
    }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override
    {
        const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
        const double r = m_look.radius;
        if (lod < 0.2) {
            // A few pixels on screen: a square is all that shows, and it is cheap.
            const QColor c = m_look.current ? kCurrent : m_look.best ? kGold : m_look.pending ? m_look.outline : m_look.fill;
            painter->fillRect(QRectF(-r, -r, 2 * r, 2 * r), c);
            return;
        }
        painter->setRenderHint(QPainter::Antialiasing, true);
        if (m_look.current) {
            painter->setPen(QPen(kCurrent, 3));
            painter->setBrush(Qt::NoBrush);
            painter->drawEllipse(QPointF(0, 0), r + 4.5, r + 4.5);
        }
        QPen pen(m_look.best ? kGold : m_look.outline, m_look.best ? 3.5 : 1.5);
        if (m_look.pending)
            pen.setStyle(Qt::DashLine);
        painter->setPen(pen);
        painter->setBrush(m_look.fill);
        painter->drawEllipse(QPointF(0, 0), r, r);
        if (m_look.boosted) {
            // A small triangle at the top right: "expand me sooner".
            const QPointF c(r * 0.8, -r * 0.8);
            const QPointF tri[3] = {c + QPointF(0, -4), c + QPointF(-3.5, 2.5), c + QPointF(3.5, 2.5)};
            painter->setPen(Qt::NoPen);
            painter->setBrush(QColor(0x6a, 0x1b, 0x9a));
            painter->drawPolygon(tri, 3);
        }
        if (lod >= 0.6 && !m_look.op.isNull()) {
            QFont f = painter->font();
            f.setPixelSize(std::max(6, static_cast<int>(r * 1.15)));
            f.setBold(true);
            painter->setFont(f);
            painter->setPen(m_look.text);
            painter->drawText(QRectF(-r, -r, 2 * r, 2 * r), Qt::AlignCenter, QString(m_look.op));
        }
        if (lod >= kLabelLod && !m_look.label.isEmpty()) {
            // Fixed pixel size at any zoom from kLabelLod up: the label is the point of the view.
            QString text = m_look.label;
            if (lod >= 1.2 && !text.startsWith(QLatin1Char('#')) && text != QLatin1String("root"))
                text = QStringLiteral("#%1 %2").arg(m_id).arg(text);
            painter->save();
            painter->translate(0, r + 1);
            painter->scale(1 / lod, 1 / lod);
            QFont f = painter->font();
            f.setPixelSize(10);
            f.setBold(m_look.best || m_look.label == QLatin1String("root"));
            painter->setFont(f);
            painter->setPen(m_look.dimmed ? QColor(0xbd, 0xbd, 0xbd) : QColor(0x21, 0x21, 0x21));
            const double y = m_look.labelLow && lod < 1.2 ? kLabelLinePx : 0;
            painter->drawText(QRectF(-kLabelWidthPx / 2, y, kLabelWidthPx, kLabelLinePx),
                Qt::AlignHCenter | Qt::AlignTop, text);
            painter->restore();
        }
    }

private:
    qint64 m_id;
    NodeLook m_look;
};

/// Every edge in one item: 5,000 line items would cost more to manage than to draw.
class EdgesItem : public QGraphicsItem {
public:
    EdgesItem() { setAcceptedMouseButtons(Qt::NoButton); }
    void setLines(std::vector<QLineF> live, std::vector<QLineF> dimmed, const QRectF& bounds)
    {
        prepareGeometryChange();
        m_live = std::move(live);
        m_dimmed = std::move(dimmed);
        m_bounds = bounds;
        update();
    }
    size_t lineCount() const { return m_live.size() + m_dimmed.size(); }
    QRectF boundingRect() const override { return m_bounds; }
    QPainterPath shape() const override { return {}; } // never under the mouse
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) override
    {
        const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
        painter->setRenderHint(QPainter::Antialiasing, lod >= 0.5);
        QPen pen(QColor(0xe0, 0xe0, 0xe0), 0); // cosmetic: one pixel at any zoom
        painter->setPen(pen);
        if (!m_dimmed.empty())
            painter->drawLines(m_dimmed.data(), static_cast<int>(m_dimmed.size()));
        pen.setColor(QColor(0x90, 0xa4, 0xae));
        painter->setPen(pen);
        if (!m_live.empty())
            painter->drawLines(m_live.data(), static_cast<int>(m_live.size()));
    }

private:
    std::vector<QLineF> m_live;
    std::vector<QLineF> m_dimmed;
    QRectF m_bounds;
};

TreeView::TreeView(SessionData* session, Selection* selection, NodeActions* actions, QWidget* parent)
    : QGraphicsView(parent)
    , m_data(session)
    , m_selection(selection)
    , m_actions(actions)
    , m_scene(new QGraphicsScene(this))
{
    // Items move on every layout; a BSP index would be rebuilt each time for little gain at this
    // size (hit tests are per click).
    m_scene->setItemIndexMethod(QGraphicsScene::NoIndex);
    setScene(m_scene);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setRenderHint(QPainter::Antialiasing, true);
    setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setFocusPolicy(Qt::StrongFocus);
    setBackgroundBrush(palette().base());
    setToolTip(QString()); // tooltips come per node, from viewportEvent

    m_timer.setSingleShot(true);
    m_timer.setInterval(kRefreshMs);
    connect(&m_timer, &QTimer::timeout, this, &TreeView::refresh);
    if (m_data) {
        connect(m_data, &SessionData::sessionReset, this, &TreeView::onReset);
        connect(m_data, &SessionData::nodesAdded, this, &TreeView::onNodesAdded);
        connect(m_data, &SessionData::nodesChanged, this, &TreeView::onNodesChanged);
    }
    if (m_selection)
        connect(m_selection, &Selection::currentChanged, this, &TreeView::onCurrentChanged);
    onReset();
}

TreeView::~TreeView() = default;

QGraphicsItem* TreeView::itemFor(qint64 id) const
{
    return id >= 0 && id < static_cast<qint64>(m_items.size()) ? m_items[static_cast<size_t>(id)] : nullptr;
}

QPointF TreeView::nodePos(qint64 id) const
{
    const auto* item = itemFor(id);
    return item ? item->pos() : QPointF();
}

NodeLook TreeView::lookOf(qint64 id) const
{
    const auto* item = id >= 0 && id < static_cast<qint64>(m_items.size()) ? m_items[static_cast<size_t>(id)] : nullptr;
    return item ? item->look() : NodeLook {};
}

void TreeView::onReset()
{
    m_timer.stop();
    m_scene->clear(); // deletes every item at once; removing 5,000 one by one is quadratic
    m_items.clear();
    m_dimmed.clear();
    m_edges = new EdgesItem;
    m_scene->addItem(m_edges);
    m_structureDirty = true;
    m_styleDirty = true;
    m_userMoved = false;
    resetTransform();
    schedule();
}

void TreeView::onNodesAdded()
{
    m_structureDirty = true;
    schedule();
}

void TreeView::onNodesChanged()
{
    m_styleDirty = true;
    schedule();
}

void TreeView::schedule()
{
    // Not restarted by later events: a steady stream still refreshes every kRefreshMs.
    if (!m_timer.isActive())
        m_timer.start();
}

void TreeView::refresh()
{
    m_timer.stop();
    if (!m_data || (!m_structureDirty && !m_styleDirty))
        return;
    const auto& nodes = m_data->nodes();
    if (nodes.size() < m_items.size()) {
        onReset(); // nodes never disappear without a reset; if they did, start over
        m_timer.stop();
    }
    const bool structure = m_structureDirty;
    m_structureDirty = m_styleDirty = false;
    for (size_t id = m_items.size(); id < nodes.size(); ++id) {
        auto* item = new NodeItem(static_cast<qint64>(id));
        m_scene->addItem(item);
        m_items.push_back(item);
    }
    // Parents have smaller ids than their children (SessionData appends a node after its parent),
    // so one pass in id order settles "inside a pruned subtree".
    m_dimmed.assign(nodes.size(), 0);
    for (const auto& n : nodes) {
        const auto id = static_cast<size_t>(n.id);
        m_dimmed[id] = n.pruned || (n.parent >= 0 && n.parent < n.id && m_dimmed[static_cast<size_t>(n.parent)]);
    }
    if (structure)
        relayout();
    // Edges follow positions and dimming; rebuilding them is a few microseconds per thousand.
    std::vector<QLineF> live, dimmed;
    live.reserve(nodes.size());
    for (const auto& n : nodes) {
        if (n.parent < 0 || n.parent >= static_cast<qint64>(nodes.size()))
            continue;
        const auto* child = m_items[static_cast<size_t>(n.id)];
        const auto* parentItem = m_items[static_cast<size_t>(n.parent)];
        if (!child->isVisible() || !parentItem->isVisible())
            continue;
        const QLineF line(parentItem->pos(), child->pos());
        (m_dimmed[static_cast<size_t>(n.id)] ? dimmed : live).push_back(line);
    }
    m_edges->setLines(std::move(live), std::move(dimmed), m_scene->sceneRect());
    restyle();
    if (structure && !m_userMoved)
        fitAll();
}

void TreeView::relayout()
{
    QElapsedTimer timer;
    timer.start();
    const auto points = layoutSession(*m_data);
    m_low.assign(points.size(), 0);
    double minX = 0, maxX = 0, maxY = 0;
    for (size_t id = 0; id < points.size(); ++id) {
        auto* item = m_items[id];
        const auto& p = points[id];
        if (p.depth < 0) {
            item->setVisible(false); // unreachable: cannot happen with a consistent session
            continue;
        }
        const QPointF pos(p.x * kColumn, p.y * kRow);
        m_low[id] = static_cast<char>(std::llround(p.x) & 1);
        if (item->pos() != pos)
            item->setPos(pos);
        item->setVisible(true);
        maxX = std::max(maxX, pos.x());
        maxY = std::max(maxY, pos.y());
    }
    const double margin = kMaxRadius + 24;
    m_scene->setSceneRect(QRectF(minX - margin, -margin, maxX - minX + 2 * margin, maxY + 2 * margin));
    ++m_layouts;
    m_lastLayoutMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

NodeLook TreeView::computeLook(qint64 id) const
{
    NodeLook look;
    const NodeInfo* n = m_data->node(id);
    if (!n)
        return look;
    look.radius = std::clamp(kMinRadius + 1.6 * std::sqrt(std::max(0, n->visits)), kMinRadius, kMaxRadius);
    look.op = n->parent < 0 ? QChar() : opLetter(n->op); // the root is "root", whatever its operator
    look.label = nodeLabelText(*n, m_label);
    look.labelLow = static_cast<size_t>(id) < m_low.size() && m_low[static_cast<size_t>(id)];
    look.dimmed = static_cast<size_t>(id) < m_dimmed.size() && m_dimmed[static_cast<size_t>(id)];
    look.best = id == m_data->bestNode();
    look.current = m_selection && id == m_selection->current();
    look.boosted = n->boosted;
    look.text = Qt::black;
    if (n->parent < 0) {
        look.radius = kRootRadius;
        look.fill = QColor(0x45, 0x5a, 0x64);
        look.outline = QColor(0x26, 0x32, 0x38);
        look.text = Qt::white;
    } else if (n->status == NodeInfo::Status::Pending) {
        look.pending = true;
        look.fill = QColor(0xfa, 0xfa, 0xfa);
        look.outline = QColor(0x9e, 0x9e, 0x9e);
        look.text = QColor(0x75, 0x75, 0x75);
    } else if (n->status == NodeInfo::Status::Failed) {
        look.fill = QColor(0xe5, 0x39, 0x35);
        look.outline = QColor(0xb7, 0x1c, 0x1c);
        look.text = Qt::white;
    } else {
        // Log scale over the session's range, perceptually uniform (SpeedupScale, TreeLegend).
        const double t = m_scale.position(n->speedup);
        look.fill = viridis(t);
        look.outline = look.fill.darker(150);
        look.text = t < 0.6 ? Qt::white : Qt::black;
    }
    if (look.dimmed) {
        look.fill = mix(look.fill, QColor(0xee, 0xee, 0xee), 0.8);
        look.outline = QColor(0xbd, 0xbd, 0xbd);
        look.text = QColor(0x9e, 0x9e, 0x9e);
    }
    return look;
}

void TreeView::restyle()
{
    const SpeedupScale scale = SpeedupScale::of(*m_data);
    const bool changed = !(scale == m_scale);
    m_scale = scale;
    for (auto* item : m_items)
        item->setLook(computeLook(item->id()));
    if (changed)
        emit scaleChanged(m_scale);
}

void TreeView::setLabel(NodeLabel label)
{
    if (label == m_label)
        return;
    m_label = label;
    if (m_data)
        for (auto* item : m_items)
            item->setLook(computeLook(item->id()));
}

void TreeView::onCurrentChanged(qint64 id)
{
    // Only the old and the new current node change; restyling those two is enough.
    if (!m_data)
        return;
    for (auto* item : m_items)
        if (item->look().current && item->id() != id)
            item->setLook(computeLook(item->id()));
    if (auto* item = static_cast<NodeItem*>(itemFor(id))) {
        item->setLook(computeLook(id));
        if (item->isVisible())
            ensureVisible(item, 40, 40);
    }
}

qint64 TreeView::nodeAt(const QPoint& viewportPos) const
{
    for (auto* item : items(viewportPos))
        if (item->type() == NodeItem::Type)
            return static_cast<NodeItem*>(item)->id();
    return -1;
}

NodeMenu::Built TreeView::buildMenu(QMenu& menu, qint64 node)
{
    return NodeMenu::build(menu, node, m_data, m_selection, m_actions,
        m_hintText ? m_hintText : NodeMenu::dialogHintText(this));
}

void TreeView::fitAll()
{
    m_userMoved = false;
    const QRectF rect = m_scene->sceneRect();
    if (m_items.empty() || rect.isEmpty())
        return;
    fitInView(rect, Qt::KeepAspectRatio);
    // A handful of nodes should not fill the screen.
    if (transform().m11() > 1.5) {
        setTransform(QTransform::fromScale(1.5, 1.5));
        centerOn(rect.center());
    }
}

void TreeView::zoomBy(double factor)
{
    const double current = transform().m11();
    const double target = std::clamp(current * factor, 1e-3, 8.0);
    if (current <= 0 || target == current)
        return;
    scale(target / current, target / current);
    m_userMoved = true;
}

void TreeView::zoomIn()
{
    const auto anchor = transformationAnchor();
    setTransformationAnchor(QGraphicsView::AnchorViewCenter);
    zoomBy(1.25);
    setTransformationAnchor(anchor);
}

void TreeView::zoomOut()
{
    const auto anchor = transformationAnchor();
    setTransformationAnchor(QGraphicsView::AnchorViewCenter);
    zoomBy(1 / 1.25);
    setTransformationAnchor(anchor);
}

void TreeView::wheelEvent(QWheelEvent* event)
{
    const int delta = event->angleDelta().y();
    if (delta == 0) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    zoomBy(std::pow(1.0015, delta)); // one notch (120) is about 20 %
    event->accept();
}

void TreeView::keyPressEvent(QKeyEvent* event)
{
    const auto mods = event->modifiers() & ~Qt::KeypadModifier;
    if (event->key() == Qt::Key_F && mods == Qt::NoModifier) {
        fitAll();
    } else if ((event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)
        && (mods & Qt::ControlModifier)) {
        zoomIn();
    } else if (event->key() == Qt::Key_Minus && (mods & Qt::ControlModifier)) {
        zoomOut();
    } else {
        QGraphicsView::keyPressEvent(event);
        return;
    }
    event->accept();
}

void TreeView::mousePressEvent(QMouseEvent* event)
{
    const qint64 id = nodeAt(event->position().toPoint());
    if (id >= 0 && (event->button() == Qt::LeftButton || event->button() == Qt::RightButton)) {
        if (m_selection)
            m_selection->setCurrent(id);
        event->accept();
        return;
    }
    if (event->button() == Qt::LeftButton)
        m_userMoved = true; // a drag on the background pans
    QGraphicsView::mousePressEvent(event);
}

void TreeView::contextMenuEvent(QContextMenuEvent* event)
{
    const qint64 id = nodeAt(event->pos());
    if (id < 0) {
        event->ignore();
        return;
    }
    QMenu menu(this);
    buildMenu(menu, id);
    menu.exec(event->globalPos());
    event->accept();
}

QString TreeView::toolTipFor(qint64 id) const
{
    const NodeInfo* n = m_data ? m_data->node(id) : nullptr;
    if (!n)
        return {};
    QStringList lines;
    lines << QStringLiteral("#%1  %2").arg(id).arg(n->parent < 0 ? tr("root") : n->sourceName);
    const QString knobs = compactKnobs(n->knobs);
    if (!knobs.isEmpty())
        lines << tr("knobs: %1").arg(knobs);
    if (!n->flags.isEmpty())
        lines << tr("flags: %1").arg(n->flags);
    QString status = n->statusText();
    if (n->pruned)
        status += tr(", pruned");
    else if (static_cast<size_t>(id) < m_dimmed.size() && m_dimmed[static_cast<size_t>(id)])
        status += tr(", in a pruned subtree");
    if (n->boosted)
        status += tr(", boosted");
    if (id == m_data->bestNode())
        status += tr(", best");
    lines << tr("status: %1").arg(status);
    if (n->status == NodeInfo::Status::Ok)
        lines << tr("median: %1").arg(formatDuration(n->medianNs));
    if (!n->bound.isEmpty())
        lines << tr("bound: %1 (%2% of peak bandwidth, %3% of peak compute)")
                     .arg(n->bound)
                     .arg(n->fracBandwidth * 100, 0, 'f', 0)
                     .arg(n->fracCompute * 100, 0, 'f', 0);
    if (!n->failureMessage.isEmpty())
        lines << n->failureMessage.section(QLatin1Char('\n'), 0, 0).left(200);
    QStringList meta;
    if (!n->op.isEmpty())
        meta << tr("op: %1").arg(n->op);
    if (!n->origin.isEmpty())
        meta << tr("origin: %1").arg(n->origin);
    if (n->parent >= 0)
        meta << tr("parent: #%1").arg(n->parent);
    meta << tr("visits: %1").arg(n->visits);
    lines << meta.join(QStringLiteral(" · "));
    for (const auto& h : n->hints)
        lines << tr("hint: %1").arg(h);
    return lines.join(QLatin1Char('\n'));
}

bool TreeView::viewportEvent(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const qint64 id = nodeAt(help->pos());
        if (id >= 0)
            QToolTip::showText(help->globalPos(), toolTipFor(id), viewport());
        else
            QToolTip::hideText();
        return true;
    }
    return QGraphicsView::viewportEvent(event);
}

} // namespace hone::views
