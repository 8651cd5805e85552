// The knowledge panels: the hits behind a candidate (recorded or suggested) and the curator
// (import, drop, tags, search, preview, remove), over a real knowledge base in a temp dir,
// reached as the workbench reaches it: through app::KbAccess (views/knowledge_access.h).

#include "app/workbench/kb_access.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/skills.h"
#include "views/kb_curator.h"
#include "views/knowledge_hits.h"
#include "views/session_data.h"

#include <QAbstractItemModelTester>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#include <QTableView>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include <memory>

using namespace hone;
using hone::views::KbCurator;
using hone::views::KbDocumentsModel;
using hone::views::KbImportOutcome;
using hone::views::KnowledgeHits;
using hone::views::KnowledgeHitsModel;

namespace {

namespace proto = hone::core::protocol;

QString corpus(const char* name)
{
    return QStringLiteral(HONE_SOURCE_DIR "/resources/knowledge/") + QString::fromLatin1(name);
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
    f.write(bytes);
}

/// A passed result with a diagnosis, as the worker reports it (docs/FORMATS.md).
proto::EvalResult okResult(double speedup, const char* bound)
{
    proto::EvalResult r;
    r.status = proto::EvalStatus::Ok;
    r.timing.emplace();
    r.timing->stats.medianNs = 120000.0;
    r.timing->stats.cv = 0.01;
    r.timing->speedup = speedup;
    r.roofline.emplace();
    r.roofline->intensity = 0.6;
    r.roofline->gflops = 3.1;
    r.roofline->fracBandwidth = 0.7;
    r.roofline->peakGbps = 20.0;
    r.roofline->peakGflops = 200.0;
    r.diagnosis = proto::Diagnosis { bound, "70% of peak bandwidth", false, nlohmann::json::object() };
    r.environment.emplace();
    r.environment->device = "cpu: test host";
    return r;
}

views::NodeInfo node(qint64 id, qint64 parent, const char* origin)
{
    views::NodeInfo n;
    n.id = id;
    n.parent = parent;
    n.seq = id;
    n.origin = QString::fromLatin1(origin);
    if (id > 0) {
        n.sourceName = QStringLiteral("softmax_%1.cpp").arg(id);
        n.sourceHash = QStringLiteral("hash%1").arg(id);
    }
    return n;
}

} // namespace

class TestViewsKnowledge : public QObject {
    Q_OBJECT

private slots:
    void init();
    void cleanup();

    void importReportsEachFileAndKeepsTheGoodOnes();
    void badFileIsReportedByName_data();
    void badFileIsReportedByName();
    void defaultKindForUntaggedFiles();
    void droppedFileIsImported();
    void searchFindsAKnownTerm();
    void previewShowsTheDocumentsChunks();
    void retagMakesANewVersion();
    void removeAsksAndUpdatesTheModel();

    void hitsPanelShowsRecordedHits();
    void hitsPanelSuggestsForANodeWithoutHits();
    void hitsPanelEmptyStates();
    void highlightBoldsMatchedWords();

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<knowledge::KnowledgeBase> m_kb;
    std::unique_ptr<app::KbAccess> m_access;
    std::unique_ptr<KbCurator> m_curator;
    std::unique_ptr<QAbstractItemModelTester> m_docTester;
    std::unique_ptr<QAbstractItemModelTester> m_searchTester;

    void importTwo();
};

