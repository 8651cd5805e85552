// The worker's cache is trusted only as far as its content hashes (docs/THREAT_MODEL.md,
// "Trusted cache"). Each test runs the real hone-worker ($HONE_WORKER) twice on one cache folder
// and, in between, writes into the cache as someone with another foothold on the machine would:
// a compiled object, cached reference outputs, the ceilings. The second evaluation must not use
// the changed bytes: its result is right, it says what was changed, and the entry is rebuilt.
#include "core/eval_result.h"
#include "core/protocol.h"
#include "core/sha256.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using nlohmann::json;
namespace fs = std::filesystem;
namespace protocol = hone::core::protocol;

namespace {

const char* const kReference = R"(#include <hone/kernel.h>
extern "C" int hone_run(const hone_args* a)
{
    const float* x = static_cast<const float*>(a->inputs[0].data);
    float* y = static_cast<float*>(a->outputs[0].data);
    const int64_t n = hone_numel(&a->outputs[0]);
    for (int64_t i = 0; i < n; ++i)
        y[i] = 2.0f * x[i] + 0.5f;
    return 0;
}
)";

/// y = 2*x + 0.5 with the loop body `body` (x, y, n in scope), after `prelude`.
std::string candidate(const std::string& body, const std::string& prelude = {})
{
    return "#include <hone/kernel.h>\n#include <cstdint>\n" + prelude
        + "\nextern \"C\" int hone_run(const hone_args* a)\n{\n"
          "    const float* x = static_cast<const float*>(a->inputs[0].data);\n"
          "    float* y = static_cast<float*>(a->outputs[0].data);\n"
          "    const int64_t n = hone_numel(&a->outputs[0]);\n"
        + body + "    return 0;\n}\n";
}

const char* const kRight = "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 2.0f * x[i] + 0.5f;\n";
const char* const kWrong = "    for (int64_t i = 0; i < n; ++i)\n        y[i] = 3.0f * x[i];\n";

json source(const std::string& name, const std::string& text)
{
    return { { "name", name }, { "lang", "cpp" }, { "source", text }, { "knobs", json::object() }, { "flags", "" } };
}

json shape(const std::string& label, int64_t n)
{
    return { { "label", label }, { "symbols", { { "N", n } } }, { "flops", 2.0 * double(n) },
        { "bytes", 8.0 * double(n) },
        { "inputs",
            json::array({ { { "name", "x" }, { "dtype", "f32" }, { "shape", json::array({ n }) },
                { "init", { { "dist", "normal" }, { "mean", 0.0 }, { "std", 1.0 } } } } }) },
        { "outputs", json::array({ { { "name", "y" }, { "dtype", "f32" }, { "shape", json::array({ n }) } } }) } };
}

/// The bench shape holds 4 MiB of inputs: its inputs and reference outputs are cached.
json evalRequest(const std::string& id, const json& cand, bool time, const std::string& reference = kReference,
    int64_t benchN = 1 << 20)
{
    const json problem = { { "name", "axpb" }, { "reference", source("reference.cpp", reference) },
        { "tolerance", { { "f32", { { "atol", 1e-6 }, { "rtol", 1e-5 } } } } },
        { "check", json::array({ shape("small[0]", 1000) }) }, { "bench", json::array({ shape("bench[0]", benchN) }) } };
    return { { "protocol", protocol::kVersion }, { "type", "eval" }, { "id", id }, { "problem", problem },
        { "candidate", cand }, { "baseline", source("baseline.cpp", kReference) },
        { "stages", time ? json::array({ "compile", "check", "time" }) : json::array({ "compile", "check" }) },
        { "config", { { "seeds", { 1, 2, 3 } }, { "samples", 10 }, { "warmup", 1 }, { "timing_shape", 0 } } },
        { "limits", { { "compile_s", 120 }, { "run_s", 60 } } } };
}

