// The search tree panel and the node table: tidy layout, the live TreeView, NodeTableModel with
// its filter, the node context menu and selection sync (views/tree_*, views/node_*).
#include "core/problem_spec.h"
#include "result_values.h"
#include "core/store.h"
#include "views/node_menu.h"
#include "views/node_table.h"
#include "views/session_data.h"
#include "views/tree_layout.h"
#include "views/tree_view.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QElapsedTimer>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QLineEdit>
#include <QMenu>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <algorithm>
#include <map>
#include <random>

using namespace hone::views;
using nlohmann::json;

namespace {

// ---- test data: results as the worker reports them (docs/FORMATS.md, "Worker protocol"), built as
// the typed values the views read

namespace proto = hone::core::protocol;
using hone::testing::check;

proto::EvalResult okResult(double speedup, double medianNs, const std::string& bound, double fracBw)
{
    proto::EvalResult r = hone::testing::passed(hone::testing::timed(medianNs, speedup));
    proto::Roofline rf;
    rf.flops = 1e6;
    rf.bytes = 8e6;
    rf.gflops = 1.2;
    rf.gbps = fracBw * 20;
    rf.intensity = 0.125;
    rf.peakGflops = 100.0;
    rf.peakGbps = 20.0;
    rf.fracCompute = 0.012;
    rf.fracBandwidth = fracBw;
    rf.floorNs = medianNs * fracBw;
    r.roofline = rf;
    r.diagnosis = proto::Diagnosis { bound, "bandwidth-limited", false, json::object() };
    r.environment.emplace();
    r.environment->device = "cpu: test";
    r.environment->compiler = "g++ (Debian 12.2.0-14) 12.2.0";
    r.environment->extra = { { "cores", 2 } };
    return r;
}

proto::EvalResult failedResult(const std::string& kind, const std::string& message)
{
    const auto failure = proto::failureKindFromName(kind);
    proto::EvalResult r = proto::EvalResult::failed(
        "", failure.value_or(proto::FailureKind::WorkerError), kind == "compile_error" ? "compile" : "check", message);
    r.compile = hone::testing::compiled(kind != "compile_error", kind == "compile_error" ? message : "");
    r.checks = std::vector { check(false, 0.5, 0.3, 3) };
    return r;
}

NodeInfo rootNode()
{
    NodeInfo n;
    n.id = 0;
    n.parent = -1;
    n.origin = "root";
    n.op = "restart";
    return n;
}

/// Random sessions shaped like a search: deterministic for a seed.
struct SessionGen {
    explicit SessionGen(unsigned seed)
        : rng(seed)
    {
    }
    std::mt19937 rng;

    NodeInfo node(qint64 id)
    {
        static const char* const sources[] = {"softmax_naive.cpp", "softmax_simd.cpp", "softmax_tiled.cpp"};
        static const char* const ops[] = {"inherit", "compare", "combine", "restart"};
        static const char* const bounds[] = {"memory", "compute", "latency"};
        NodeInfo n;
        n.id = id;
        n.parent = id == 1 ? 0 : static_cast<qint64>(rng() % static_cast<unsigned>(id));
        n.seq = id;
        n.sourceName = sources[rng() % 3];
        n.sourceHash = QStringLiteral("hash-") + n.sourceName;
        n.origin = n.parent == 0 ? "seed" : "mutation";
        n.op = ops[rng() % 4];
        n.knobs = {{"BLOCK", std::to_string(16 << (rng() % 4))}, {"VEC", std::to_string(1 << (rng() % 5))}};
        const unsigned r = rng() % 10;
        if (r < 6) {
            const double speedup = 0.5 + (rng() % 350) / 100.0;
            applyResult(n, okResult(speedup, 1e3 + rng() % 10000000, bounds[rng() % 3], (rng() % 100) / 100.0));
            n.speedup = speedup;
        } else if (r < 8) {
            const bool wrong = rng() % 2;
            applyResult(n, wrong ? failedResult("wrong_result", "3 mismatches in y")
                                 : failedResult("compile_error", "softmax.cpp:12:5: error: expected ';'"));
        }
        n.pruned = rng() % 20 == 0;
        return n;
    }

    /// Nodes [first, first + count) (with the root when first is 0).
    SessionData::Batch batch(qint64 first, int count)
    {
        SessionData::Batch b;
        for (qint64 id = first; id < first + count; ++id)
            b.nodes.push_back(id == 0 ? rootNode() : node(id));
        return b;
    }
};

/// A session stored in a real store and loaded back the way the workbench opens one.
struct StoredSession {
    QTemporaryDir dir;
    std::unique_ptr<hone::core::Store> store;
    int64_t session = 0;