void TestViewsKnowledge::init()
{
    m_dir = std::make_unique<QTemporaryDir>();
    QVERIFY(m_dir->isValid());
    m_kb = std::make_unique<knowledge::KnowledgeBase>(m_dir->filePath(QStringLiteral("kb.db")).toStdString());
    m_access = std::make_unique<app::KbAccess>(*m_kb);
    m_curator = std::make_unique<KbCurator>(m_access.get());
    m_docTester = std::make_unique<QAbstractItemModelTester>(
        m_curator->documentsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    m_searchTester = std::make_unique<QAbstractItemModelTester>(
        m_curator->searchModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
}

void TestViewsKnowledge::cleanup()
{
    m_searchTester.reset();
    m_docTester.reset();
    m_curator.reset();
    m_access.reset();
    m_kb.reset();
    m_dir.reset();
}

void TestViewsKnowledge::importTwo()
{
    const auto out = m_curator->importFiles(
        { corpus("row-normalization-kernels.md"), corpus("memory-bound-playbook.md") });
    QCOMPARE(out.size(), size_t(2));
    QCOMPARE(out[0].status, KbImportOutcome::Status::Added);
    QCOMPARE(out[1].status, KbImportOutcome::Status::Added);
}

void TestViewsKnowledge::importReportsEachFileAndKeepsTheGoodOnes()
{
    const QString blob = m_dir->filePath(QStringLiteral("blob.md"));
    writeFile(blob,
        QByteArray("\x7f"
                   "ELF\x02\x01\x01\0\0\0\0",
            12));
    QSignalSpy changed(m_curator.get(), &KbCurator::knowledgeChanged);

    const auto out = m_curator->importFiles(
        { corpus("row-normalization-kernels.md"), blob, corpus("memory-bound-playbook.md") });
    QCOMPARE(out.size(), size_t(3));
    QCOMPARE(out[0].status, KbImportOutcome::Status::Added);
    QCOMPARE(out[0].uid, QStringLiteral("row-normalization-kernels"));
    QVERIFY(out[0].chunks >= 5);
    QCOMPARE(out[1].status, KbImportOutcome::Status::Error);
    QVERIFY2(out[1].message.startsWith(blob), qPrintable(out[1].message));
    QVERIFY2(out[1].message.contains(QStringLiteral("binary")), qPrintable(out[1].message));
    QCOMPARE(out[2].status, KbImportOutcome::Status::Added);
    QCOMPARE(changed.count(), 1);

    const QString status = m_curator->statusText();
    QVERIFY2(status.contains(QStringLiteral("2 added")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("1 error")), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("error: ") + blob), qPrintable(status));
    QVERIFY2(status.contains(QStringLiteral("added: memory-bound-playbook")), qPrintable(status));

    KbDocumentsModel* docs = m_curator->documentsModel();
    QCOMPARE(docs->rowCount(), 2);
    const int row = docs->rowOf(QStringLiteral("row-normalization-kernels"));
    QVERIFY(row >= 0);
    QCOMPARE(docs->index(row, KbDocumentsModel::Title).data().toString(),
        QStringLiteral("Softmax, layernorm and RMSNorm kernels"));
    QCOMPARE(docs->index(row, KbDocumentsModel::Kind).data().toString(), QStringLiteral("guidance"));
    QVERIFY(docs->index(row, KbDocumentsModel::Tags).data().toString().contains(QStringLiteral("softmax")));
    QCOMPARE(docs->index(row, KbDocumentsModel::Chunks).data().toInt(), out[0].chunks);
    QCOMPARE(
        docs->index(row, KbDocumentsModel::Source).data().toString(), corpus("row-normalization-kernels.md"));
    QVERIFY(!docs->index(row, KbDocumentsModel::Added).data().toString().isEmpty());

    // The same files again: unchanged, nothing written, nothing lost.
    const auto again = m_curator->importFiles({ corpus("memory-bound-playbook.md") });
    QCOMPARE(again[0].status, KbImportOutcome::Status::Unchanged);
    QCOMPARE(docs->rowCount(), 2);
    QCOMPARE(changed.count(), 1);
}

void TestViewsKnowledge::badFileIsReportedByName_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    QTest::addRow("binary") << "data.md" << QByteArray("# T\n\0\0\x01", 7) << "looks binary";
    QTest::addRow("empty") << "empty.md" << QByteArray() << "no category";
    QTest::addRow("missing") << "" << QByteArray() << "no such file";
    QTest::addRow("not utf-8") << "latin.txt" << QByteArray("caf\xe9 au lait\n") << "not valid UTF-8";
    QTest::addRow("unknown format") << "notes.docx" << QByteArray("PK\x03\x04") << "unknown format";
}

void TestViewsKnowledge::badFileIsReportedByName()
{
    QFETCH(QString, name);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    importTwo();
    QString path = m_dir->filePath(name.isEmpty() ? QStringLiteral("does-not-exist.md") : name);
    if (!name.isEmpty())
        writeFile(path, bytes);

    const auto out = m_curator->importFiles({ path });
    QCOMPARE(out.size(), size_t(1));
    QCOMPARE(out[0].status, KbImportOutcome::Status::Error);
    QVERIFY2(out[0].message.startsWith(path), qPrintable(out[0].message));
    QVERIFY2(out[0].message.contains(expected), qPrintable(out[0].message));
    QVERIFY2(m_curator->statusText().contains(expected), qPrintable(m_curator->statusText()));
    // The stored documents are all still there.
    QCOMPARE(m_curator->documentsModel()->rowCount(), 2);
    QCOMPARE(m_kb->documents().size(), size_t(2));
}

