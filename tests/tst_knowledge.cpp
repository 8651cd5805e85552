// The knowledge base: ingestion of every format, chunking, duplicates, updates and history,
// hits and outcomes, bundles, the schema next to the session store, and the `hone kb` CLI.

#include "core/problem_spec.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/skills.h"

#include "tests/hone_cli.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace hone::knowledge;
namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path& p, const std::string& text)
{
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

std::string escapePdf(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (c == '(' || c == ')' || c == '\\')
            out += '\\';
        out += c;
    }
    return out;
}

/// A minimal valid PDF written by hand: one Helvetica text object per page (the first line
/// large, as a heading), objects numbered in order, and an xref table with exact offsets.
std::string makePdf(const std::vector<std::vector<std::string>>& pages, const std::string& title)
{
    std::vector<std::string> objs;
    objs.push_back("<< /Type /Catalog /Pages 2 0 R >>");
    std::string kids;
    for (size_t i = 0; i < pages.size(); ++i)
        kids += std::to_string(5 + 2 * i) + " 0 R ";
    objs.push_back("<< /Type /Pages /Kids [ " + kids + "] /Count " + std::to_string(pages.size()) + " >>");
    objs.push_back("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    objs.push_back("<< /Title (" + escapePdf(title) + ") >>");
    for (size_t i = 0; i < pages.size(); ++i) {
        std::string content = "BT\n/F1 18 Tf\n72 720 Td\n(" + escapePdf(pages[i][0]) + ") Tj\n/F1 11 Tf\n";
        for (size_t l = 1; l < pages[i].size(); ++l)
            content += "0 -22 Td\n(" + escapePdf(pages[i][l]) + ") Tj\n";
        content += "ET";
        objs.push_back(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            "/Contents "
            + std::to_string(6 + 2 * i) + " 0 R >>");
        objs.push_back(
            "<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "\nendstream");
    }
    std::string pdf = "%PDF-1.4\n";
    std::vector<size_t> offsets;
    for (size_t k = 0; k < objs.size(); ++k) {
        offsets.push_back(pdf.size());
        pdf += std::to_string(k + 1) + " 0 obj\n" + objs[k] + "\nendobj\n";
    }
    size_t xref = pdf.size();
    pdf += "xref\n0 " + std::to_string(objs.size() + 1) + "\n0000000000 65535 f \n";
    for (size_t o : offsets) {
        char entry[32];
        std::snprintf(entry, sizeof entry, "%010zu 00000 n \n", o);
        pdf += entry;
    }
    pdf += "trailer\n<< /Size " + std::to_string(objs.size() + 1) + " /Root 1 0 R /Info 4 0 R >>\nstartxref\n"
        + std::to_string(xref) + "\n%%EOF\n";
    return pdf;
}

SourceDocument markdownDoc(const std::string& uid, const std::string& body)
{
    SourceDocument d = parseMarkdown(body, uid + ".md");
    d.uid = uid;
    d.category = Category::Guidance;
    d.categorySet = true;
    return d;
}

using CliResult = HoneRun;

CliResult runHone(const QStringList& args) { return runHoneCli(args, 60000); }

QStringList withKb(const fs::path& kb, QStringList args)
{
    return QStringList { "--store", QString::fromStdString(kb.string()) } + args;
}

} // namespace

class TestKnowledge : public QObject {
    Q_OBJECT
private slots:
    void markdownKeepsFrontMatterAndHeadingPaths()
    {
        std::string md
            = "---\nid: banks\ncategory: hardware\nplatform: cuda\narch: H100, sm_90a\nfamily: [transpose, "
              "gemm]\nsource: CUDA guide\nversion: 12.4\n---\n"
              "# Shared memory\n\nIntro text.\n\n## Banks\n\nThirty-two banks.\n\n### Padding\n\n"
              "```cpp\n# not a heading inside a fence\nfloat tile[32][33];\n```\n\n## Swizzle\n\nXOR it.\n";
        SourceDocument d = parseMarkdown(md, "notes/banks.md");
        QCOMPARE(d.uid, std::string("banks"));
        QCOMPARE(d.title, std::string("Shared memory"));
        QVERIFY(d.categorySet);
        QCOMPARE(d.category, Category::Hardware);
        QCOMPARE(d.tags.platform, std::string("cuda"));
        QCOMPARE(d.tags.arch, (std::vector<std::string> { "h100", "sm_90a" }));
        QCOMPARE(d.tags.family, (std::vector<std::string> { "transpose", "gemm" }));
        QCOMPARE(d.tags.version, std::string("12.4"));
        QCOMPARE(d.sections.size(), size_t(4));
        QCOMPARE(d.sections[0].heading, std::string("Shared memory")); // text before the first "##"
        QCOMPARE(d.sections[1].heading, std::string("Banks"));
        QCOMPARE(d.sections[2].heading, std::string("Banks > Padding"));
        QVERIFY(d.sections[2].text.find("# not a heading inside a fence") != std::string::npos);
        QCOMPARE(d.sections[3].heading, std::string("Swizzle"));
    }

    void markdownFrontMatterErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::addRow("unknown key")
            << "---\ncatgory: hardware\n---\n# T\ntext\n"
            << "x.md:2: unknown front-matter key 'catgory'; expected id, title, category";
        QTest::addRow("bad category")
            << "---\ncategory: tips\n---\ntext\n"
            << "x.md:2: category 'tips' is not known; expected one of correctness, guidance";
        QTest::addRow("not key value") << "---\njust words\n---\ntext\n"
                                       << "x.md:2: front-matter line 'just words' is not 'key: value'";
        QTest::addRow("unclosed")
            << "---\ncategory: guidance\n# Title\ntext\n"
            << "x.md:1: the front-matter opened by '---' is never closed; add a line '---'";
    }
    void markdownFrontMatterErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, message);
        try {
            parseMarkdown(text.toStdString(), "x.md");
            QFAIL("a malformed front-matter must be refused");
        } catch (const IngestError& e) {
            QVERIFY2(QString(e.what()).startsWith(message), e.what());
        }
    }

    void plainTextKeepsUnderlinedHeadings()
    {
        QTemporaryDir dir;
        fs::path p = fs::path(dir.path().toStdString()) / "notes.txt";
        writeFile(p,
            "Occupancy notes\n===============\n\nFirst paragraph about warps.\n\n"
            "Registers\n---------\n\n# 64K registers per SM, this hash is plain text.\n");
        IngestOverrides o;
        o.category = Category::Guidance;
        o.arch = { "hopper" };
        SourceDocument d = readDocument(p.string(), o);
        QCOMPARE(d.format, std::string("text"));
        QCOMPARE(d.title, std::string("Occupancy notes"));
        QCOMPARE(d.sections.size(), size_t(2));
        QCOMPARE(d.sections[0].heading, std::string("Occupancy notes"));
        QCOMPARE(d.sections[0].text, std::string("First paragraph about warps."));
        QCOMPARE(d.sections[1].heading, std::string("Registers"));
        QVERIFY(d.sections[1].text.rfind("# 64K registers", 0) == 0);
        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        AddResult r = kb.add(d);
        QCOMPARE(r.chunks, 2);
        auto info = kb.document("notes");
        QVERIFY(info.has_value());
        QCOMPARE(info->tags.arch, std::vector<std::string> { "sm_90" }); // canonical
        QCOMPARE(info->tags.platform, std::string("cuda")); // implied by the arch
        auto hits = kb.search("registers per SM", {}, 3);
        QVERIFY(!hits.empty());
        QCOMPARE(hits[0].heading, std::string("Registers"));
    }

    void htmlStripsTagsAndKeepsHeadings()
    {
        QTemporaryDir dir;
        fs::path p = fs::path(dir.path().toStdString()) / "page.html";
        writeFile(p,
            "<!DOCTYPE html><html><head><title>Coalescing &amp; vectors</title>"
            "<style>h2 { color: red; }</style><script>var secretToken = 1;</script></head><body>"
            "<h1>Coalescing &amp; vectors</h1><p>Warps read <b>contiguous</b> addresses&nbsp;only.</p>"
            "<!-- hidden comment --><h2 id=\"v\">Vector <em>loads</em></h2><p>Use 16&#8209;byte "
            "loads: x &lt; y &#x26; z.</p><ul><li>float4</li><li>int4</li></ul>"
            "<h3>Alignment</h3><pre>p % 16 == 0\n  indented</pre></body></html>");
        IngestOverrides o;
        o.category = Category::Guidance;
        SourceDocument d = readDocument(p.string(), o);
        QCOMPARE(d.format, std::string("html"));
        QCOMPARE(d.title, std::string("Coalescing & vectors"));
        QCOMPARE(d.sections.size(), size_t(3));
        QCOMPARE(d.sections[0].heading, std::string("Coalescing & vectors"));
        QCOMPARE(d.sections[0].text, std::string("Warps read contiguous addresses only."));
        QCOMPARE(d.sections[1].heading, std::string("Vector loads"));
        QVERIFY2(d.sections[1].text.find("16\u2011byte loads: x < y & z.") != std::string::npos,
            d.sections[1].text.c_str());
        QVERIFY(d.sections[1].text.find("- float4") != std::string::npos);
        QCOMPARE(d.sections[2].heading, std::string("Vector loads > Alignment"));
        QVERIFY(d.sections[2].text.find("  indented") != std::string::npos); // <pre> keeps its spaces
        for (const auto& s : d.sections) {
            QVERIFY(s.text.find("secretToken") == std::string::npos);
            QVERIFY(s.text.find("color") == std::string::npos);
            QVERIFY(s.text.find("hidden comment") == std::string::npos);
            QVERIFY(s.text.find('<') == std::string::npos || s.text.find("x < y") != std::string::npos);
        }
    }

    void pdfKeepsPageNumbers()
    {
        if (!pdfSupported())
            QSKIP("built without poppler-cpp");
        QTemporaryDir dir;
        fs::path p = fs::path(dir.path().toStdString()) / "banks.pdf";
        writeFile(p,
            makePdf({ { "Shared memory banks", "There are thirty-two banks of four bytes each.",
                          "A warp reading one column of a square tile conflicts." },
                        { "Padding the tile",
                            "Declaring the tile with one extra column shifts each row by one bank.",
                            "Swizzled layouts avoid the wasted column." } },
                "Bank notes"));
        std::vector<std::string> pages = readPdfPages(p.string());
        QCOMPARE(pages.size(), size_t(2));
        QVERIFY2(pages[0].find("thirty-two banks") != std::string::npos, pages[0].c_str());
        QVERIFY2(pages[1].find("extra column") != std::string::npos, pages[1].c_str());

        IngestOverrides o;
        o.category = Category::Hardware;
        o.platform = "cuda";
        SourceDocument d = readDocument(p.string(), o);
        QCOMPARE(d.format, std::string("pdf"));
        QCOMPARE(d.sections.size(), size_t(2));
        QCOMPARE(d.sections[0].page, 1);
        QCOMPARE(d.sections[0].heading, std::string("Shared memory banks (page 1)"));
        QCOMPARE(d.sections[1].page, 2);
        QCOMPARE(d.sections[1].heading, std::string("Padding the tile (page 2)"));

        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        kb.add(d);
        auto hits = kb.search("extra column shifts", {}, 1);
        QCOMPARE(hits.size(), size_t(1));
        QCOMPARE(hits[0].pageFirst, 2);
        QCOMPARE(hits[0].pageLast, 2);
        QVERIFY(hits[0].snippet.find("[extra]") != std::string::npos);
        auto chunks = kb.chunks(hits[0].docId);
        QCOMPARE(chunks.size(), size_t(2));
        QCOMPARE(chunks[0].pageFirst, 1);
        QVERIFY(chunks[0].body.find("thirty-two banks") != std::string::npos);
    }

    void unreadableFilesGetClearErrors_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("message");
        QTest::addRow("missing") << "absent.md" << QByteArray() << "absent.md: no such file; check the path";
        QTest::addRow("binary txt")
            << "blob.txt" << QByteArray("ab\0cd", 5)
            << "blob.txt: looks binary (NUL byte at offset 2), not plain text; check that the file";
        QTest::addRow("latin1 md")
            << "latin.md" << QByteArray("caf\xe9\n")
            << "latin.md: is not valid UTF-8 (first bad byte at offset 3); convert it first, e.g. iconv";
        QTest::addRow("unknown extension")
            << "notes.docx" << QByteArray("x")
            << "notes.docx: unknown format '.docx'; expected .md, .markdown, .txt, .html";
        QTest::addRow("empty") << "empty.md" << QByteArray("\n\n")
                               << "empty.md: no text found; add some text";
        QTest::addRow("truncated pdf")
            << "broken.pdf" << QByteArray("%PDF-1.4\n1 0 obj\n<< /Type /Cat") << "broken.pdf: ";
        QTest::addRow("pdf that is not one")
            << "fake.pdf" << QByteArray("hello") << "fake.pdf: is not a PDF (it does not start with %PDF-)";
    }
    void unreadableFilesGetClearErrors()
    {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(QString, message);
        QTemporaryDir dir;
        fs::path p = fs::path(dir.path().toStdString()) / name.toStdString();
        if (!content.isEmpty() || name == "empty.md")
            writeFile(p, content.toStdString());
        IngestOverrides o;
        o.category = Category::Guidance;
        try {
            readDocument(p.string(), o);
            QFAIL("the file must be refused");
        } catch (const IngestError& e) {
            QString what = QString::fromUtf8(e.what());
            QVERIFY2(
                what.startsWith(QString::fromStdString(p.string()).chopped(name.size()) + message), e.what());
            QVERIFY2(what.contains("; "), "the message says how to fix it");
        }
    }

    void missingCategoryIsAnError()
    {
        QTemporaryDir dir;
        fs::path p = fs::path(dir.path().toStdString()) / "plain.md";
        writeFile(p, "# Plain\n\ntext\n");
        try {
            readDocument(p.string());
            QFAIL("a document without a category must be refused");
        } catch (const IngestError& e) {
            QVERIFY(QString(e.what()).contains(
                "plain.md: no category; pass --category correctness|guidance|hardware|skill"));
        }
    }

    void longSectionsAreSplitWithinTheLimit()
    {
        std::string para = std::string(300, 'a') + " tail\n\n";
        std::string body;
        for (int i = 0; i < 10; ++i)
            body += para;
        std::vector<ChunkText> chunks = chunkSections(
            { { "Long", body, 0 }, { "Empty", "  \n", 0 }, { "Short", "s", 3 } }, ChunkOptions { 1000 });
        QCOMPARE(chunks.size(), size_t(5)); // 3110 characters in 4 parts, then "Short"
        for (size_t i = 0; i < 4; ++i) {
            QVERIFY(chunks[i].body.size() <= 1000);
            QCOMPARE(chunks[i].heading, "Long (part " + std::to_string(i + 1) + "/4)");
            QVERIFY(chunks[i].body.substr(chunks[i].body.size() - 4) == "tail"); // cut at paragraph ends
        }
        QCOMPARE(chunks[4].heading, std::string("Short"));
        QCOMPARE(chunks[4].pageFirst, 3);
    }

    void duplicatesUpdatesRemovalsKeepHistory()
    {
        QTemporaryDir dir;
        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        auto v1 = kb.add(markdownDoc("tiling", "# Tiling\n\n## Reuse\n\nBlocked matmul reuses tiles.\n"));
        QCOMPARE(v1.status, AddStatus::Added);
        QCOMPARE(v1.version, 1);
        QCOMPARE(
            kb.add(markdownDoc("tiling", "# Tiling\n\n## Reuse\n\nBlocked matmul reuses tiles.\n")).status,
            AddStatus::Unchanged);
        auto dup
            = kb.add(markdownDoc("tiling-copy", "# Tiling\n\n## Reuse\n\nBlocked matmul reuses tiles.\n"));
        QCOMPARE(dup.status, AddStatus::Duplicate);
        QCOMPARE(dup.note, std::string("tiling"));
        QVERIFY(!kb.document("tiling-copy").has_value());

        auto v2
            = kb.add(markdownDoc("tiling", "# Tiling\n\n## Reuse\n\nRegister blocking multiplies reuse.\n"));
        QCOMPARE(v2.status, AddStatus::Updated);
        QCOMPARE(v2.version, 2);
        QVERIFY(kb.search("matmul", {}, 5).empty()); // the old text is no longer retrieved ...
        auto old = kb.chunks(v1.docId); // ... but kept
        QCOMPARE(old.size(), size_t(1));
        QCOMPARE(old[0].body, std::string("Blocked matmul reuses tiles."));
        QCOMPARE(kb.search("register blocking", {}, 5).size(), size_t(1));
        QCOMPARE(kb.history("tiling").size(), size_t(2));
        QVERIFY(!kb.history("tiling")[0].live());

        QVERIFY(kb.remove("tiling"));
        QVERIFY(!kb.remove("tiling"));
        QVERIFY(kb.search("register blocking", {}, 5).empty());
        QVERIFY(!kb.document("tiling").has_value());
        QCOMPARE(kb.documents(true).size(), size_t(2));
        QVERIFY(kb.document("#" + std::to_string(v2.docId)).has_value()); // any version by id
        auto v3
            = kb.add(markdownDoc("tiling", "# Tiling\n\n## Reuse\n\nRegister blocking multiplies reuse.\n"));
        QCOMPARE(v3.status, AddStatus::Added);
        QCOMPARE(v3.version, 3);
    }

    void allOrNothing()
    {
        QTemporaryDir dir;
        KnowledgeBase kb(fs::path(dir.path().toStdString()) / "kb.db");
        kb.add(markdownDoc("keep", "# Keep\n\nstays.\n"));
        SourceDocument bad = markdownDoc("", "# No id\n\ntext\n"); // no usable id
        bad.uid = "///";
        try {
            kb.addAll({ markdownDoc("first", "# First\n\nwould be added.\n"), bad });
            QFAIL("a bad document must fail the whole batch");
        } catch (const IngestError& e) {
            QVERIFY(QString(e.what()).contains("no usable id"));
        }
        QCOMPARE(kb.documents().size(), size_t(1));
        QVERIFY(!kb.document("first").has_value());
    }

    void sharesTheStoreFileWithItsOwnSchemaVersion()
    {
        QTemporaryDir dir;
        fs::path path = fs::path(dir.path().toStdString()) / "hone.db";
        {
            hone::core::Store store(path);
            KnowledgeBase kb(path);
            QCOMPARE(kb.schemaVersion(), KnowledgeBase::kSchemaVersion);
            kb.add(markdownDoc("a", "# A\n\nwarp shuffle\n"));
            QCOMPARE(store.schemaVersion(), hone::core::Store::kSchemaVersion);
        }
        {
            KnowledgeBase kb(path); // reopened: no migration re-run, nothing lost
            QCOMPARE(kb.documents().size(), size_t(1));
            hone::core::Store store(path);
            QCOMPARE(store.schemaVersion(), hone::core::Store::kSchemaVersion);
        }
        sqlite3* db = nullptr;
        sqlite3_open(path.c_str(), &db);
        sqlite3_exec(
            db, "UPDATE kb_meta SET value = '7' WHERE key = 'schema_version'", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        try {
            KnowledgeBase kb(path);
            QFAIL("a newer knowledge schema must be refused");
        } catch (const KbError& e) {
            QVERIFY2(QString(e.what()).contains(
                         "knowledge base schema version 7 is newer than this hone understands (1); "
                         "upgrade hone"),
                e.what());
        }
    }

    void hitsAndOutcomeStatistics()
    {
        QTemporaryDir dir;
        fs::path path = fs::path(dir.path().toStdString()) / "hone.db";
        hone::core::Store store(path);
        KnowledgeBase kb(path);
        kb.add(markdownDoc("shuffles",
            "# Shuffles\n\n## Butterfly\n\nxor shuffle reduction\n\n## Block\n\nshared partials\n"));
        auto hits = kb.search("shuffle reduction partials", {}, 2);
        QCOMPARE(hits.size(), size_t(2));

        // A session: root 0, seed 1 (1.0x), children 2 (1.5x, beats 1) and 3 (0.8x, loses), 4 failed.
        auto spec = hone::core::loadProblem(std::string(HONE_TEST_DATA) + "/problems/scale");
        int64_t session
            = store.createSession(store.upsertProblem(spec), "cpu", "uct", 1, nlohmann::json::object());
        std::string h = store.putSource("cpp", "a.cpp", "int x;");
        store.insertNode(session, { 0, -1, 0, "", nlohmann::json::object(), "", "root", "restart", {} });
        for (int64_t n = 1; n <= 4; ++n)
            store.insertNode(session,
                { n, n == 1 ? 0 : 1, n, h, { { "A", std::to_string(n) } }, "", n == 1 ? "seed" : "mutation",
                    "inherit", {} });
        auto eval = [&](int64_t node, bool ok, double speedup) {
            hone::core::EvaluationRecord e;
            e.nodeId = node;
            e.cacheKey = "k" + std::to_string(node);
            e.status = ok ? "ok" : "failed";
            e.speedup = speedup;
            e.result = nlohmann::json::object();
            store.insertEvaluation(session, e);
        };
        eval(1, true, 1.0);
        eval(2, true, 1.5);
        eval(3, true, 0.8);
        eval(4, false, 0);
        kb.recordHits(session, 2, hits, "q");
        kb.recordHits(session, 3, hits, "q");
        kb.recordHits(session, 4, { hits[0] }, "q");
        kb.recordHits(session, 1, { hits[0] }, "q"); // a seed: its parent is the root, nothing to compare
        QCOMPARE(kb.hits(session, 2).size(), size_t(2));
        QCOMPARE(kb.hits(session, 2)[1].rank, 2);
        QVERIFY(!kb.hits(session, 2)[0].beatParent.has_value());
        QCOMPARE(kb.syncOutcomes(store, session), 5);
        QCOMPARE(*kb.hits(session, 2)[0].beatParent, true);
        QCOMPARE(*kb.hits(session, 4)[0].beatParent, false);
        ChunkStats first = kb.chunkStats(hits[0].chunkId);
        QCOMPARE(first.uses, 4);
        QCOMPARE(first.decided, 3);
        QCOMPARE(first.wins, 1);
        ChunkStats second = kb.chunkStats(hits[1].chunkId);
        QCOMPARE(second.uses, 2);
        QCOMPARE(second.wins, 1);
        QCOMPARE(second.decided, 2);
    }

    void bundleRoundTripIsLossless()
    {
        QTemporaryDir dir;
        fs::path root(dir.path().toStdString());
        KnowledgeBase a(root / "a.db");
        a.add(markdownDoc("vec", "# Vectors\n\n## Loads\n\nfloat4 loads\n\n## Tails\n\nscalar tail\n"));
        SourceDocument pdfLike = markdownDoc("paged", "# P\n\nx\n");
        pdfLike.sections
            = { { "Intro (page 1)", "first page words", 1 }, { "Details (page 2)", "second page words", 2 } };
        pdfLike.format = "pdf";
        a.add(pdfLike);
        Skill s;
        s.problem = "softmax";
        s.family = "softmax";
        s.arch = "x86_64-avx2";
        s.platform = "cpu";
        s.session = 4;
        s.baselineSource = "naive.cpp";
        s.bestSource = "tuned.cpp";
        s.bestKnobs = { { "VEC", "8" } };
        s.gain = 3.5;
        s.winners = { { "tuned.cpp", { { "VEC", "8" } }, 3.5 } };
        a.addSkill(s);
        nlohmann::json bundle = a.exportBundle();
        QCOMPARE(bundle["documents"].size(), size_t(3));

        KnowledgeBase b(root / "b.db");
        auto results = b.importBundle(bundle, "team.json");
        QCOMPARE(results.size(), size_t(3));
        for (const auto& r : results)
            QCOMPARE(r.status, AddStatus::Added);
        for (const auto& d : a.documents()) {
            auto other = b.document(d.uid);
            QVERIFY(other.has_value());
            QCOMPARE(other->contentHash, d.contentHash);
            QCOMPARE(other->category, d.category);
            QCOMPARE(other->tags.arch, d.tags.arch);
            auto ca = a.chunks(d.id), cb = b.chunks(other->id);
            QCOMPARE(ca.size(), cb.size());
            for (size_t i = 0; i < ca.size(); ++i) {
                QCOMPARE(cb[i].heading, ca[i].heading);
                QCOMPARE(cb[i].body, ca[i].body);
                QCOMPARE(cb[i].pageFirst, ca[i].pageFirst);
            }
        }
        auto skills = b.skills("softmax", "x86_64-avx512");
        QCOMPARE(skills.size(), size_t(1));
        QCOMPARE(skills[0].bestKnobs.at("VEC"), std::string("8"));
        QCOMPARE(b.importBundle(bundle, "team.json")[0].status, AddStatus::Unchanged);

        nlohmann::json damaged = bundle;
        damaged["documents"][1]["chunks"][0]["body"] = "edited";
        try {
            b.importBundle(damaged, "team.json");
            QFAIL("a damaged bundle must be refused");
        } catch (const IngestError& e) {
            QVERIFY2(QString(e.what()).contains("team.json: document 2 (")
                    && QString(e.what()).contains("content_hash"),
                e.what());
        }
        QCOMPARE(b.documents().size(), size_t(3));
        for (const auto& c : b.chunks(b.document(bundle["documents"][1]["uid"].get<std::string>())->id))
            QVERIFY(c.body != "edited");
    }

    /// `hone kb init` (issue 23): the bundled corpus into a fresh base, headless; a second run
    /// adds nothing. The corpus documents are then retrievable.
    void cliInitImportsTheBundledCorpus()
    {
        QTemporaryDir dir;
        const fs::path store = fs::path(dir.path().toStdString()) / "hone.db";
        int corpus = 0;
        for (const auto& e : fs::directory_iterator(fs::path(HONE_SOURCE_DIR) / "resources" / "knowledge"))
            corpus += e.path().extension() == ".md" ? 1 : 0;
        QVERIFY(corpus > 10);
        CliResult first = runHone(withKb(store, { "kb", "init" }));
        QVERIFY2(first.code == 0, qPrintable(first.err));
        QVERIFY2(first.out.contains(QString("%1 added, 0 updated, 0 unchanged").arg(corpus)), qPrintable(first.out));
        QVERIFY2(first.out.contains(QString("(%1 documents now)").arg(corpus)), qPrintable(first.out));
        {
            KnowledgeBase base(store);
            QCOMPARE(int(base.documents().size()), corpus);
            QVERIFY(!base.search("bank conflicts", {}, 3).empty());
        }
        CliResult again = runHone(withKb(store, { "kb", "init" }));
        QVERIFY2(again.code == 0, qPrintable(again.err));
        QVERIFY2(again.out.contains(QString("0 added, 0 updated, %1 unchanged").arg(corpus)), qPrintable(again.out));
    }

    void cliAddSearchListShowRemoveExportImport()
    {
        QTemporaryDir dir;
        fs::path root(dir.path().toStdString());
        fs::path store = root / "hone.db";
        writeFile(root / "docs" / "banks.md",
            "---\ncategory: hardware\nplatform: cuda\narch: sm_90\n---\n# Banks\n\n"
            "## Conflicts\n\nThirty-two banks of four bytes.\n");
        writeFile(root / "docs" / "sub" / "tips.txt", "Tips\n====\n\nPad the tile by one column.\n");
        CliResult add = runHone(withKb(store,
            { "kb", "add", QString::fromStdString((root / "docs").string()), "--category", "guidance" }));
        QVERIFY2(add.code == 0, qPrintable(add.err));
        QVERIFY2(add.out.contains("added     banks v1 (1 chunks)"), qPrintable(add.out));
        QVERIFY(add.out.contains("2 added, 0 updated, 0 unchanged, 0 duplicates; 2 chunks live"));

        CliResult search
            = runHone(withKb(store, { "kb", "search", "bank", "conflicts", "--arch", "sm_90", "-k", "1" }));
        QCOMPARE(search.code, 0);
        QVERIFY2(search.out.contains("banks > Conflicts  [guidance]"), qPrintable(search.out));
        QVERIFY(search.out.contains("matched: "));
        CliResult filtered
            = runHone(withKb(store, { "kb", "search", "bank", "conflicts", "--arch", "gfx942" }));
        QVERIFY2(!filtered.out.contains("banks > Conflicts"), qPrintable(filtered.out));

        CliResult list = runHone(withKb(store, { "kb", "list", "--json" }));
        QCOMPARE(list.code, 0);
        auto docs = nlohmann::json::parse(list.out.toStdString());
        QCOMPARE(docs.size(), size_t(2));

        fs::path bundle = root / "team.json";
        QCOMPARE(runHone(withKb(store, { "kb", "export", QString::fromStdString(bundle.string()) })).code, 0);
        QCOMPARE(runHone(withKb(store, { "kb", "rm", "tips" })).code, 0);
        CliResult show = runHone(withKb(store, { "kb", "show", "tips", "--history" }));
        QVERIFY2(show.out.contains("(removed)") && show.out.contains("retired"), qPrintable(show.out));
        CliResult rmAgain = runHone(withKb(store, { "kb", "rm", "tips" }));
        QCOMPARE(rmAgain.code, 3); // ExitCode::Input: no such document
        QVERIFY(rmAgain.err.contains("no live document 'tips'"));

        fs::path other = root / "other.db";
        CliResult imp = runHone({ "--store", QString::fromStdString(store.string()), "kb", "--kb",
            QString::fromStdString(other.string()), "import", QString::fromStdString(bundle.string()) });
        QVERIFY2(imp.code == 0, qPrintable(imp.err));
        QVERIFY(imp.out.contains("2 added, 0 updated, 0 unchanged, 0 duplicates"));
    }

    void foldersExpandToTheirDocumentsSorted()
    {
        QTemporaryDir tmp;
        const fs::path root = tmp.path().toStdString();
        writeFile(root / "b" / "z.md", "# z\n\nz.\n");
        writeFile(root / "b" / "deep" / "a.PDF", "%PDF");
        writeFile(root / "a.txt", "a\n");
        writeFile(root / "skip.docx", "x");
        const auto found = expandDocumentPath(root.string());
        QCOMPARE(found.size(), size_t(3));
        QCOMPARE(found[0], (root / "a.txt").string());
        QCOMPARE(found[1], (root / "b" / "deep" / "a.PDF").string());
        QCOMPARE(found[2], (root / "b" / "z.md").string());
        // A file is itself, whatever its extension (readDocument then says what is wrong).
        QCOMPARE(expandDocumentPath((root / "skip.docx").string()),
            std::vector<std::string> { (root / "skip.docx").string() });
        writeFile(root / "empty" / "notes.docx", "x");
        QVERIFY(expandDocumentPath((root / "empty").string()).empty());
    }

    void recordedQueryRoundTrips()
    {
        RetrievalSignals s;
        s.family = "softmax";
        s.arch = "sm_90";
        s.bound = "memory";
        const std::string q = recordedQuery(s, "wrong_result");
        QCOMPARE(q, std::string("family=softmax arch=sm_90 bound=memory failure=wrong_result"));
        const RetrievalSignals back = parseRecordedQuery(q);
        QCOMPARE(back.family, s.family);
        QCOMPARE(back.arch, s.arch);
        QCOMPARE(back.bound, s.bound);
        QCOMPARE(back.evidence, std::string("wrong_result"));
        QCOMPARE(recordedQuery(s, ""), std::string("family=softmax arch=sm_90 bound=memory"));
        const RetrievalSignals odd = parseRecordedQuery("  =x family=gemm junk novalue= bound=compute ");
        QCOMPARE(odd.family, std::string("gemm"));
        QCOMPARE(odd.bound, std::string("compute"));
        QVERIFY(odd.arch.empty());
    }

    void cliCorruptFileAddsNothing()
    {
        QTemporaryDir dir;
        fs::path root(dir.path().toStdString());
        fs::path store = root / "hone.db";
        writeFile(root / "good.md", "# Good\n\nfine text\n");
        QCOMPARE(runHone(withKb(store,
                             { "kb", "add", QString::fromStdString((root / "good.md").string()), "--category",
                                 "guidance" }))
                     .code,
            0);
        writeFile(root / "new.md", "# New\n\nnew text\n");
        writeFile(root / "bad.pdf", "%PDF-1.7\n% truncated in transfer\n1 0 obj\n<< /Type");
        CliResult r = runHone(withKb(store,
            { "kb", "add", QString::fromStdString((root / "new.md").string()),
                QString::fromStdString((root / "bad.pdf").string()), "--category", "hardware" }));
        QCOMPARE(r.code, 3); // ExitCode::Input
        QVERIFY2(
            r.err.contains(QString::fromStdString((root / "bad.pdf").string()) + ": "), qPrintable(r.err));
        QVERIFY2(r.err.contains("nothing was added"), qPrintable(r.err));
        auto docs
            = nlohmann::json::parse(runHone(withKb(store, { "kb", "list", "--json" })).out.toStdString());
        QCOMPARE(docs.size(), size_t(1));
        QCOMPARE(docs[0]["uid"].get<std::string>(), std::string("good"));
    }
};

QTEST_GUILESS_MAIN(TestKnowledge)
#include "tst_knowledge.moc"