std::string readAll(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeAll(const fs::path& p, const std::string& data)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << data;
}

/// The entry of `kind` the result names (its key is a path under the cache folder), or null.
json entryOf(const json& result, const std::string& kind, const std::string& keyPrefix = {})
{
    if (!result.contains("cache"))
        return nullptr;
    for (const auto& e : result["cache"]["entries"])
        if (e["kind"] == kind && e["key"].get<std::string>().rfind(keyPrefix, 0) == 0)
            return e;
    return nullptr;
}

std::string warnings(const json& result)
{
    return result.contains("cache") ? result["cache"]["warnings"].dump() : std::string("[]");
}

} // namespace

class TestCacheIntegrity : public QObject {
    Q_OBJECT

    QString m_worker;

    /// One eval in a fresh worker on `cacheDir`; the result, or a "missing" status.
    json evalOne(const json& request, const QString& cacheDir)
    {
        QProcess p;
        p.start(m_worker, { "--stdio", "--cache-dir", cacheDir });
        if (!p.waitForStarted(10000))
            return { { "status", "missing" }, { "why", "worker did not start" } };
        p.write(QByteArray::fromStdString(request.dump() + "\n"));
        p.closeWriteChannel();
        if (!p.waitForFinished(300000)) {
            p.kill();
            p.waitForFinished();
        }
        for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
            if (line.isEmpty())
                continue;
            const json m = protocol::parseMessage(line.toStdString());
            if (m.value("type", "") == "result") {
                // The typed decoder reads the new fields (and would throw on a malformed one).
                const protocol::EvalResult typed = protocol::EvalResult::fromJson(m);
                if (m.contains("cache") && !typed.cache)
                    return { { "status", "missing" }, { "why", "cache not decoded" } };
                return m;
            }
        }
        return { { "status", "missing" }, { "stderr", p.readAllStandardError().toStdString() } };
    }