void TestViewsKnowledge::defaultKindForUntaggedFiles()
{
    const QString notes = m_dir->filePath(QStringLiteral("vector-notes.md"));
    writeFile(notes, "# Vector notes\n\n## Gathers\n\nAVX2 gathers are slow; prefer contiguous loads.\n");
    auto out = m_curator->importFiles({ notes });
    QCOMPARE(out[0].status, KbImportOutcome::Status::Error);
    QVERIFY2(out[0].message.contains(QStringLiteral("no category")), qPrintable(out[0].message));

    m_curator->setDefaultKind(QStringLiteral("hardware"));
    out = m_curator->importFiles({ notes, corpus("memory-bound-playbook.md") });
    QCOMPARE(out[0].status, KbImportOutcome::Status::Added);
    QCOMPARE(m_kb->document("vector-notes")->category, knowledge::Category::Hardware);
    // A file that names its kind keeps it.
    QCOMPARE(m_kb->document("memory-bound-playbook")->category, knowledge::Category::Guidance);
}

void TestViewsKnowledge::droppedFileIsImported()
{
    importTwo();
    QMimeData mime;
    mime.setUrls({ QUrl::fromLocalFile(corpus("cpu-memory-hierarchy.md")) });
    QDragEnterEvent enter(QPoint(5, 5), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_curator.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(5, 5), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_curator.get(), &drop);
    QVERIFY(drop.isAccepted());

    QCOMPARE(m_curator->documentsModel()->rowCount(), 3);
    QVERIFY(m_curator->documentsModel()->rowOf(QStringLiteral("cpu-memory-hierarchy")) >= 0);
    QVERIFY2(m_curator->statusText().contains(QStringLiteral("added: cpu-memory-hierarchy")),
        qPrintable(m_curator->statusText()));
    // The dropped document is selected and previewed.
    QVERIFY2(
        m_curator->previewText().contains(QStringLiteral("> NUMA\n")), qPrintable(m_curator->previewText()));

    // A drag with no local file is refused.
    QMimeData web;
    web.setUrls({ QUrl(QStringLiteral("https://example.com/doc.md")) });
    QDragEnterEvent remote(QPoint(5, 5), Qt::CopyAction, &web, Qt::LeftButton, Qt::NoModifier);
    remote.setAccepted(false);
    QApplication::sendEvent(m_curator.get(), &remote);
    QVERIFY(!remote.isAccepted());
}

void TestViewsKnowledge::searchFindsAKnownTerm()
{
    importTwo();
    m_curator->search(QStringLiteral("online running maximum"));
    KnowledgeHitsModel* results = m_curator->searchModel();
    QVERIFY(results->rowCount() > 0);
    const auto* first = results->hit(0);
    QCOMPARE(first->title, QStringLiteral("Softmax, layernorm and RMSNorm kernels"));
    QCOMPARE(first->section, QStringLiteral("Softmax, layernorm and RMSNorm kernels > Online softmax"));
    QVERIFY(first->score > 0);
    const QString html
        = results->index(0, KnowledgeHitsModel::Snippet).data(KnowledgeHitsModel::SnippetHtmlRole).toString();
    QVERIFY2(html.contains(QStringLiteral("<b>maximum</b>")), qPrintable(html));
    QVERIFY(
        results->index(0, KnowledgeHitsModel::Why).data().toString().contains(QStringLiteral("matched:")));
    QVERIFY(m_curator->statusText().contains(QStringLiteral("hit(s)")));

    m_curator->search(QStringLiteral("zymurgy"));
    QCOMPARE(results->rowCount(), 0);
    QVERIFY(m_curator->statusText().contains(QStringLiteral("No document matches")));
}