    StoredSession()
    {
        using namespace hone::core;
        store = std::make_unique<Store>(std::filesystem::path(dir.path().toStdString()) / "hone.db");
        const auto spec = loadProblem(std::string(HONE_TEST_DATA) + "/problems/good_scale");
        session = store->createSession(store->upsertProblem(spec), "cpu", "uct", 7, {{"budget", 6}});
        const auto naive = store->putSource("cpp", "scale_naive.cpp", "void hone_run() { /* naive */ }\n");
        const auto simd = store->putSource("cpp", "scale_simd.cpp", "void hone_run() { /* simd */ }\n");
        auto node = [&](int64_t id, int64_t parent, const std::string& hash, json knobs, const char* origin,
                        const char* op) {
            store->insertNode(session, NodeRecord {id, parent, id, hash, std::move(knobs), "", origin, op, nowIso()});
        };
        node(0, -1, "", json::object(), "root", "restart");
        node(1, 0, naive, {{"VEC", "1"}}, "seed", "restart");
        node(2, 1, simd, {{"BLOCK", "64"}, {"VEC", "8"}}, "mutation", "inherit");
        node(3, 1, simd, {{"BLOCK", "32"}, {"VEC", "16"}}, "mutation", "compare");
        node(4, 3, simd, {{"BLOCK", "32"}, {"VEC", "4"}}, "mutation", "combine");
        node(5, 2, simd, {{"BLOCK", "128"}, {"VEC", "8"}}, "mutation", "restart");
        node(6, 2, simd, {{"BLOCK", "64"}, {"VEC", "2"}}, "crossover", "inherit");
        auto eval = [&](int64_t id, const proto::EvalResult& result, double speedup) {
            EvaluationRecord e;
            e.nodeId = id;
            e.cacheKey = "key-" + std::to_string(id);
            e.status = result.ok() ? "ok" : "failed";
            if (result.failure) {
                e.failureKind = proto::failureKindName(result.failure->kind);
                e.failureMessage = result.failure->message;
            }
            e.medianNs = result.medianNs();
            e.speedup = speedup;
            e.bound = result.bound();
            e.device = "cpu: test";
            e.result = result.toJson();
            e.createdAt = nowIso();
            store->insertEvaluation(session, e);
        };
        eval(1, okResult(1.0, 4.56e6, "memory", 0.31), 1.0);
        eval(2, okResult(2.5, 12345, "memory", 0.63), 2.5);
        eval(3, failedResult("wrong_result", "3 mismatches in y (first at index 17)"), 0);
        eval(5, failedResult("compile_error", "scale_simd.cpp:12:5: error: expected ';'"), 0);
        SteeringRecord prune;
        prune.nodeId = 3;
        prune.command = "prune";
        prune.author = "test";
        prune.outcome = "applied";
        prune.createdAt = nowIso();
        store->insertSteering(session, prune);
    }

    void loadInto(SessionData& data) const
    {
        data.setStore(store.get());
        data.loadFromStore(*store, session);
    }
};

// ---- layout checks

std::vector<std::vector<int>> childrenOf(const std::vector<qint64>& parents)
{
    std::vector<std::vector<int>> kids(parents.size());
    for (size_t v = 0; v < parents.size(); ++v)
        if (parents[v] >= 0)
            kids[static_cast<size_t>(parents[v])].push_back(static_cast<int>(v));
    return kids;
}

/// Empty when the layout is tidy; else what is wrong.
QString layoutProblem(const std::vector<qint64>& parents, const std::vector<TreeLayoutPoint>& pts)
{
    const auto kids = childrenOf(parents);
    if (pts.size() != parents.size())
        return QStringLiteral("%1 points for %2 nodes").arg(pts.size()).arg(parents.size());
    std::map<int, std::vector<double>> levels;
    double minX = 1e300;
    for (size_t v = 0; v < parents.size(); ++v) {
        const auto& p = pts[v];
        const int want = parents[v] < 0 ? 0 : pts[static_cast<size_t>(parents[v])].depth + 1;
        if (p.depth != want || p.y != p.depth)
            return QStringLiteral("node %1 at depth %2 (y %3), expected %4").arg(v).arg(p.depth).arg(p.y).arg(want);
        levels[p.depth].push_back(p.x);
        minX = std::min(minX, p.x);
        const auto& ch = kids[v];
        if (ch.empty())
            continue;
        const double mid = 0.5 * (pts[static_cast<size_t>(ch.front())].x + pts[static_cast<size_t>(ch.back())].x);
        if (std::abs(p.x - mid) > 1e-6)
            return QStringLiteral("node %1 at x %2, not centred over its children (%3)").arg(v).arg(p.x).arg(mid);
        for (size_t i = 1; i < ch.size(); ++i)
            if (pts[static_cast<size_t>(ch[i])].x <= pts[static_cast<size_t>(ch[i - 1])].x)
                return QStringLiteral("children of %1 out of order").arg(v);
    }
    for (auto& [depth, xs] : levels) {
        std::sort(xs.begin(), xs.end());
        for (size_t i = 1; i < xs.size(); ++i)
            if (xs[i] - xs[i - 1] < 1 - 1e-6)
                return QStringLiteral("two nodes at depth %1 are %2 apart (x %3 and %4)")
                    .arg(depth)
                    .arg(xs[i] - xs[i - 1])
                    .arg(xs[i - 1])
                    .arg(xs[i]);
    }
    if (std::abs(minX) > 1e-9)
        return QStringLiteral("leftmost node at %1, not 0").arg(minX);
    return {};
}

std::vector<qint64> randomParents(int n, unsigned seed, int window, double rootChance)
{
    std::mt19937 rng(seed);
    std::vector<qint64> parents(static_cast<size_t>(n), -1);
    for (int v = 1; v < n; ++v) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < rootChance)
            continue;
        const int span = window > 0 ? std::min(v, window) : v;
        parents[static_cast<size_t>(v)] = v - 1 - static_cast<int>(rng() % static_cast<unsigned>(span));
    }
    return parents;
}

