#include "core/knobs.h"

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hone::core;

class TestKnobs : public QObject {
    Q_OBJECT
private slots:
    void parsesKnobsRequiresAndFlags()
    {
        const std::string src = "// hone:knob BLOCK = 64 | 128 | 256\n"
                                "int x; // hone:knob VEC = 1 | 2 | 4 | 8\n"
                                "//   hone:require BLOCK % (32 * VEC) == 0\n"
                                "// hone:flags -ffast-math -O2\n"
                                "// hone: is not a directive line? no: it is, but this one is below\n";
        // The last line is an unknown directive (empty name) and must be refused.
        QVERIFY_THROWS_EXCEPTION(KnobError, parseKnobSpace(src, "k.cpp"));
        KnobSpace s = parseKnobSpace(src.substr(0, src.rfind("// hone: is")), "k.cpp");
        QCOMPARE(s.knobs.size(), size_t(2));
        QCOMPARE(s.knobs[0].name, std::string("BLOCK"));
        QCOMPARE(s.knobs[0].values, (std::vector<std::string> {"64", "128", "256"}));
        QCOMPARE(s.knobs[1].line, 2);
        QCOMPARE(s.requires_.size(), size_t(1));
        QCOMPARE(s.flags, std::string("-ffast-math -O2"));
        QCOMPARE(s.cardinality(), uint64_t(12));
        QVERIFY(s.admits({{"BLOCK", "128"}, {"VEC", "4"}}));
        std::string why;
        QVERIFY(!s.admits({{"BLOCK", "64"}, {"VEC", "4"}}, &why));
        QCOMPARE(why, std::string("require BLOCK % (32 * VEC) == 0 does not hold"));
        QVERIFY(!s.admits({{"BLOCK", "96"}, {"VEC", "1"}}, &why));
        QCOMPARE(why, std::string("knob BLOCK = 96 is not one of its declared values"));
        QVERIFY(!s.admits({{"BLOCK", "64"}}, &why));
        QCOMPARE(why, std::string("knob VEC has no value"));
        auto first = s.firstAdmissible();
        QVERIFY(first.has_value());
        QCOMPARE(knobsToString(*first), std::string("BLOCK=64 VEC=1"));
    }

    /// `acts=KIND` after a knob's values says what it acts on (docs/FORMATS.md); the values and
    /// the knobs without it are read as before.
    void parsesActs()
    {
        const std::string src = "// hone:knob VEC = 1 | 2 | 4  acts=bytes_per_access\n"
                                "// hone:knob BLOCK = 64 | 128\n"
                                "// hone:knob PF = 0 | 1\tacts=memory_pipeline\n"
                                "// hone:require BLOCK >= 64 * VEC / 4\n";
        KnobSpace s = parseKnobSpace(src, "k.cu");
        QCOMPARE(s.knobs.size(), size_t(3));
        QCOMPARE(s.knobs[0].values, (std::vector<std::string> {"1", "2", "4"}));
        QCOMPARE(s.knobs[0].acts, std::string("bytes_per_access"));
        QCOMPARE(s.knobs[1].acts, std::string());
        QCOMPARE(s.knobs[2].values, (std::vector<std::string> {"0", "1"}));
        QCOMPARE(s.knobs[2].acts, std::string("memory_pipeline"));
        QCOMPARE(s.cardinality(), uint64_t(12));
        QCOMPARE(knobActsKinds().size(), size_t(8));
    }