void TestViewsKnowledge::previewShowsTheDocumentsChunks()
{
    importTwo();
    QVERIFY(m_curator->selectDocument(QStringLiteral("memory-bound-playbook")));
    const QString text = m_curator->previewText();
    QVERIFY2(text.startsWith(QStringLiteral("Playbook for memory-bound kernels")), qPrintable(text.left(80)));
    for (const char* h : { "First, count the bytes", "Remove extra passes", "Reduce the bytes" })
        QVERIFY2(
            text.contains(QStringLiteral("## Playbook for memory-bound kernels > ") + QString::fromLatin1(h)),
            h);
    QVERIFY(text.contains(QStringLiteral("Welford")));
    QVERIFY(!m_curator->selectDocument(QStringLiteral("no-such-document")));
}

void TestViewsKnowledge::retagMakesANewVersion()
{
    importTwo();
    const auto before = *m_kb->document("memory-bound-playbook");
    views::KbTags tags;
    tags.platform = QStringLiteral("cuda");
    tags.arch = QStringList { QStringLiteral("H100") };
    tags.family = QStringList { QStringLiteral("softmax"), QStringLiteral("gemm") };
    QSignalSpy changed(m_curator.get(), &KbCurator::knowledgeChanged);
    QString error;
    QVERIFY2(m_curator->retag(QStringLiteral("memory-bound-playbook"), tags, &error), qPrintable(error));
    QCOMPARE(changed.count(), 1);

    const auto after = *m_kb->document("memory-bound-playbook");
    QCOMPARE(after.version, before.version + 1);
    QCOMPARE(after.chunks, before.chunks);
    QCOMPARE(after.contentHash, before.contentHash); // the same text
    QCOMPARE(after.tags.platform, std::string("cuda"));
    QCOMPARE(after.tags.arch, std::vector<std::string>({ "sm_90" }));
    QCOMPARE(m_kb->history("memory-bound-playbook").size(), size_t(2));
    KbDocumentsModel* docs = m_curator->documentsModel();
    const QString shown
        = docs->index(docs->rowOf(QStringLiteral("memory-bound-playbook")), KbDocumentsModel::Tags)
              .data()
              .toString();
    QVERIFY2(
        shown.contains(QStringLiteral("sm_90")) && shown.contains(QStringLiteral("gemm")), qPrintable(shown));
    // The new tags filter retrieval: a CPU query no longer sees the document.
    knowledge::SearchFilter cpu;
    cpu.platform = "cpu";
    for (const auto& h : m_kb->search("bytes in flight", cpu, 10))
        QVERIFY(h.uid != "memory-bound-playbook");

    tags.platform = QStringLiteral("gpu");
    QVERIFY(!m_curator->retag(QStringLiteral("memory-bound-playbook"), tags, &error));
    QVERIFY2(error.contains(QStringLiteral("platform 'gpu'")), qPrintable(error));
    QVERIFY(!m_curator->retag(QStringLiteral("nothing-here"), {}, &error));
    QVERIFY2(error.contains(QStringLiteral("nothing-here")), qPrintable(error));
    QCOMPARE(m_kb->document("memory-bound-playbook")->version, after.version);
}

void TestViewsKnowledge::removeAsksAndUpdatesTheModel()
{
    importTwo();
    KbDocumentsModel* docs = m_curator->documentsModel();
    QString asked;
    m_curator->setConfirm([&](QString question) {
        asked = question;
        return false;
    });
    QVERIFY(!m_curator->removeDocument(QStringLiteral("memory-bound-playbook")));
    QVERIFY2(asked.contains(QStringLiteral("Playbook for memory-bound kernels")), qPrintable(asked));
    QCOMPARE(docs->rowCount(), 2);

    m_curator->setConfirm([](QString) { return true; });
    QSignalSpy reset(docs, &QAbstractItemModel::modelReset);
    QVERIFY(m_curator->removeDocument(QStringLiteral("memory-bound-playbook")));
    QCOMPARE(reset.count(), 1);
    QCOMPARE(docs->rowCount(), 1);
    QCOMPARE(docs->rowOf(QStringLiteral("memory-bound-playbook")), -1);
    QVERIFY(!m_kb->document("memory-bound-playbook"));
    m_curator->search(QStringLiteral("bytes in flight"));
    for (const auto& r : m_curator->searchModel()->rows())
        QVERIFY(r.uid != QStringLiteral("memory-bound-playbook"));
    QVERIFY(!m_curator->removeDocument(QStringLiteral("memory-bound-playbook")));
}

// ---- hits panel ---------------------------------------------------------------------------

