// Live move skills (docs/SEARCH.md, "Live move skills"): `hone run` learns its hybrid policy's
// move skill from the store's earlier sessions on the same arch, or takes the one of
// `--move-skill FILE`, says so, keeps it with the session, and the skill orders the moves.
// Real hone and hone-worker processes on the small `scale` CPU problem.

#include "core/store.h"

#include "tests/hone_cli.h"

#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <algorithm>
#include <map>

using namespace hone;

namespace {

using Cli = HoneRun;

Cli runHone(const QStringList& args) { return runHoneCli(args, 240000); }

/// One proposal as the store keeps it: source file, knobs, origin, parent.
struct Proposal {
    int64_t id = 0;
    int64_t parent = -1;
    std::string source;
    std::map<std::string, std::string> knobs;
    std::string origin;
    QString text() const
    {
        QString s = QString::fromStdString(source) + "[";
        for (const auto& [k, v] : knobs)
            s += QString::fromStdString(k + "=" + v + " ");
        return s + "] " + QString::fromStdString(origin);
    }
};

/// The session's nodes in proposal order, the root left out.
std::vector<Proposal> proposals(const QString& store, int64_t session)
{
    core::Store s(store.toStdString());
    auto nodes = s.nodes(session);
    std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    std::vector<Proposal> out;
    for (const auto& n : nodes) {
        if (n.id == 0)
            continue;
        Proposal p;
        p.id = n.id;
        p.parent = n.parentId;
        p.source = s.source(n.sourceHash)->name;
        for (const auto& [k, v] : n.knobs.items())
            p.knobs[k] = v.is_string() ? v.get<std::string>() : v.dump();
        p.origin = n.origin;
        out.push_back(std::move(p));
    }
    return out;
}

QString sequence(const std::vector<Proposal>& ps)
{
    QStringList l;
    for (const auto& p : ps)
        l << p.text();
    return l.join(QStringLiteral("; "));
}

/// The report's "move skill" line, or "".
QString skillLine(const QString& out)
{
    for (const QString& line : out.split('\n'))
        if (line.startsWith(QStringLiteral("move skill ")))
            return line;
    return {};
}

/// A store file with its WAL beside it: a copy of the store as the last process left it.
void copyStore(const QString& from, const QString& to)
{
    for (const char* ext : {"", "-wal", "-shm"})
        if (QFile::exists(from + ext))
            QVERIFY(QFile::copy(from + ext, to + ext));
}

} // namespace