private slots:
    void initTestCase()
    {
        m_worker = qEnvironmentVariable("HONE_WORKER");
        QVERIFY2(!m_worker.isEmpty(), "set HONE_WORKER to the hone-worker binary");
    }

    void incrementalHashIsTheHash()
    {
        QCOMPARE(hone::core::sha256Hex("abc"),
            std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        std::string data(1000, 'x');
        for (size_t i = 0; i < data.size(); ++i)
            data[i] = static_cast<char>(i * 7);
        hone::core::Sha256 h;
        for (size_t at = 0, step = 1; at < data.size(); at += step, step = step * 2 + 1)
            h.update(data.data() + at, std::min(step, data.size() - at));
        QCOMPARE(h.hexDigest(), hone::core::sha256Hex(data));
    }

    /// Known answers (Python's hashlib) across the block and padding boundaries: whichever
    /// compression this CPU takes (the SHA extensions or the portable loop) gives SHA-256.
    void knownAnswersAtBlockBoundaries_data()
    {
        QTest::addColumn<int>("bytes");
        QTest::addColumn<QString>("digest");
        QTest::addRow("0") << 0 << "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        QTest::addRow("1") << 1 << "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d";
        QTest::addRow("55") << 55 << "576a1bf8d4478657e6dc4af9398544765c2a92cde28478b019235cfed315fc09";
        QTest::addRow("56") << 56 << "9b20501dfd1d99161c257950f3444f3e49230c351c5c8e0943ef369f85f5205d";
        QTest::addRow("63") << 63 << "30b345906b493f06f69444b6521113511c242f30e29840462950035043682f1e";
        QTest::addRow("64") << 64 << "d8bc63b4fc1156e5e7d95a418b9bf54cd3174bedbc2db40f74895349b229b3c0";
        QTest::addRow("65") << 65 << "1ee23b0fbcaecc1aff4a9e8f1645f35ab2c8e13609cd73b68df8b5e3f63ce073";
        QTest::addRow("127") << 127 << "67d79933e3c9aa8e89f481e071cfca1e9a16c09d7263b5efa3bb01f1a9f8d065";
        QTest::addRow("128") << 128 << "54c9eb041badfd7064645067b107661fed6113197ce2dd066ba69618abd3732f";
        QTest::addRow("4099") << 4099 << "98cb8c1375c3931d019e477289812c1f0cf15972aa5c81469381545b9224d9ab";
        QTest::addRow("1 MiB") << (1 << 20) << "1d7368ef6f59e0c704a978b815288f1e464037959645bbfd79348d330269480d";
    }

    void knownAnswersAtBlockBoundaries()
    {
        QFETCH(int, bytes);
        QFETCH(QString, digest);
        std::string data(static_cast<size_t>(bytes), '\0');
        for (size_t i = 0; i < data.size(); ++i)
            data[i] = static_cast<char>((i * 7) & 0xff);
        QCOMPARE(QString::fromStdString(hone::core::sha256Hex(data)), digest);
        hone::core::Sha256 pieces; // 64-byte blocks and odd tails through the same state
        for (size_t at = 0, step = 3; at < data.size(); at += step, step = step * 3 % 1000 + 1)
            pieces.update(data.data() + at, std::min(step, data.size() - at));
        QCOMPARE(QString::fromStdString(pieces.hexDigest()), digest);
    }

    /// A cached object replaced by another (a wrong kernel's) is compiled again, never loaded:
    /// the candidate's, and the reference's (which would poison every later evaluation).
    void tamperedObjectIsRebuilt_data()
    {
        QTest::addColumn<bool>("reference");
        QTest::addRow("candidate object") << false;
        QTest::addRow("reference object") << true;
    }
    void tamperedObjectIsRebuilt()
    {
        QFETCH(bool, reference);
        QTemporaryDir cache;
        const fs::path dir = cache.path().toStdString();
        const json wrong = evalOne(evalRequest("wrong", source("wrong.cpp", candidate(kWrong)), false), cache.path());
        QVERIFY2(wrong["status"] == "failed" && wrong["failure"]["kind"] == "wrong_result", wrong.dump(2).c_str());
        const std::string wrongBytes = readAll(dir / entryOf(wrong, "object", "so/")["key"].get<std::string>());
        QVERIFY(!wrongBytes.empty());

        const json first = evalOne(evalRequest("first", source("right.cpp", candidate(kRight)), false), cache.path());
        QVERIFY2(first["status"] == "ok", first.dump(2).c_str());
        const std::string sha = first["compile"]["object_sha256"];
        // The reference's object is the other one the result names.
        std::string key;
        for (const auto& e : first["cache"]["entries"])
            if (e["kind"] == "object" && (e["sha256"] == sha) != reference)
                key = e["key"];
        QVERIFY2(!key.empty(), first.dump(2).c_str());
        const std::string recorded = readAll(dir / (key + ".sha256"));
        writeAll(dir / key, wrongBytes);

        const json second = evalOne(evalRequest("second", source("right.cpp", candidate(kRight)), false), cache.path());
        QVERIFY2(second["status"] == "ok", second.dump(2).c_str());
        QVERIFY2(warnings(second).find("compiled object") != std::string::npos, second.dump(2).c_str());
        QVERIFY2(warnings(second).find(key) != std::string::npos, warnings(second).c_str());
        if (!reference)
            QCOMPARE(second["compile"]["cached"].get<bool>(), false);
        QCOMPARE(hone::core::sha256Hex(readAll(dir / key)) + "\n", recorded); // rebuilt in place
        QCOMPARE(second["compile"]["object_sha256"].get<std::string>(), sha);
        // Rebuilt, it is a plain cache hit again.
        const json third = evalOne(evalRequest("third", source("right.cpp", candidate(kRight)), false), cache.path());
        QVERIFY2(third["status"] == "ok" && warnings(third) == "[]", third.dump(2).c_str());
    }

    /// Cached reference outputs (and inputs) that were changed are computed again: with the
    /// wrong kernel's outputs in their place, the right candidate would fail and the wrong one
    /// pass.
    void tamperedReferenceOutputsAreComputedAgain_data()
    {
        QTest::addColumn<std::string>("kind");
        QTest::addColumn<int64_t>("benchN");
        QTest::addRow("reference outputs") << std::string("reference") << int64_t(1 << 20);
        QTest::addRow("inputs") << std::string("inputs") << int64_t(1 << 20);
        // 32 MiB entries: hashed as a SHA-256 tree of 4 MiB pieces.
        QTest::addRow("large reference outputs") << std::string("reference") << int64_t(1 << 23);
    }
    void tamperedReferenceOutputsAreComputedAgain()
    {
        QFETCH(std::string, kind);
        QFETCH(int64_t, benchN);
        QTemporaryDir cache;
        const fs::path dir = cache.path().toStdString();
        const json first = evalOne(
            evalRequest("first", source("right.cpp", candidate(kRight)), true, kReference, benchN), cache.path());
        QVERIFY2(first["status"] == "ok", first.dump(2).c_str());
        std::vector<json> entries;
        for (const auto& e : first["cache"]["entries"])
            if (e["kind"] == kind)
                entries.push_back(e);
        QVERIFY2(!entries.empty(), first.dump(2).c_str());
        for (const json& entry : entries) {
            const fs::path file = dir / entry["key"].get<std::string>();
            std::string bytes = readAll(file);
            const bool plain = bytes.size() <= (size_t(16) << 20); // larger: the tree (evaluator.cpp)
            if (plain)
                QCOMPARE(hone::core::sha256Hex(bytes), entry["sha256"].get<std::string>());
            // Every float x becomes 1.5 x + 1: outputs the right candidate does not match, or
            // inputs the cached reference outputs do not belong to.
            for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
                float f;
                std::memcpy(&f, bytes.data() + i, 4);
                f = f * 1.5f + 1.0f;
                std::memcpy(bytes.data() + i, &f, 4);
            }
            writeAll(file, bytes);
        }

        const json second = evalOne(
            evalRequest("second", source("right.cpp", candidate(kRight)), true, kReference, benchN), cache.path());
        QVERIFY2(second["status"] == "ok", second.dump(2).c_str());
        QVERIFY2(warnings(second).find("cached " + kind) != std::string::npos, warnings(second).c_str());
        // Rebuilt: the same bytes, so the same hash, as first written.
        for (const json& entry : entries) {
            const std::string again = readAll(dir / entry["key"].get<std::string>());
            if (again.size() <= (size_t(16) << 20))
                QCOMPARE(hone::core::sha256Hex(again), entry["sha256"].get<std::string>());
            bool found = false;
            for (const auto& e : second["cache"]["entries"])
                found = found || (e["key"] == entry["key"] && e["sha256"] == entry["sha256"]);
            QVERIFY2(found, second["cache"].dump(2).c_str());
        }
    }

    /// Ceilings lowered by hand would make every honest candidate look faster than physics (a
    /// `suspicious` failure); raised, they would hide the ones that are. Changed, they are
    /// measured again.
    void tamperedCeilingsAreMeasuredAgain()
    {
        QTemporaryDir cache;
        const fs::path dir = cache.path().toStdString();
        const json first = evalOne(evalRequest("first", source("right.cpp", candidate(kRight)), true), cache.path());
        QVERIFY2(first["status"] == "ok", first.dump(2).c_str());
        fs::path file;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().filename().string().rfind("ceilings-cpu-", 0) == 0 && e.path().extension() == ".json")
                file = e.path();
        QVERIFY(!file.empty());
        json ceilings = json::parse(readAll(file));
        const double peak = ceilings["peak_gbps"];
        ceilings["peak_gbps"] = 1e-3; // 8 MiB would take 8 s at best
        ceilings["load_per_core"] = 0.0;
        writeAll(file, ceilings.dump(2) + "\n");

        const json second = evalOne(evalRequest("second", source("right.cpp", candidate(kRight)), true), cache.path());
        QVERIFY2(second["status"] == "ok", second.dump(2).c_str());
        QVERIFY2(warnings(second).find("ceilings") != std::string::npos, warnings(second).c_str());
        QVERIFY(second["roofline"]["peak_gbps"].get<double>() > 1.0);
        const json again = json::parse(readAll(file));
        QVERIFY(again["peak_gbps"].get<double>() > 1.0);
        QVERIFY(peak > 1.0);
    }

    /// Candidate code cannot write the cache: it sees no cache folder at all, and its own
    /// object is a private copy. Every write it manages makes its output wrong.
    void candidateCannotWriteTheCache()
    {
        QTemporaryDir cache;
        const fs::path dir = cache.path().toStdString();
        QProcess hello;
        hello.start(m_worker, { "--stdio", "--cache-dir", cache.path() });
        QVERIFY(hello.waitForStarted());
        hello.write(R"({"protocol":2,"type":"hello","id":"h"})"
                    "\n");
        hello.closeWriteChannel();
        QVERIFY(hello.waitForFinished(60000));
        const json h = protocol::parseMessage(hello.readAllStandardOutput().split('\n').front().toStdString());
        if (!h["sandbox"].value("enabled", false))
            QSKIP("no sandbox on this host");

        const std::string prelude = R"(#include <initializer_list>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
static int writes()
{
    int found = 0;
    const char* cache = CACHE_DIR;
    char path[1024];
    for (const char* sub : { "", "/so", "/ref", "/inputs" }) {
        std::snprintf(path, sizeof path, "%s%s/planted", cache, sub);
        if (FILE* f = std::fopen(path, "w")) { std::fclose(f); found |= 1; }
        std::snprintf(path, sizeof path, "%s%s", cache, sub);
        if (DIR* d = opendir(path)) {
            while (dirent* e = readdir(d)) {
                if (e->d_name[0] == '.') continue;
                std::snprintf(path, sizeof path, "%s%s/%s", cache, sub, e->d_name);
                const int fd = open(path, O_WRONLY | O_APPEND);
                if (fd >= 0) { close(fd); found |= 2; }
            }
            closedir(d);
        }
    }
    // The object this code came from, reopened for writing through /proc.
    if (DIR* d = opendir("/proc/self/map_files")) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            std::snprintf(path, sizeof path, "/proc/self/map_files/%s", e->d_name);
            char target[512] = {};
            if (readlink(path, target, sizeof target - 1) <= 0 || std::strstr(target, "/memfd:") == target) continue;
            const int fd = open(path, O_WRONLY | O_APPEND);
            if (fd >= 0) { close(fd); found |= 4; }
        }
        closedir(d);
    }
    return found;
}
static int g_found = -1;
)";
        const std::string body = std::string("    if (g_found < 0) g_found = writes();\n    if (g_found != 0) return 0;\n") + kRight;
        // Twice: the second run finds the first one's object (and reference outputs) cached.
        for (const char* id : { "first", "second" }) {
            json cand = source("writer.cpp", candidate(body, prelude));
            cand["knobs"] = { { "CACHE_DIR", "\"" + dir.string() + "\"" } }; // the folder it is told of
            const json r = evalOne(evalRequest(id, cand, true), cache.path());
            QVERIFY2(r["status"] == "ok", r.dump(2).c_str());
            QVERIFY2(warnings(r) == "[]", r.dump(2).c_str());
        }
        for (const auto& e : fs::recursive_directory_iterator(dir))
            QVERIFY2(e.path().filename() != "planted", e.path().c_str());
    }
};

QTEST_GUILESS_MAIN(TestCacheIntegrity)
#include "tst_cache_integrity.moc"