namespace {

/// A softmax session on the CPU: root, baseline seed (memory bound), a child, a failed child.
void fillSession(views::SessionData& data)
{
    data.setSession(7, QStringLiteral("softmax"),
        QStringLiteral(HONE_SOURCE_DIR "/resources/problems/cpu/softmax"), QStringLiteral("cpu"));
    views::SessionData::Batch b;
    b.nodes.push_back(node(0, -1, "root"));
    b.nodes.push_back(node(1, 0, "seed"));
    b.nodes.push_back(node(2, 1, "mutation"));
    b.nodes.push_back(node(3, 1, "mutation"));
    views::applyResult(b.nodes[1], okResult(1.0, "memory"));
    views::applyResult(b.nodes[2], okResult(1.6, "memory"));
    b.nodes[3].failureKind = QStringLiteral("compile_error");
    b.nodes[3].failureMessage = QStringLiteral(
        "softmax_3.o: undefined reference to `hone_run'; collect2: error: ld returned 1 exit status");
    views::applyResult(b.nodes[3], proto::EvalResult::failed("", proto::FailureKind::CompileError, "", ""));
    data.apply(b);
}

} // namespace

void TestViewsKnowledge::hitsPanelShowsRecordedHits()
{
    importTwo();
    m_curator->importFiles({ corpus("cpu-memory-hierarchy.md"), corpus("cuda-coalescing.md") });
    views::SessionData data;
    views::Selection selection;
    fillSession(data);

    // What the LLM synthesizer recorded for node 2 (app/kb_source.cpp).
    knowledge::RetrievalSignals s;
    s.family = "softmax";
    s.arch = "x86_64-avx2";
    s.platform = "cpu";
    s.bound = "memory";
    // The top two, and the CPU document's best chunk (the arch-tagged one) as the third.
    const auto pool = m_kb->retrieve(s, 8);
    std::vector<knowledge::Hit> hits(pool.begin(), pool.begin() + 2);
    for (const auto& h : pool)
        if (h.uid == "cpu-memory-hierarchy") {
            hits.push_back(h);
            break;
        }
    QCOMPARE(hits.size(), size_t(3));
    const std::string query = "family=softmax arch=x86_64-avx2 bound=memory";
    m_kb->recordHits(7, 2, hits, query);
    m_kb->recordOutcome(7, 2, true);

    KnowledgeHits panel(&data, &selection, m_access.get());
    QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.resize(900, 600);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    selection.setCurrent(2);

    QCOMPARE(panel.mode(), KnowledgeHits::Mode::Recorded);
    QVERIFY2(panel.heading().contains(QStringLiteral("Used by this candidate")), qPrintable(panel.heading()));
    KnowledgeHitsModel* model = panel.model();
    QCOMPARE(model->rowCount(), 3);
    for (int i = 0; i < 3; ++i) {
        const auto* r = model->hit(i);
        QCOMPARE(r->chunkId, qint64(hits[size_t(i)].chunkId));
        QCOMPARE(r->rank, i + 1);
        QCOMPARE(r->title, QString::fromStdString(hits[size_t(i)].title));
        QCOMPARE(r->section, QString::fromStdString(hits[size_t(i)].heading));
        QCOMPARE(r->score, hits[size_t(i)].score);
        // Why: the rank, the words FTS5 matched (as retrieval saw them), the tags, the query.
        QVERIFY2(r->why.startsWith(QStringLiteral("rank %1 of 3").arg(i + 1)), qPrintable(r->why));
        QStringList expectedTerms;
        for (const auto& t : hits[size_t(i)].matchedTerms)
            expectedTerms << QString::fromStdString(t);
        QCOMPARE(r->matchedTerms, expectedTerms);
        QVERIFY2(r->why.contains(QStringLiteral("matched: ") + expectedTerms.join(QStringLiteral(", "))),
            qPrintable(r->why));
        QVERIFY2(
            r->why.contains(QStringLiteral("query ") + QString::fromStdString(query)), qPrintable(r->why));
        QVERIFY2(r->why.contains(QStringLiteral("beat its parent")), qPrintable(r->why));
        if (!expectedTerms.isEmpty())
            QVERIFY2(r->snippetHtml.contains(QStringLiteral("<b>")), qPrintable(r->snippetHtml));
    }
    // The CPU document is tagged for the arch; the any-platform ones for the family.
    bool archTag = false, familyTag = false;
    for (const auto& r : model->rows()) {
        archTag |= r.why.contains(QStringLiteral("arch x86_64-avx2"));
        familyTag |= r.why.contains(QStringLiteral("family softmax"));
        QVERIFY(r.uid != QStringLiteral("cuda-coalescing")); // a CUDA document is never retrieved for a CPU
    }
    QVERIFY(familyTag);
    QVERIFY(archTag);

    // A double-click opens the whole chunk.
    auto* table = panel.findChild<QTableView*>();
    QVERIFY(table);
    const QRect cell = table->visualRect(model->index(1, KnowledgeHitsModel::Document));
    QVERIFY(cell.isValid());
    QSignalSpy dbl(table, &QAbstractItemView::doubleClicked);
    QVERIFY(panel.viewerText().isEmpty());
    // A click first: the view emits doubleClicked only for the index the press landed on.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    QCOMPARE(dbl.count(), 1);
    const auto chunk = m_kb->chunk(hits[1].chunkId);
    QVERIFY(chunk);
    const QString firstLine = QString::fromStdString(chunk->body).section(QLatin1Char('\n'), 0, 0);
    QTRY_VERIFY2(panel.viewerText().contains(firstLine), qPrintable(panel.viewerText().left(200)));
    QVERIFY(panel.viewerText().contains(QString::fromStdString(hits[1].title)));
}