class TestLiveSkills : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    QString m_base; // a store holding one recorded session (1) of `scale`
    QString m_cache;

    QString path(const QString& name) const { return m_tmp.filePath(name); }
    QStringList run(const QString& store, const QStringList& extra) const
    {
        return QStringList {"--store", store, "--cache-dir", m_cache} + extra
            + QStringList {"run", HONE_TEST_DATA "/problems/scale", "--seed", "3", "--no-reverify", "--no-warm-start"};
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        m_cache = qEnvironmentVariable("HONE_CACHE_DIR", m_tmp.filePath(QStringLiteral("cache")));
        m_base = path(QStringLiteral("base.db"));
        // The history: a uniform sample of the space (fixed by its seed), so one-knob pairs exist.
        const Cli first = runHone({"--store", m_base, "--cache-dir", m_cache, "run", HONE_TEST_DATA "/problems/scale",
            "--policy", "uniform", "--budget", "12", "--seed", "1", "--no-reverify", "--no-warm-start"});
        QVERIFY2(first.code == 0, qPrintable(first.err));
        QVERIFY2(skillLine(first.out).isEmpty(), qPrintable(first.out)); // uniform takes no skill
    }

    /// A second session in the same store learns its skill from the first: the report and
    /// `hone show` say how many moves and from which session; `--no-skills` loads none; with
    /// the same seed the two searches propose in another order; resume keeps the stored skill.
    void learntFromTheStoresHistory()
    {
        const QString with = path(QStringLiteral("with.db")), without = path(QStringLiteral("without.db"));
        copyStore(m_base, with);
        copyStore(m_base, without);

        const Cli a = runHone(run(with, {}) + QStringList {"--budget", "9"});
        QVERIFY2(a.code == 0, qPrintable(a.err));
        const QString line = skillLine(a.out);
        static const QRegularExpression learnt(
            QStringLiteral(R"(^move skill (\d+) moves \((\d+) kinds\) from this store's sessions 1 \(scale\), )"
                           R"(family elementwise on \S+ \(cpu: )"));
        const auto m = learnt.match(line);
        QVERIFY2(m.hasMatch(), qPrintable(a.out));
        QVERIFY2(m.captured(1).toInt() > 0 && m.captured(2).toInt() > 0, qPrintable(line));
        const Cli shown = runHone({"--store", with, "show", "2"});
        QCOMPARE(shown.code, 0);
        QVERIFY2(shown.out.contains(line.section(QStringLiteral("; strongest"), 0, 0)), qPrintable(shown.out));
        {
            core::Store s(with.toStdString());
            const auto cfg = s.session(2)->config;
            QVERIFY(cfg.contains("move_skill"));
            QCOMPARE(cfg["move_skill"]["skill"]["moves"].size(), static_cast<size_t>(m.captured(2).toInt()));
        }

        const Cli b = runHone(run(without, {"--no-skills"}) + QStringList {"--budget", "9"});
        QVERIFY2(b.code == 0, qPrintable(b.err));
        QVERIFY2(skillLine(b.out).isEmpty(), qPrintable(b.out));
        QVERIFY(!runHone({"--store", without, "show", "2"}).out.contains(QStringLiteral("move skill")));
        QVERIFY(!core::Store(without.toStdString()).session(2)->config.contains("move_skill"));

        // Same seed, same history, same cached results: the skill alone changes the proposals.
        const auto pa = proposals(with, 2), pb = proposals(without, 2);
        QCOMPARE(pa.size(), pb.size());
        QCOMPARE(pa.front().text(), pb.front().text()); // the baseline seed first in both
        QVERIFY2(sequence(pa) != sequence(pb), qPrintable(sequence(pa)));

        // Resume keeps the session's skill, not one learnt again (that would name session 2 too).
        const Cli r = runHone({"--store", with, "--cache-dir", m_cache, "resume", "2", "--extra-budget", "1"});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(skillLine(r.out).startsWith(line.section(QStringLiteral("; strongest"), 0, 0)), qPrintable(r.out));
    }

    /// Sessions of another machine teach nothing: a move that helped there may not help here.
    void otherMachinesAreNotLearntFrom()
    {
        const QString store = path(QStringLiteral("other.db"));
        copyStore(m_base, store);
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(store.toUtf8().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "UPDATE evaluations SET device = 'cpu: Another CPU (64 cores)'", nullptr, nullptr,
                     nullptr),
            SQLITE_OK);
        sqlite3_close(db);
        const Cli c = runHone(run(store, {}) + QStringList {"--budget", "3"});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY2(skillLine(c.out).startsWith(QStringLiteral("move skill none: no earlier session of this store")),
            qPrintable(c.out));
        QVERIFY(!core::Store(store.toStdString()).session(2)->config.contains("move_skill"));
    }

    /// `--move-skill FILE` takes precedence over the history, and orders the neighbours: a skill
    /// that says "UNROLL up and CHUNK up gain, every other move loses" makes every neighbour move,
    /// from a point that still had an unseen UNROLL-up or CHUNK-up neighbour, one of those moves.
    void fileSkillOrdersTheNeighbours()
    {
        const QString store = path(QStringLiteral("file.db"));
        copyStore(m_base, store);
        const QString skill = path(QStringLiteral("unroll-chunk-up.json"));
        nlohmann::json moves = nlohmann::json::array();
        for (const char* knob : {"UNROLL", "THREADS", "CHUNK"})
            for (int dir : {1, -1})
                moves.push_back({{"bound", "memory"}, {"knob", knob}, {"acts", ""}, {"direction", dir},
                    {"wins", std::string(knob) != "THREADS" && dir == 1 ? 1000 : 0}, {"trials", 1000}});
        {
            QFile f(skill);
            QVERIFY(f.open(QIODevice::WriteOnly));
            const nlohmann::json j = {{"kind", "move_skill"}, {"learnt_from", "tst_live_skills"}, {"moves", moves}};
            f.write(QByteArray::fromStdString(j.dump()));
        }
        const Cli c = runHone(run(store, {}) + QStringList {"--budget", "14", "--move-skill", skill});
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY2(skillLine(c.out).startsWith(
                     "move skill 6000 moves (6 kinds) from file " + skill + " (learnt from tst_live_skills)"),
            qPrintable(c.out));

        const auto ps = proposals(store, 2);
        const std::map<std::string, std::vector<std::string>> raising {
            {"UNROLL", {"1", "2", "4", "8"}}, {"CHUNK", {"1024", "4096", "16384"}}};
        std::map<int64_t, const Proposal*> byId;
        int checked = 0;
        for (size_t i = 0; i < ps.size(); ++i) {
            byId[ps[i].id] = &ps[i];
            if (ps[i].origin != "neighbour")
                continue;
            const Proposal& parent = *byId.at(ps[i].parent);
            // The parent's unseen admissible neighbours that raise UNROLL or CHUNK (to any later value).
            std::vector<std::map<std::string, std::string>> ups;
            for (const auto& [knob, values] : raising) {
                for (auto v = std::find(values.begin(), values.end(), parent.knobs.at(knob)) + 1; v < values.end(); ++v) {
                    auto target = parent.knobs;
                    target[knob] = *v;
                    const bool seen = std::any_of(ps.begin(), ps.begin() + static_cast<long>(i),
                        [&](const Proposal& p) { return p.knobs == target; });
                    if (!seen && std::stoi(target.at("UNROLL")) * std::stoi(target.at("THREADS")) <= 8)
                        ups.push_back(target);
                }
            }
            if (ups.empty())
                continue; // every move from here loses, says the skill: the model decides
            QVERIFY2(std::find(ups.begin(), ups.end(), ps[i].knobs) != ups.end(),
                qPrintable(ps[i].text() + " from " + parent.text() + " in " + sequence(ps)));
            ++checked;
        }
        QVERIFY2(checked > 0, qPrintable("no neighbour move to check in " + sequence(ps)));
    }

    /// A file that is not a move skill is refused before anything runs, naming the file and the
    /// field; so is one that cannot be read, and a skill with --no-skills.
    void badSkillFilesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QStringList>("expected");
        QTest::addRow("wins not a number")
            << QByteArray(R"({"kind":"move_skill","moves":[{"bound":"memory","knob":"UNROLL","acts":"",)"
                          R"("direction":1,"wins":"many","trials":4}]})")
            << QStringList {"moves[0].wins is not a number"};
        QTest::addRow("knob missing")
            << QByteArray(R"({"kind":"move_skill","moves":[{"bound":"memory","acts":"","direction":1,"wins":1,"trials":4}]})")
            << QStringList {"moves[0].knob is missing"};
        QTest::addRow("direction") << QByteArray(R"({"kind":"move_skill","moves":[{"bound":"","knob":"A","acts":"",)"
                                                 R"("direction":2,"wins":1,"trials":4}]})")
                                   << QStringList {"moves[0].direction is 2"};
        QTest::addRow("not a skill") << QByteArray(R"({"kind":"skill","winners":[]})")
                                     << QStringList {"not a move skill", "\"kind\": \"move_skill\""};
        QTest::addRow("not json") << QByteArray("{moves: [") << QStringList {"is not JSON"};
    }
    void badSkillFilesAreRefused()
    {
        QFETCH(QByteArray, content);
        QFETCH(QStringList, expected);
        const QString store = path(QStringLiteral("bad-%1.db").arg(QTest::currentDataTag()).replace(' ', '-'));
        copyStore(m_base, store);
        const QString file = path(QStringLiteral("bad.json"));
        QFile::remove(file);
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(content);
        }
        const Cli c = runHone(run(store, {}) + QStringList {"--budget", "4", "--move-skill", file});
        QCOMPARE(c.code, 3); // an invalid input file
        QVERIFY2(c.err.contains("--move-skill: " + file), qPrintable(c.err));
        for (const QString& e : expected)
            QVERIFY2(c.err.contains(e), qPrintable(c.err));
        QCOMPARE(core::Store(store.toStdString()).sessions().size(), static_cast<size_t>(1)); // nothing ran
    }
    void unreadableOrContradictorySkill()
    {
        const QString store = path(QStringLiteral("refused.db"));
        copyStore(m_base, store);
        const QString missing = path(QStringLiteral("missing.json"));
        const Cli c = runHone(run(store, {}) + QStringList {"--budget", "4", "--move-skill", missing});
        QCOMPARE(c.code, 3);
        QVERIFY2(c.err.contains("--move-skill: cannot read " + missing), qPrintable(c.err));
        const Cli d = runHone(run(store, {"--no-skills"}) + QStringList {"--budget", "4", "--move-skill", missing});
        QCOMPARE(d.code, 2);
        QVERIFY2(d.err.contains(QStringLiteral("--move-skill and --no-skills")), qPrintable(d.err));
        const Cli e = runHone(run(store, {}) + QStringList {"--budget", "4", "--policy", "uct", "--move-skill", missing});
        QCOMPARE(e.code, 2);
        QVERIFY2(e.err.contains(QStringLiteral("--policy hybrid")), qPrintable(e.err));
    }
};

QTEST_GUILESS_MAIN(TestLiveSkills)
#include "tst_live_skills.moc"