int countNodeItems(const TreeView& view)
{
    int n = 0;
    for (auto* item : view.scene()->items())
        n += item->type() == TreeView::kNodeItemType;
    return n;
}

} // namespace

class TestViewsTree : public QObject {
    Q_OBJECT
private slots:
    // ---- tree_layout

    void layoutSmallTreeExactly()
    {
        // 0 -> {1, 2}, 1 -> {3, 4}, 2 -> {5, 6}: leaves side by side, parents between.
        const auto pts = layoutForest({-1, 0, 0, 1, 1, 2, 2});
        const double want[] = {1.5, 0.5, 2.5, 0, 1, 2, 3};
        for (int v = 0; v < 7; ++v)
            QCOMPARE(pts[static_cast<size_t>(v)].x, want[v]);
        QCOMPARE(pts[3].depth, 2);
        // Walker spreads small subtrees evenly between big ones: 0 -> {1, 2, 3}, 1 and 3 wide.
        const auto spread = layoutForest({-1, 0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3});
        QVERIFY2(layoutProblem({-1, 0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3}, spread).isEmpty(), "tidy");
        QCOMPARE(spread[2].x - spread[1].x, spread[3].x - spread[2].x);
        // Options scale both axes.
        const auto wide = layoutForest({-1, 0, 0}, {2.0, 3.0});
        QCOMPARE(wide[2].x - wide[1].x, 2.0);
        QCOMPARE(wide[1].y, 3.0);
    }

    void layoutRandomTrees_data()
    {
        QTest::addColumn<std::vector<qint64>>("parents");
        QTest::addRow("single node") << std::vector<qint64> {-1};
        QTest::addRow("chain of 3000") << randomParents(3000, 1, 1, 0);
        std::vector<qint64> star(2000, 0);
        star[0] = -1;
        QTest::addRow("star of 2000") << star;
        for (unsigned seed = 1; seed <= 6; ++seed) {
            QTest::addRow("recursive tree, 800 nodes, seed %u", seed) << randomParents(800, seed, 0, 0);
            QTest::addRow("search-like tree, 1500 nodes, seed %u", seed) << randomParents(1500, seed, 6, 0);
            QTest::addRow("forest, 600 nodes, seed %u", seed) << randomParents(600, seed, 12, 0.03);
        }
    }

    void layoutRandomTrees()
    {
        QFETCH(std::vector<qint64>, parents);
        const auto pts = layoutForest(parents);
        const QString problem = layoutProblem(parents, pts);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        // Deterministic, and the adjacency-list form gives the same layout.
        const auto again = layoutForest(parents);
        std::vector<int> roots;
        for (size_t v = 0; v < parents.size(); ++v)
            if (parents[v] < 0)
                roots.push_back(static_cast<int>(v));
        const auto fromLists = layoutTree(childrenOf(parents), roots);
        for (size_t v = 0; v < pts.size(); ++v) {
            QCOMPARE(again[v].x, pts[v].x);
            QCOMPARE(fromLists[v].x, pts[v].x);
            QCOMPARE(fromLists[v].depth, pts[v].depth);
        }
    }