void TestViewsKnowledge::hitsPanelSuggestsForANodeWithoutHits()
{
    importTwo();
    m_curator->importFiles({ corpus("cpu-memory-hierarchy.md"), corpus("compile-errors.md") });
    views::SessionData data;
    views::Selection selection;
    fillSession(data);
    m_kb->recordHits(
        7, 2, m_kb->retrieve({ "softmax", "x86_64", "cpu", "memory", {}, {}, {}, {} }, 2), "family=softmax");

    KnowledgeHits panel(&data, &selection, m_access.get());
    QAbstractItemModelTester tester(panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    selection.setCurrent(1); // the baseline: the knob synthesizer, no recorded hits

    QCOMPARE(panel.mode(), KnowledgeHits::Mode::Suggested);
    QVERIFY2(
        panel.heading().contains(QStringLiteral("Suggested for this diagnosis (not used by this candidate)")),
        qPrintable(panel.heading()));
    const knowledge::RetrievalSignals s = knowledge::retrievalSignals(panel.retrievalFor(*data.node(1)));
    QCOMPARE(s.family, std::string("softmax")); // from problem.toml
    QCOMPARE(s.bound, std::string("memory"));
    QCOMPARE(s.platform, std::string("cpu"));
    QVERIFY2(s.arch.rfind("x86_64", 0) == 0, s.arch.c_str());
    const auto expected = m_kb->retrieve(s, 5);
    QVERIFY(!expected.empty());
    QCOMPARE(panel.model()->rowCount(), int(expected.size()));
    for (int i = 0; i < panel.model()->rowCount(); ++i) {
        QCOMPARE(panel.model()->hit(i)->chunkId, qint64(expected[size_t(i)].chunkId));
        QVERIFY(panel.model()->hit(i)->why.contains(QStringLiteral("matched: ")));
        QVERIFY(panel.model()->hit(i)->why.contains(QStringLiteral("category ")));
    }
    QVERIFY2(panel.heading().contains(QStringLiteral("node 1 has no recorded hits"))
            && panel.heading().contains(QStringLiteral("family=softmax")),
        qPrintable(panel.heading()));
    bool familyTag = false;
    for (const auto& r : panel.model()->rows())
        familyTag |= r.why.contains(QStringLiteral("tags: family softmax"));
    QVERIFY(familyTag);

    // The node's outcome changes (now compute bound): the suggestions follow.
    views::NodeInfo updated = *data.node(1);
    updated.bound = QStringLiteral("compute");
    if (!updated.result)
        updated.result.emplace();
    updated.result->diagnosis = proto::Diagnosis { "compute", "", false, {} };
    QSignalSpy resetRows(panel.model(), &QAbstractItemModel::modelReset);
    data.apply({ { updated }, {} });
    QCOMPARE(resetRows.count(), 1);
    QCOMPARE(panel.retrievalFor(*data.node(1)).bound, std::string("compute"));
    const auto computeHits = m_kb->retrieve(knowledge::retrievalSignals(panel.retrievalFor(*data.node(1))), 5);
    QCOMPARE(panel.model()->rowCount(), int(computeHits.size()));
    // A change that leaves the node's outcome alone (its subtree's visits) re-reads nothing.
    views::NodeInfo child = node(4, 1, "mutation");
    views::applyResult(child, okResult(1.2, "memory"));
    data.apply({ { child }, {} });
    QCOMPARE(resetRows.count(), 1);

    // The failed candidate: its compile error feeds the query, and the compile-error guide leads.
    selection.setCurrent(3);
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::Suggested);
    const knowledge::RetrievalSignals f = knowledge::retrievalSignals(panel.retrievalFor(*data.node(3)));
    QVERIFY(f.compileError.find("undefined reference") != std::string::npos);
    QVERIFY(panel.model()->rowCount() > 0);
    bool compileGuide = false;
    for (const auto& r : panel.model()->rows())
        compileGuide |= r.uid == QStringLiteral("compile-errors");
    QVERIFY(compileGuide);

    // Node 2 has recorded hits: they are shown instead.
    selection.setCurrent(2);
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::Recorded);
    QCOMPARE(panel.model()->rowCount(), 2);
}