    void refusesBadActs_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("message");
        QTest::addRow("unknown kind") << "// hone:knob VEC = 1 | 2  acts=speed"
                                      << "k.cu:2: knob 'VEC' acts='speed' is not a known kind; expected one of "
                                         "bytes_per_access, parallelism, work_per_thread, memory_pipeline, reduction, "
                                         "cache_policy, launch_shape, arithmetic";
        QTest::addRow("other key") << "// hone:knob VEC = 1 | 2  does=bytes_per_access"
                                   << "k.cu:2: knob 'VEC': unexpected 'does=' in its values; expected 'NAME = v1 | v2 "
                                      "| ...' optionally followed by ' acts=KIND'";
        QTest::addRow("as a value") << "// hone:knob VEC = 1 | 2 | acts=bytes_per_access"
                                    << "k.cu:2: knob 'VEC' has an empty or invalid value ''; expected values of "
                                       "letters, digits, '_', '.', '+', '-' separated by '|'";
        QTest::addRow("empty kind") << "// hone:knob VEC = 1 | 2 acts="
                                    << "k.cu:2: knob 'VEC' acts='' is not a known kind; expected one of "
                                       "bytes_per_access, parallelism, work_per_thread, memory_pipeline, reduction, "
                                       "cache_policy, launch_shape, arithmetic";
    }
    void refusesBadActs()
    {
        QFETCH(QString, line);
        QFETCH(QString, message);
        try {
            parseKnobSpace("// hone:knob A = 1 | 2\n" + line.toStdString() + "\n", "k.cu");
            QFAIL("accepted");
        } catch (const KnobError& e) {
            QCOMPARE(QString(e.what()), message);
        }
    }

    /// Every bundled seed parses, and the tuned CPU seeds declare what each knob acts on.
    void bundledSeedsDeclareActs()
    {
        namespace fs = std::filesystem;
        int sources = 0, knobs = 0, withActs = 0;
        for (const auto& e : fs::recursive_directory_iterator(std::string(HONE_SOURCE_DIR) + "/resources/problems")) {
            const std::string ext = e.path().extension().string();
            if (e.path().parent_path().filename() != "seeds" || (ext != ".cu" && ext != ".cpp" && ext != ".hip"))
                continue;
            std::ifstream in(e.path());
            std::stringstream text;
            text << in.rdbuf();
            KnobSpace s = parseKnobSpace(text.str(), e.path().string());
            ++sources;
            for (const auto& k : s.knobs) {
                ++knobs;
                withActs += k.acts.empty() ? 0 : 1;
                if (ext == ".cpp")
                    QVERIFY2(!k.acts.empty() || k.name == "STORE", qPrintable(QString::fromStdString(e.path().string() + " " + k.name)));
            }
        }
        QVERIFY(sources >= 30);
        QVERIFY2(withActs * 10 >= knobs * 8, qPrintable(QString("%1 of %2 knobs declare acts").arg(withActs).arg(knobs)));
    }

    void firstAdmissibleSkipsViolations()
    {
        KnobSpace s = parseKnobSpace("// hone:knob A = 1 | 2 | 3\n// hone:knob B = 1 | 2\n// hone:require A * B >= 5\n", "f");
        auto first = s.firstAdmissible();
        QVERIFY(first.has_value());
        QCOMPARE(knobsToString(*first), std::string("A=3 B=2"));
        KnobSpace none = parseKnobSpace("// hone:knob A = 1 | 2\n// hone:require A > 5\n", "f");
        QVERIFY(!none.firstAdmissible().has_value());
    }

    void startGivesTheSeedsEntryPoint()
    {
        const char* src = "// hone:knob A = 1 | 2 | 3\n// hone:knob B = 1 | 2\n// hone:require A * B >= 2\n"
                          "// hone:start A=3\n";
        KnobSpace s = parseKnobSpace(src, "f.cu");
        QCOMPARE(knobsToString(*s.initial()), std::string("A=3 B=1"));
        QCOMPARE(knobsToString(*s.firstAdmissible()), std::string("A=2 B=1"));
        // Without hone:start a seed enters at its first admissible assignment.
        KnobSpace plain = parseKnobSpace("// hone:knob A = 1 | 2 | 3\n// hone:knob B = 1 | 2\n// hone:require A * B >= 2\n", "f");
        QCOMPARE(knobsToString(*plain.initial()), std::string("A=2 B=1"));
    }

    void malformedLines_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::addRow("no equals") << "// hone:knob BLOCK 64 | 128\n"
                                   << "f.cpp:1: hone:knob needs 'NAME = v1 | v2 | ...'; expected '=' after the knob name";
        QTest::addRow("bad name") << "\n// hone:knob 9X = 1 | 2\n"
                                  << "f.cpp:2: hone:knob name '9X' is not an identifier; expected a C identifier such as BLOCK";
        QTest::addRow("empty value") << "// hone:knob A = 1 || 2\n"
                                     << "f.cpp:1: knob 'A' has an empty or invalid value ''; expected values of letters, "
                                        "digits, '_', '.', '+', '-' separated by '|'";
        QTest::addRow("duplicate value") << "// hone:knob A = 1 | 1\n"
                                         << "f.cpp:1: knob 'A' lists value '1' twice; expected distinct values";
        QTest::addRow("duplicate knob") << "// hone:knob A = 1\n// hone:knob A = 2\n"
                                        << "f.cpp:2: knob 'A' is declared twice; expected each knob once";
        QTest::addRow("unknown directive") << "// hone:knobs A = 1\n"
                                           << "f.cpp:1: unknown directive 'hone:knobs'; expected hone:knob, hone:require, "
                                              "hone:flags or hone:start";
        QTest::addRow("require typo") << "// hone:knob BLOCK = 1 | 2\n// hone:require BLOK > 1\n"
                                      << "f.cpp:2: hone:require 'BLOK > 1' names 'BLOK', which is not a declared knob; "
                                         "expected one of the hone:knob names";
        QTest::addRow("empty require") << "// hone:require\n"
                                       << "f.cpp:1: hone:require is empty; expected an expression over knob names such "
                                          "as 'BLOCK % 32 == 0'";
        QTest::addRow("start names an unknown knob") << "// hone:knob A = 1 | 2\n// hone:start C=1\n"
                                                     << "f.cpp:2: hone:start 'C=1': expected NAME=VALUE pairs naming "
                                                        "declared knobs";
        QTest::addRow("start value not declared") << "// hone:knob A = 1 | 2\n// hone:start A=4\n"
                                                  << "f.cpp:2: hone:start gives knob 'A' the value '4', which its "
                                                     "hone:knob line does not declare; expected one of its values";
        QTest::addRow("start not admissible") << "// hone:start A=1\n// hone:knob A = 1 | 2\n// hone:require A > 1\n"
                                              << "f.cpp:1: hone:start is not admissible: require A > 1 does not hold; "
                                                 "expected an assignment every hone:require accepts";
        QTest::addRow("refused flag") << "// hone:flags -O3 -fplugin=evil.so\n"
                                      << "f.cpp:1: hone:flags: compile flag '-fplugin=evil.so' is not allowed; expected "
                                         "only -O*, -f* (not -fplugin), -m*, -D*, -U*, -W* (not -Wl/-Wa/-Wp) and -std=*";
    }
    void malformedLines()
    {
        QFETCH(QString, source);
        QFETCH(QString, message);
        try {
            parseKnobSpace(source.toStdString(), "f.cpp");
            QFAIL("expected a KnobError");
        } catch (const KnobError& e) {
            QCOMPARE(QString::fromStdString(e.what()), message);
        }
    }

    void requireSyntaxErrorNamesLine()
    {
        try {
            parseKnobSpace("// hone:knob A = 1\n// hone:require A >\n", "f.cpp");
            QFAIL("expected a KnobError");
        } catch (const KnobError& e) {
            QVERIFY2(QString(e.what()).startsWith("f.cpp:2: hone:require 'A >': "), e.what());
        }
    }

    void flagAllowList_data()
    {
        QTest::addColumn<QString>("flags");
        QTest::addColumn<bool>("allowed");
        QTest::addRow("opt") << "-O2 -ffast-math -march=native -DX=1 -UNDEBUG -Wno-unused -std=c++20" << true;
        QTest::addRow("output") << "-o /etc/passwd" << false;
        QTest::addRow("include") << "-include /etc/shadow" << false;
        QTest::addRow("linker") << "-Wl,--wrap=malloc" << false;
        QTest::addRow("plugin") << "-fplugin=x.so" << false;
        QTest::addRow("response file") << "@flags.txt" << false;
        QTest::addRow("search path") << "-B/tmp" << false;
    }
    void flagAllowList()
    {
        QFETCH(QString, flags);
        QFETCH(bool, allowed);
        QCOMPARE(checkFlags(flags.toStdString()).empty(), allowed);
    }
};

QTEST_GUILESS_MAIN(TestKnobs)
#include "tst_knobs.moc"