    void layoutRefusesWhatIsNotAForest()
    {
        try {
            layoutTree({{1}, {2}, {1}}, {0});
            QFAIL("node 1 is a child of 0 and of 2");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString(e.what()).contains("node 1 is reached twice"), e.what());
        }
        try {
            layoutTree({{5}}, {0});
            QFAIL("node 5 does not exist");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(QString(e.what()).contains("node 5 (a child of 0) is out of range 0..0"), e.what());
        }
        // A cycle no root reaches is left unplaced; the rest is laid out.
        const auto pts = layoutForest({-1, 0, 3, 2});
        QCOMPARE(pts[1].depth, 1);
        QCOMPARE(pts[2].depth, -1);
        QCOMPARE(pts[3].depth, -1);
    }

    /// A 5,000-node forest lays out with every rule held, from a parent list and through
    /// SessionData as the TreeView does it (how fast: bench_workbench BM_LayoutForest).
    void layoutHoldsAt5000Nodes()
    {
        const auto parents = randomParents(5000, 42, 8, 0);
        QCOMPARE(layoutForest(parents).size(), size_t(5000));
        QCOMPARE(layoutProblem(parents, layoutForest(parents)), QString());
        SessionData data;
        SessionGen gen(5);
        data.apply(gen.batch(0, 5000));
        QCOMPARE(layoutSession(data).size(), size_t(5000));
        std::vector<qint64> sessionParents;
        for (const auto& n : data.nodes())
            sessionParents.push_back(n.parent);
        const QString problem = layoutProblem(sessionParents, layoutSession(data));
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    // ---- NodeTableModel

    void modelFollowsBatchesAndResets()
    {
        SessionData data;
        NodeTableModel model(&data);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
        NodeFilterProxy proxy;
        proxy.setSourceModel(&model);
        proxy.setSortRole(Qt::UserRole);
        QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::Fatal);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QCOMPARE(model.columnCount(), int(NodeTableModel::ColumnCount));
        QCOMPARE(model.headerData(NodeTableModel::Bandwidth, Qt::Horizontal).toString(), QString("% BW"));

        SessionGen gen(3);
        data.apply(gen.batch(0, 31));
        QCOMPARE(model.rowCount(), 31);
        QCOMPARE(inserted.size(), 1);
        QCOMPARE(inserted[0][1].toInt(), 0);
        QCOMPARE(inserted[0][2].toInt(), 30);

        // Updates of 4, 5 and 9 plus ten new nodes: rows appended, the updated rows refreshed.
        SessionData::Batch b = gen.batch(31, 10);
        NodeInfo n9 = *data.node(9);
        n9.knobs = {{"BLOCK", "64"}, {"VEC", "8"}};
        n9.failureKind.clear();
        n9.failureMessage.clear();
        applyResult(n9, okResult(3.41, 12345, "memory", 0.63));
        n9.speedup = 3.41;
        b.nodes.push_back(n9);
        for (qint64 id : {4, 5}) {
            NodeInfo n = *data.node(id);
            n.failureKind.clear();
            n.failureMessage.clear();
            applyResult(n, failedResult("wrong_result", "3 mismatches in y\nfirst at index 17"));
            b.nodes.push_back(n);
        }
        changed.clear();
        data.apply(b);
        QCOMPARE(model.rowCount(), 41);
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(inserted[1][1].toInt(), 31);
        QCOMPARE(inserted[1][2].toInt(), 40);
        auto covered = [&](int row) {
            for (const auto& args : changed) {
                const auto tl = args[0].value<QModelIndex>(), br = args[1].value<QModelIndex>();
                if (tl.row() <= row && row <= br.row() && tl.column() == 0 && br.column() == model.columnCount() - 1
                    && args[2].value<QList<int>>().isEmpty())
                    return true;
            }
            return false;
        };
        QVERIFY(covered(4) && covered(5) && covered(9));
        QVERIFY(!covered(40)); // new rows come by rowsInserted only
        QCOMPARE(reset.size(), 0);

        auto cell = [&](int row, int column, int role = Qt::DisplayRole) { return model.index(row, column).data(role); };
        QCOMPARE(cell(9, NodeTableModel::Id).toLongLong(), 9);
        QCOMPARE(cell(9, NodeTableModel::Knobs).toString(), QString("BLOCK=64 VEC=8"));
        QCOMPARE(cell(9, NodeTableModel::Speedup).toString(), QString("3.41x"));
        QCOMPARE(cell(9, NodeTableModel::Speedup, Qt::UserRole).toDouble(), 3.41);
        QCOMPARE(cell(9, NodeTableModel::Median).toString(), QString("12.3 µs"));
        QCOMPARE(cell(9, NodeTableModel::Median, Qt::UserRole).toDouble(), 12345.0);
        QCOMPARE(cell(9, NodeTableModel::Bound).toString(), QString("memory"));
        QCOMPARE(cell(9, NodeTableModel::Bandwidth).toString(), QString("63.0%"));
        QCOMPARE(cell(9, NodeTableModel::Status).toString().left(5), QString("3.41x"));
        QCOMPARE(cell(4, NodeTableModel::Speedup).toString(), QString());
        QCOMPARE(cell(4, NodeTableModel::Failure).toString(), QString("wrong_result: 3 mismatches in y"));
        QCOMPARE(cell(4, NodeTableModel::Failure, Qt::ToolTipRole).toString(),
            QString("3 mismatches in y\nfirst at index 17"));
        QVERIFY(cell(4, NodeTableModel::Status).toString().startsWith("failed: wrong_result"));
        QCOMPARE(cell(0, NodeTableModel::Parent).toString(), QString());
        QCOMPARE(cell(1, NodeTableModel::Parent).toLongLong(), 0);
        QCOMPARE(formatDuration(850), QString("850 ns"));
        QCOMPARE(formatDuration(4.56e6), QString("4.56 ms"));
        QCOMPARE(formatDuration(1.2e9), QString("1.20 s"));

        // Sorting by speedup (UserRole, numeric): the session's best first.
        proxy.sort(NodeTableModel::Speedup, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data(NodeTableModel::NodeIdRole).toLongLong(), data.bestNode());
        QCOMPARE(proxy.index(0, NodeTableModel::Speedup).data(Qt::UserRole).toDouble(),
            data.node(data.bestNode())->speedup);

        // Opening a stored session resets the model once, to the stored rows.
        StoredSession stored;
        stored.loadInto(data);
        QCOMPARE(reset.size(), 1);
        QCOMPARE(model.rowCount(), 7);
        QCOMPARE(cell(2, NodeTableModel::Source).toString(), QString("scale_simd.cpp"));
        QCOMPARE(cell(3, NodeTableModel::Status).toString(), QString("failed: wrong_result, pruned"));
        QCOMPARE(cell(1, NodeTableModel::Median).toString(), QString("4.56 ms"));
        QCOMPARE(cell(1, NodeTableModel::Visits).toInt(), 4); // nodes 1, 2, 3 and 5 evaluated in its subtree
        QCOMPARE(cell(2, NodeTableModel::Op).toString(), QString("inherit"));

        // ...and grows from there.
        NodeInfo more;
        more.id = 7;
        more.parent = 2;
        more.sourceName = "scale_simd.cpp";
        more.op = "compare";
        SessionData::Batch tail;
        tail.nodes.push_back(more);
        data.apply(tail);
        QCOMPARE(model.rowCount(), 8);
        QCOMPARE(cell(7, NodeTableModel::Status).toString(), QString("pending"));
        data.clear();
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(reset.size(), 2);
    }

    void filterKeepsOnlyMatchingRows()
    {
        SessionData data;
        Selection selection;
        NodeActions actions;
        NodeTable table(&data, &selection, &actions);
        QAbstractItemModelTester tester(table.model(), QAbstractItemModelTester::FailureReportingMode::Fatal);
        SessionGen gen(11);
        for (qint64 first = 0; first < 300; first += 60)
            data.apply(gen.batch(first, 60));
        auto* proxy = table.proxy();
        QCOMPARE(proxy->rowCount(), 300);

        auto count = [&](auto pred) {
            return static_cast<int>(std::count_if(data.nodes().begin(), data.nodes().end(), pred));
        };
        auto shownIds = [&] {
            QSet<qint64> ids;
            for (int r = 0; r < proxy->rowCount(); ++r)
                ids.insert(proxy->index(r, 0).data(NodeTableModel::NodeIdRole).toLongLong());
            return ids;
        };
        const int wrong = count([](const NodeInfo& n) { return n.failureKind == "wrong_result"; });
        const int failed = count([](const NodeInfo& n) { return n.status == NodeInfo::Status::Failed; });
        const int compileErrors = count([](const NodeInfo& n) { return n.failureKind == "compile_error"; });
        const int pruned = count([](const NodeInfo& n) { return n.pruned; });
        const int vec8 = count([](const NodeInfo& n) { return n.knobs.value("VEC", "") == "8"; });
        QVERIFY(wrong > 5 && compileErrors > 5 && pruned > 3 && vec8 > 10 && failed < 300);

        QTest::keyClicks(table.filterEdit(), "wrong_result");
        QCOMPARE(proxy->rowCount(), wrong);
        for (qint64 id : shownIds())
            QCOMPARE(data.node(id)->failureKind, QString("wrong_result"));
        table.filterEdit()->setText("WRONG_RESULT"); // case-insensitive
        QCOMPARE(proxy->rowCount(), wrong);
        table.filterEdit()->setText("VEC=8");
        QCOMPARE(proxy->rowCount(), vec8);
        table.filterEdit()->setText("softmax_tiled");
        QCOMPARE(proxy->rowCount(), count([](const NodeInfo& n) { return n.sourceName == "softmax_tiled.cpp"; }));
        table.filterEdit()->setText("latency");
        QCOMPARE(proxy->rowCount(), count([](const NodeInfo& n) { return n.bound == "latency"; }));

        table.filterEdit()->clear();
        table.statusCombo()->setCurrentIndex(2); // Failed
        QCOMPARE(proxy->rowCount(), failed);
        table.filterEdit()->setText("expected ';'"); // a failure message
        QCOMPARE(proxy->rowCount(), compileErrors);
        table.filterEdit()->clear();
        table.statusCombo()->setCurrentIndex(4); // Pruned
        QCOMPARE(proxy->rowCount(), pruned);
        table.statusCombo()->setCurrentIndex(1); // OK
        QCOMPARE(proxy->rowCount(), count([](const NodeInfo& n) { return n.status == NodeInfo::Status::Ok; }));
        table.statusCombo()->setCurrentIndex(3); // Pending, the root excluded
        QCOMPARE(proxy->rowCount(),
            count([](const NodeInfo& n) { return n.status == NodeInfo::Status::Pending && n.parent >= 0; }));

        // Live: a pending node that fails leaves "Pending" and enters "Failed" without a reset.
        const qint64 pendingId = *shownIds().begin();
        NodeInfo n = *data.node(pendingId);
        applyResult(n, failedResult("timeout", "stage check ran past 60 s"));
        SessionData::Batch b;
        b.nodes.push_back(n);
        const int pendingBefore = proxy->rowCount();
        data.apply(b);
        QCOMPARE(proxy->rowCount(), pendingBefore - 1);
        table.statusCombo()->setCurrentIndex(2);
        QCOMPARE(proxy->rowCount(), failed + 1);
        table.filterEdit()->setText("timeout");
        QCOMPARE(shownIds(), QSet<qint64> {pendingId});
        table.statusCombo()->setCurrentIndex(0);
        table.filterEdit()->clear();
        QCOMPARE(proxy->rowCount(), 300);
    }

    // ---- node menu

    void menuActionsEmitTheRightSignals()
    {
        SessionData data;
        StoredSession stored;
        stored.loadInto(data);
        Selection selection;
        NodeActions actions;
        QSignalSpy prune(&actions, &NodeActions::pruneRequested);
        QSignalSpy boost(&actions, &NodeActions::boostRequested);
        QSignalSpy hint(&actions, &NodeActions::hintRequested);
        QSignalSpy edit(&actions, &NodeActions::editRequested);
        QSignalSpy compare(&actions, &NodeActions::compareRequested);
        QSignalSpy review(&actions, &NodeActions::reviewRequested);

        QList<qint64> asked;
        std::optional<QString> answer = QStringLiteral("  try float4 loads ");
        auto provider = [&](qint64 node) {
            asked << node;
            return answer;
        };
        QMenu menu;
        const auto b = NodeMenu::build(menu, 2, &data, &selection, &actions, provider);
        QCOMPARE(menu.actions().size(), 7); // six actions and a separator
        b.prune->trigger();
        b.boost->trigger();
        b.edit->trigger();
        b.review->trigger();
        b.compare->trigger();
        b.hint->trigger();
        QCOMPARE(prune.size(), 1);
        QCOMPARE(prune[0][0].toLongLong(), 2);
        QCOMPARE(boost.size(), 1);
        QCOMPARE(boost[0][0].toLongLong(), 2);
        QCOMPARE(edit.size(), 1);
        QCOMPARE(edit[0][0].toLongLong(), 2);
        QCOMPARE(review.size(), 1);
        QCOMPARE(review[0][0].toLongLong(), 2);
        QCOMPARE(compare.size(), 1);
        QCOMPARE(compare[0][0].toLongLong(), 2);
        QCOMPARE(compare[0][1].toLongLong(), -1); // no other node chosen: ask
        QCOMPARE(asked, QList<qint64> {2});
        QCOMPARE(hint.size(), 1);
        QCOMPARE(hint[0][0].toLongLong(), 2);
        QCOMPARE(hint[0][1].toString(), QString("try float4 loads"));

        // Cancelled or blank hints emit nothing.
        answer = std::nullopt;
        b.hint->trigger();
        answer = QStringLiteral("   ");
        b.hint->trigger();
        QCOMPARE(hint.size(), 1);
        QCOMPARE(asked.size(), 3);

        // "Compare with" uses the other node when there is one.
        selection.setOther(5);
        QMenu menu2;
        const auto b2 = NodeMenu::build(menu2, 6, &data, &selection, &actions, provider);
        QCOMPARE(b2.compare->text(), QString("Compare with #5"));
        b2.compare->trigger();
        QCOMPARE(compare.size(), 2);
        QCOMPARE(compare[1][0].toLongLong(), 6);
        QCOMPARE(compare[1][1].toLongLong(), 5);
        QVERIFY(!b2.review->isEnabled()); // node 6 is pending: nothing to review
        QMenu menu3;
        const auto self = NodeMenu::build(menu3, 5, &data, &selection, &actions, provider);
        self.compare->trigger();
        QCOMPARE(compare[2][1].toLongLong(), -1); // not with itself
        QVERIFY(!self.review->isEnabled());       // node 5 failed

        // Pruned node 3: no second prune or boost; the root: nothing at all.
        QMenu menu4;
        const auto p = NodeMenu::build(menu4, 3, &data, &selection, &actions, provider);
        QVERIFY(!p.prune->isEnabled() && !p.boost->isEnabled() && p.hint->isEnabled() && p.edit->isEnabled());
        QMenu menu5;
        const auto r = NodeMenu::build(menu5, 0, &data, &selection, &actions, provider);
        for (QAction* a : {r.prune, r.boost, r.hint, r.edit, r.compare, r.review})
            QVERIFY(!a->isEnabled());
        r.prune->trigger(); // disabled: no signal
        QCOMPARE(prune.size(), 1);

        // The tree's own menu is the same menu for the node under the mouse.
        TreeView view(&data, &selection, &actions);
        view.setHintTextProvider(provider);
        QMenu menu6;
        const auto t = view.buildMenu(menu6, 6);
        t.prune->trigger();
        QCOMPARE(prune.size(), 2);
        QCOMPARE(prune[1][0].toLongLong(), 6);
        answer = QStringLiteral("unroll by 4");
        t.hint->trigger();
        QCOMPARE(hint.size(), 2);
        QCOMPARE(hint[1][0].toLongLong(), 6);
        QCOMPARE(hint[1][1].toString(), QString("unroll by 4"));
    }

    // ---- selection sync

    void selectionSyncsBothWays()
    {
        SessionData data;
        StoredSession stored;
        stored.loadInto(data);
        Selection selection;
        NodeActions actions;
        NodeTable table(&data, &selection, &actions);
        TreeView tree(&data, &selection, &actions);
        tree.resize(800, 600);
        tree.show();
        QVERIFY(QTest::qWaitForWindowExposed(&tree));
        QTRY_COMPARE(tree.nodeItemCount(), 7);

        // Table row -> selection, with the table sorted so that rows are not ids.
        table.view()->sortByColumn(NodeTableModel::Speedup, Qt::DescendingOrder);
        const QModelIndex top = table.proxy()->index(0, NodeTableModel::Source);
        QCOMPARE(top.data(NodeTableModel::NodeIdRole).toLongLong(), 2);
        table.view()->selectionModel()->setCurrentIndex(top,
            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QCOMPARE(selection.current(), 2);
        QVERIFY(tree.lookOf(2).current);

        // Selection -> table row and tree ring.
        selection.setCurrent(5);
        QCOMPARE(table.view()->currentIndex().data(NodeTableModel::NodeIdRole).toLongLong(), 5);
        QCOMPARE(table.view()->selectionModel()->selectedRows().size(), 1);
        QVERIFY(tree.lookOf(5).current);
        QVERIFY(!tree.lookOf(2).current);

        // Click in the tree -> selection -> table.
        const QPoint at = tree.mapFromScene(tree.nodePos(6));
        QCOMPARE(tree.nodeAt(at), 6);
        QTest::mouseClick(tree.viewport(), Qt::LeftButton, {}, at);
        QCOMPARE(selection.current(), 6);
        QCOMPARE(table.view()->currentIndex().data(NodeTableModel::NodeIdRole).toLongLong(), 6);
        QVERIFY(tree.lookOf(6).current && !tree.lookOf(5).current);

        // A filtered-out node leaves the table without a selected row.
        table.statusCombo()->setCurrentIndex(2); // Failed: nodes 3 and 5
        QCOMPARE(table.proxy()->rowCount(), 2);
        selection.setCurrent(1);
        QVERIFY(table.view()->selectionModel()->selectedRows().isEmpty());
        selection.setCurrent(3);
        QCOMPARE(table.view()->currentIndex().data(NodeTableModel::NodeIdRole).toLongLong(), 3);
    }

    // ---- TreeView

    void treeViewDrawsStoredSession()
    {
        SessionData data;
        StoredSession stored;
        stored.loadInto(data);
        Selection selection;
        NodeActions actions;
        TreeView view(&data, &selection, &actions);
        view.refresh();
        QCOMPARE(view.nodeItemCount(), 7);
        QCOMPARE(countNodeItems(view), 7);

        const QColor red(0xe5, 0x39, 0x35);
        QCOMPARE(view.lookOf(5).fill, red);          // failed
        QVERIFY(!view.lookOf(5).dimmed);
        QVERIFY(view.lookOf(6).pending);             // not evaluated yet
        QVERIFY(view.lookOf(2).best);                // 2.5x, the best
        QVERIFY(!view.lookOf(1).best);
        QVERIFY(view.lookOf(3).dimmed);              // pruned
        QVERIFY(view.lookOf(4).dimmed);              // below a pruned node
        QVERIFY(!view.lookOf(2).dimmed);
        // Faster is further along the log-viridis scale (the session's best at its top end).
        QCOMPARE(view.speedupScale().high(), data.node(2)->speedup);
        QCOMPARE(view.lookOf(2).fill, viridis(1.0));
        QCOMPARE(view.lookOf(1).fill, viridis(view.speedupScale().position(data.node(1)->speedup)));
        QVERIFY(view.speedupScale().position(data.node(1)->speedup) < 1.0);
        // Labels: the speedup under an evaluated node, "root" under the root (no letter).
        QCOMPARE(view.lookOf(2).label, QStringLiteral("2.50x"));
        QCOMPARE(view.lookOf(5).label, QStringLiteral("failed"));
        QCOMPARE(view.lookOf(6).label, QStringLiteral("pending"));
        QCOMPARE(view.lookOf(0).label, QStringLiteral("root"));
        QVERIFY(view.lookOf(0).op.isNull());
        view.setLabel(NodeLabel::Id);
        QCOMPARE(view.lookOf(2).label, QStringLiteral("#2"));
        QCOMPARE(view.lookOf(0).label, QStringLiteral("root"));
        view.setLabel(NodeLabel::Speedup);
        QVERIFY(view.lookOf(1).radius > view.lookOf(2).radius);                       // 4 visits vs 2
        QCOMPARE(view.lookOf(2).op, QChar('I'));
        QCOMPARE(view.lookOf(3).op, QChar('C'));
        QCOMPARE(view.lookOf(4).op, QChar('M'));
        QCOMPARE(view.lookOf(5).op, QChar('R'));

        // Parents centred over their children, in scene units.
        QCOMPARE(view.nodePos(1).x(), (view.nodePos(2).x() + view.nodePos(3).x()) / 2);
        QCOMPARE(view.nodePos(2).y() - view.nodePos(1).y(), TreeView::kRow);

        const QString tip = view.toolTipFor(2);
        for (const char* want : {"#2", "scale_simd.cpp", "knobs: BLOCK=64 VEC=8", "status: 2.50x", "best",
                 "bound: memory (63% of peak bandwidth", "op: inherit", "median: 12.3 µs"})
            QVERIFY2(tip.contains(QString::fromUtf8(want)), qPrintable(tip + "\nlacks: " + QString::fromUtf8(want)));
        QVERIFY(view.toolTipFor(3).contains("status: failed: wrong_result, pruned"));
        QVERIFY(view.toolTipFor(4).contains("in a pruned subtree"));
        QVERIFY(view.toolTipFor(3).contains("3 mismatches in y"));

        // Best moves: the old best loses its gold ring on the next refresh.
        NodeInfo n6 = *data.node(6);
        applyResult(n6, okResult(4.0, 7716, "compute", 0.2));
        n6.speedup = 4.0;
        SessionData::Batch b;
        b.nodes.push_back(n6);
        data.apply(b);
        QTRY_VERIFY(view.lookOf(6).best);
        QVERIFY(!view.lookOf(2).best);
        QVERIFY(!view.lookOf(6).pending);
    }

    void treeViewBatchesAndReusesItems()
    {
        SessionData data;
        Selection selection;
        NodeActions actions;
        TreeView view(&data, &selection, &actions);
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        SessionGen gen(21);

        // 2,000 nodes in 40 batches with no event loop in between: nothing is built per event...
        for (qint64 first = 0; first < 2000; first += 50)
            data.apply(gen.batch(first, 50));
        QCOMPARE(view.nodeItemCount(), 0);
        QCOMPARE(view.layoutCount(), 0);
        // ...and one refresh builds all of them.
        QTRY_COMPARE(view.nodeItemCount(), 2000);
        QCOMPARE(view.layoutCount(), 1);
        QCOMPARE(countNodeItems(view), 2000);
        const auto pts = layoutSession(data);
        for (qint64 id : {0, 1, 999, 1999}) {
            QCOMPARE(view.nodePos(id).x(), pts[static_cast<size_t>(id)].x * TreeView::kColumn);
            QCOMPARE(view.nodePos(id).y(), pts[static_cast<size_t>(id)].y * TreeView::kRow);
        }
        QGraphicsItem* item10 = view.itemFor(10);
        QVERIFY(item10);

        // A steady stream (a batch every ~10 ms) relayouts at most once per 100 ms.
        const int before = view.layoutCount();
        QElapsedTimer clock;
        clock.start();
        qint64 next = 2000;
        for (int i = 0; i < 30; ++i) {
            SessionData::Batch b = gen.batch(next, 10);
            next += 10;
            NodeInfo upd = *data.node(10 + i);
            upd.pruned = !upd.pruned;
            b.nodes.push_back(upd);
            data.apply(b);
            QTest::qWait(10);
        }
        const qint64 elapsed = clock.elapsed();
        QTRY_COMPARE(view.nodeItemCount(), 2300);
        const int layouts = view.layoutCount() - before;
        QVERIFY2(layouts >= 1 && layouts <= elapsed / TreeView::kRefreshMs + 2,
            qPrintable(QString("%1 layouts in %2 ms").arg(layouts).arg(elapsed)));
        QCOMPARE(view.itemFor(10), item10); // reused, not rebuilt
        QCOMPARE(countNodeItems(view), 2300);
        QCOMPARE(view.lookOf(10).dimmed, data.node(10)->pruned || view.lookOf(data.node(10)->parent).dimmed);

        // Status-only changes restyle without a new layout.
        const int layoutsNow = view.layoutCount();
        qint64 target = 2000;
        while (view.lookOf(target).dimmed || data.node(target)->status == NodeInfo::Status::Failed)
            ++target;
        QVERIFY(view.lookOf(target).fill != QColor(0xe5, 0x39, 0x35));
        NodeInfo upd = *data.node(target);
        applyResult(upd, failedResult("nan", "NaN in y"));
        SessionData::Batch b;
        b.nodes.push_back(upd);
        data.apply(b);
        QTRY_COMPARE(view.lookOf(target).fill, QColor(0xe5, 0x39, 0x35));
        QCOMPARE(view.layoutCount(), layoutsNow);

        // At 5,000 nodes a structural refresh stays interactive.
        data.apply(gen.batch(next, 5000 - static_cast<int>(next)));
        QTRY_COMPARE(view.nodeItemCount(), 5000);
        qInfo("TreeView relayout of 5,000 nodes (layout + moving items): %.2f ms", view.lastLayoutMs());
        // Painting all of it (fitted: level of detail drops the text) and a zoomed-in part.
        QElapsedTimer paint;
        paint.start();
        const QPixmap whole = view.viewport()->grab();
        const double wholeMs = paint.nsecsElapsed() / 1e6;
        view.fitAll();
        for (int i = 0; i < 12; ++i)
            view.zoomIn();
        paint.restart();
        const QPixmap part = view.viewport()->grab();
        const double partMs = paint.nsecsElapsed() / 1e6;
        qInfo("painting 5,000 nodes: %.1f ms fitted, %.1f ms zoomed in", wholeMs, partMs);
        QVERIFY(!whole.isNull() && !part.isNull()); // how fast: bench_workbench BM_LiveTree

        // A reset empties the scene; the next refresh rebuilds it for the new session.
        StoredSession stored;
        stored.loadInto(data);
        QCOMPARE(view.nodeItemCount(), 0);
        QTRY_COMPARE(view.nodeItemCount(), 7);
        QCOMPARE(countNodeItems(view), 7);
    }

    void treeViewZoomAndFit()
    {
        SessionData data;
        Selection selection;
        NodeActions actions;
        TreeView view(&data, &selection, &actions);
        view.resize(800, 500);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        SessionGen gen(8);
        data.apply(gen.batch(0, 400));
        view.refresh();
        const double fit = view.transform().m11();
        QVERIFY(fit > 0 && fit < 1.5);
        // The whole tree is visible after a fit.
        const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
        QVERIFY(visible.adjusted(-1, -1, 1, 1).contains(view.scene()->sceneRect()));

        QTest::keyClick(&view, Qt::Key_Plus, Qt::ControlModifier);
        QCOMPARE(view.transform().m11(), fit * 1.25);
        QTest::keyClick(&view, Qt::Key_Minus, Qt::ControlModifier);
        QTest::keyClick(&view, Qt::Key_Minus, Qt::ControlModifier);
        QVERIFY(qAbs(view.transform().m11() - fit / 1.25) < 1e-9);
        QWheelEvent wheel(QPointF(400, 250), view.viewport()->mapToGlobal(QPointF(400, 250)), QPoint(), QPoint(0, 120),
            Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(view.viewport(), &wheel);
        QVERIFY(view.transform().m11() > fit / 1.25 * 1.1);
        QTest::keyClick(&view, Qt::Key_Plus, Qt::ControlModifier);
        QTest::keyClick(&view, Qt::Key_Plus, Qt::ControlModifier);

        // Zoomed by hand: growth no longer refits...
        const double zoomed = view.transform().m11();
        data.apply(gen.batch(400, 100));
        view.refresh();
        QCOMPARE(view.transform().m11(), zoomed);
        // ...until F.
        QTest::keyClick(&view, Qt::Key_F);
        const QRectF all = view.mapToScene(view.viewport()->rect()).boundingRect();
        QVERIFY(all.adjusted(-1, -1, 1, 1).contains(view.scene()->sceneRect()));
        QVERIFY(view.transform().m11() < zoomed);
    }
};

QTEST_MAIN(TestViewsTree)
#include "tst_views_tree.moc"
