// core::validUtf8: the repair every text from compilers, candidates and models goes through
// before it reaches JSON or the store.

#include "core/utf8.h"

#include <QtTest>

using namespace hone::core;

namespace {
const std::string kFffd = "\xEF\xBF\xBD";
}

class TestUtf8 : public QObject {
    Q_OBJECT
private slots:
    void repairsIllFormedSequences_data()
    {
        QTest::addColumn<QByteArray>("in");
        QTest::addColumn<QByteArray>("want");
        const QByteArray r = QByteArray::fromStdString(kFffd);
        QTest::addRow("ascii") << QByteArray("int x; // ok") << QByteArray("int x; // ok");
        QTest::addRow("valid multibyte") << QByteArray("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80")
                                         << QByteArray("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
        QTest::addRow("latin-1 byte") << QByteArray("caf\xE9!") << QByteArray("caf") + r + "!";
        QTest::addRow("stray continuation") << QByteArray("a\x80") + "b" << QByteArray("a") + r + "b";
        QTest::addRow("two bad bytes") << QByteArray("\xFF\xFE") << r + r;
        QTest::addRow("truncated at end") << QByteArray("x\xE2\x82") << QByteArray("x") + r;
        QTest::addRow("truncated mid-text") << QByteArray("\xE2\x82(") << r + "(";
        QTest::addRow("overlong") << QByteArray("\xC0\xAF") << r + r;
        QTest::addRow("surrogate") << QByteArray("\xED\xA0\x80") << r + r + r;
        QTest::addRow("past U+10FFFF") << QByteArray("\xF4\x90\x80\x80") << r + r + r + r;
        QTest::addRow("nul kept") << QByteArray("a\0b", 3) << QByteArray("a\0b", 3);
    }
    void repairsIllFormedSequences()
    {
        QFETCH(QByteArray, in);
        QFETCH(QByteArray, want);
        const std::string got = validUtf8(in.toStdString());
        QCOMPARE(QByteArray::fromStdString(got), want);
        QVERIFY(isValidUtf8(got));
        QCOMPARE(isValidUtf8(in.toStdString()), in == want);
    }

    void firstInvalidByteIsFound()
    {
        QCOMPARE(firstInvalidUtf8("fine \xC3\xA9"), std::string_view::npos);
        QCOMPARE(firstInvalidUtf8("ab\xC3\xA9\xFF"), size_t(4));
    }

    void dumpJsonNeverThrows()
    {
        nlohmann::json j = { { "log", std::string("error: \xFF in source") } };
        QVERIFY_THROWS_EXCEPTION(nlohmann::json::type_error, (void)j.dump());
        const std::string text = dumpJson(j);
        QCOMPARE(nlohmann::json::parse(text)["log"].get<std::string>(), "error: " + kFffd + " in source");
    }
};

QTEST_APPLESS_MAIN(TestUtf8)
#include "tst_utf8.moc"