void TestViewsKnowledge::hitsPanelEmptyStates()
{
    views::SessionData data;
    views::Selection selection;
    fillSession(data);
    {
        KnowledgeHits none(&data, &selection, nullptr);
        selection.setCurrent(1);
        QCOMPARE(none.mode(), KnowledgeHits::Mode::NoKnowledgeBase);
        QVERIFY2(none.emptyReason().contains(QStringLiteral("--kb")), qPrintable(none.emptyReason()));
        QCOMPARE(none.model()->rowCount(), 0);
    }
    selection.setCurrent(-1);
    KnowledgeHits panel(&data, &selection, m_access.get());
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::NoSelection);
    QVERIFY(panel.emptyReason().contains(QStringLiteral("Select a candidate")));

    selection.setCurrent(1); // an empty knowledge base
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::NoHits);
    QVERIFY2(
        panel.emptyReason().contains(QStringLiteral("holds no documents")), qPrintable(panel.emptyReason()));

    // Only a CUDA document: nothing applies to a CPU softmax.
    m_curator->importFiles({ corpus("hopper-tensor-cores.md") });
    panel.refresh();
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::NoHits);
    QVERIFY2(
        panel.emptyReason().contains(QStringLiteral("no recorded hits")), qPrintable(panel.emptyReason()));
    QVERIFY(panel.emptyReason().contains(QStringLiteral("family=softmax")));

    // The curator's changes reach the panel.
    connect(m_curator.get(), &KbCurator::knowledgeChanged, &panel, &KnowledgeHits::refresh);
    m_curator->importFiles({ corpus("row-normalization-kernels.md") });
    QCOMPARE(panel.mode(), KnowledgeHits::Mode::Suggested);
    QVERIFY(panel.model()->rowCount() > 0);
    QCOMPARE(panel.emptyReason(), QString());
}

void TestViewsKnowledge::highlightBoldsMatchedWords()
{
    const QString text = QStringLiteral("Coalesced loads <fast> make bandwidth; uncoalesced ones waste it.");
    const QString html
        = views::highlightTerms(text, { QStringLiteral("coalesc"), QStringLiteral("bandwidth") });
    QCOMPARE(html,
        QStringLiteral(
            "<b>Coalesced</b> loads &lt;fast&gt; make <b>bandwidth</b>; uncoalesced ones waste it."));
    // A window around the first match, cut at words.
    QString longText;
    for (int i = 0; i < 60; ++i)
        longText += QStringLiteral("filler%1 ").arg(i);
    longText += QStringLiteral("occupancy matters here");
    const QString win = views::highlightTerms(longText, { QStringLiteral("occupancy") }, 80);
    QVERIFY2(win.startsWith(QStringLiteral("…")), qPrintable(win));
    QVERIFY2(win.contains(QStringLiteral("<b>occupancy</b> matters here")), qPrintable(win));
    QVERIFY(win.size() < 120);
}

QTEST_MAIN(TestViewsKnowledge)
#include "tst_views_knowledge.moc"
