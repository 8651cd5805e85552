// The worker's input draws (HostTensor::fill), linked from hone_worker_lib: the same bytes on one
// thread and on many, for every dtype and init kind, and the same bytes as before the draws were
// split across threads (the recorded checksums), so cached inputs and exported tests stay valid.

#include "tensors.h"

#include <QtTest>

#include <cstdio>
#include <cstring>

using namespace hone::backends;

namespace {

struct Case {
    const char* name;
    const char* dtype;
    std::vector<int64_t> shape;
    const char* init; // JSON, "null" for the default (normal)
    const char* checksum; // HostTensor::checksum() of the draws for seed 7, "bench[0]", tensor 1
};

constexpr int64_t kOdd = (int64_t(1) << 20) + 7; // past the parallel threshold, split unevenly

// Recorded with the draws as they were before this test (one element at a time, one std::function
// per element); a changed value here changes every cached input and every exported test.
const std::vector<Case>& cases()
{
    static const std::vector<Case> all = {
        { "f32 normal", "f32", { 3, 1000 }, R"({"dist": "normal", "mean": 1.0, "std": 0.2})", "dcd7a007e2452a7a" },
        { "f32 normal odd size", "f32", { kOdd }, R"({"dist": "normal", "mean": -2.0, "std": 3.0})", "aace97afdfeccb85" },
        { "f64 normal", "f64", { 4099 }, R"({"dist": "normal"})", "e4a74c60f48c0e2a" },
        { "f16 normal", "f16", { 7, 33 }, R"({"dist": "normal", "std": 4.0})", "13e9228fbcbd39ec" },
        { "bf16 normal odd size", "bf16", { 3, kOdd }, R"({"dist": "normal", "mean": 0.5})", "11aac9bd19cf8d7f" },
        { "default init", "f32", { 1000 }, "null", "a46214f2af689df9" },
        { "f32 uniform", "f32", { kOdd }, R"({"dist": "uniform", "low": -1.0, "high": 2.0})", "7070c92106391395" },
        { "bf16 uniform", "bf16", { 513 }, R"({"dist": "uniform", "low": 0.5, "high": 1.5})", "b46dcf3a01445b58" },
        { "f64 uniform", "f64", { 257 }, R"({"dist": "uniform"})", "50dd886c9c9de7e8" },
        { "i32 uniform", "i32", { kOdd }, R"({"dist": "uniform", "low": -5, "high": 5})", "e9bd737bc752ed9c" },
        { "i64 uniform", "i64", { 1001 }, R"({"dist": "uniform", "low": -1e15, "high": 1e15})", "a39537fbe7f4295d" },
        { "u8 uniform", "u8", { 4097 }, R"({"dist": "uniform", "low": 0, "high": 255})", "fc6223a2e8f108f5" },
        { "i32 randint", "i32", { 2, kOdd }, R"({"dist": "randint", "low": 0, "high": 100000})", "7b69a7c83ded87e8" },
        { "i64 randint", "i64", { 999 }, R"({"dist": "randint", "low": -7, "high": 9000000000000})", "54e701a72819593b" },
        { "u8 randint", "u8", { 333 }, R"({"dist": "randint", "high": 7})", "9daf7609656d9995" },
        { "i32 normal rounds", "i32", { 1000 }, R"({"dist": "normal", "mean": 10, "std": 100})", "3d3fba15c2d3c411" },
        { "u8 normal clamps", "u8", { 1000 }, R"({"dist": "normal", "mean": 128, "std": 200})", "396bf3d817a35a61" },
        { "i64 offsets", "i64", { 1025 }, R"({"dist": "offsets", "total": 100000})", "a9d0a5bc6667c34f" },
        { "i32 offsets", "i32", { 17 }, R"({"dist": "offsets", "total": 5})", "a853b04b9c7b54b1" },
        { "f32 sorted normal", "f32", { 5000 }, R"({"dist": "normal", "sorted": true})", "df0442d86de0894c" },
        { "f64 sorted uniform", "f64", { 777 }, R"({"dist": "uniform", "low": 3, "high": 4, "sorted": true})", "4f50a594b30d85e1" },
        { "f32 transform scale shift negative", "f32", { 33, 65 },
            R"({"dist": "normal", "transform": {"scale": 50.0, "shift": 1.0, "sign": "negative"}})", "7b80c5e9e39e6345" },
        { "bf16 transform constant rows", "bf16", { 9, 4099 },
            R"({"dist": "normal", "transform": {"constant": "rows", "sign": "positive"}})", "0d5a2bae178e9123" },
        { "f16 transform constant all", "f16", { 1000 },
            R"({"dist": "uniform", "low": -3, "high": 3, "transform": {"constant": "all", "scale": 2}})", "e1c1decfb7acce9a" },
        { "f64 transform odd size", "f64", { kOdd }, R"({"dist": "normal", "transform": {"shift": -4}})", "deb61c701f1a6200" },
        { "one element", "f32", { 1 }, R"({"dist": "normal"})", "cdd2f1d6281af2a6" },
        { "three elements", "bf16", { 3 }, R"({"dist": "uniform"})", "04df1a6ecad74644" },
        { "empty", "f32", { 0, 5 }, R"({"dist": "normal"})", "cbf29ce484222325" },
    };
    return all;
}

HostTensor draw(const Case& c, size_t threads)
{
    TensorDesc d;
    d.name = c.name;
    d.dtype = dtypeFromName(c.dtype);
    d.shape = c.shape;
    d.init = nlohmann::json::parse(c.init);
    HostTensor t(d);
    t.fill(7, "bench[0]", 1, threads);
    return t;
}

} // namespace

class TestTensors : public QObject {
    Q_OBJECT

private slots:
    void sameBytesOnAnyThreadCount_data()
    {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < cases().size(); ++i)
            QTest::addRow("%s", cases()[i].name) << static_cast<int>(i);
    }

    void sameBytesOnAnyThreadCount()
    {
        QFETCH(int, index);
        const Case& c = cases()[static_cast<size_t>(index)];
        const HostTensor serial = draw(c, 1);
        for (size_t threads : { size_t(2), size_t(3), size_t(7), size_t(16), size_t(0) }) {
            const HostTensor parallel = draw(c, threads);
            QCOMPARE(parallel.bytes(), serial.bytes());
            QVERIFY2(std::memcmp(parallel.data(), serial.data(), serial.bytes()) == 0,
                qPrintable(QString("%1 threads drew other bytes than one").arg(threads)));
        }
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(serial.checksum()));
        QCOMPARE(QString(hex), QString(c.checksum));
    }
};

QTEST_GUILESS_MAIN(TestTensors)
#include "tst_tensors.moc"
