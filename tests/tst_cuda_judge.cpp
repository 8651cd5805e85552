// The judge's device-side checks (resources/calibration/cuda_judge.cu) against the host's: for
// every dtype, outputs with values on both sides of the tolerance, NaN, Inf, poison and unwritten
// elements are counted on the GPU exactly as compareRun counts them; the keyed checksum sees a
// one-bit change and depends on its key; the device's poison fill is the host's pattern.
// Label gpu: without a GPU every test skips, saying why.
#include "checks.h"
#include "cuda_backend.h"
#include "tensors.h"

#include <gtest/gtest.h>
#include "gtest_skip_code.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

using namespace hone::backends;

namespace {

CudaBackend& backend()
{
    static CudaBackend b([] {
        const char* dir = std::getenv("HONE_CACHE_DIR");
        return std::filesystem::path(dir && *dir ? dir : "/tmp/hone-tst-cuda-judge");
    }());
    return b;
}

#define REQUIRE_JUDGE()                                                                                       \
    do {                                                                                                      \
        if (!backend().available())                                                                           \
            GTEST_SKIP() << "no GPU: " << backend().unavailableReason();                                      \
        ASSERT_EQ(backend().prepareDeviceChecks(), "");                                                       \
    } while (0)

TensorDesc desc(hone_dtype dtype, int64_t n)
{
    TensorDesc d;
    d.name = "out";
    d.dtype = dtype;
    d.shape = { n };
    return d;
}

void setValue(HostTensor& t, size_t i, double v)
{
    auto* p = static_cast<unsigned char*>(t.data()) + i * hone::core::dtypeSize(t.desc().dtype);
    switch (t.desc().dtype) {
    case HONE_F32: {
        const float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
    }
    case HONE_F64:
        std::memcpy(p, &v, 8);
        break;
    case HONE_F16: {
        const uint16_t h = hone_f32_to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
    }
    case HONE_BF16: {
        const uint16_t h = hone_f32_to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
    }
    case HONE_I32: {
        const auto x = static_cast<int32_t>(v);
        std::memcpy(p, &x, 4);
        break;
    }
    case HONE_I64: {
        const auto x = static_cast<int64_t>(v);
        std::memcpy(p, &x, 8);
        break;
    }
    case HONE_U8:
        *p = static_cast<unsigned char>(v);
        break;
    }
}

struct OnDevice {
    DeviceBuffer got, want;
    OnDevice(const HostTensor& g, const HostTensor& w)
        : got(backend(), g.bytes())
        , want(backend(), w.bytes())
    {
        backend().upload(got.get(), g.data(), g.bytes());
        backend().upload(want.get(), w.data(), w.bytes());
    }
};

} // namespace

TEST(CudaJudge, CountsTheMismatchesCompareRunReportsForEveryDtype)
{
    REQUIRE_JUDGE();
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (hone_dtype dtype : { HONE_F32, HONE_F16, HONE_BF16, HONE_F64, HONE_I32, HONE_I64, HONE_U8 }) {
        SCOPED_TRACE(std::string(hone::core::dtypeName(dtype)));
        const Tolerance tol = toleranceFor(nlohmann::json::object(), dtype);
        const size_t n = 300007; // not a multiple of any block or word size
        HostTensor want(desc(dtype, static_cast<int64_t>(n)));
        HostTensor got(desc(dtype, static_cast<int64_t>(n)));
        std::mt19937_64 rng(static_cast<uint64_t>(dtype) + 11);
        std::uniform_real_distribution<double> value(-50, 50), factor(0.0, 2.0);
        const bool fp = isFloat(dtype);
        for (size_t i = 0; i < n; ++i) {
            const double w = fp ? value(rng) : std::floor(std::fabs(value(rng)) * 2);
            setValue(want, i, w);
            // Half the elements off by about the allowed error, either side of the limit.
            const double wv = want.at(i);
            const double allowed = tol.atol + tol.rtol * std::fabs(wv);
            setValue(got, i, (rng() & 1) ? wv + (fp ? factor(rng) * allowed : double(rng() % 2)) : wv);
        }
        // The special cases of compareRun, on float outputs.
        if (fp) {
            const double specials[][2] = { { nan, 1 }, { inf, 1 }, { 1, inf }, { inf, inf }, { -inf, inf },
                { nan, nan }, { 3, nan }, { 0, 0 }, { -0.0, 0 }, { 1e-30, 0 } };
            for (size_t k = 0; k < std::size(specials); ++k) {
                setValue(got, 1000 + k, specials[k][0]);
                setValue(want, 1000 + k, specials[k][1]);
            }
        }
        // Unwritten elements (poison where the reference wrote a value), and poison on both sides.
        HostTensor poison(desc(dtype, 1));
        poison.poison();
        const size_t width = hone::core::dtypeSize(dtype);
        for (size_t i : { size_t(5), size_t(77777), n - 1 })
            std::memcpy(static_cast<unsigned char*>(got.data()) + i * width, poison.data(), width);
        std::memcpy(static_cast<unsigned char*>(got.data()) + 9 * width, poison.data(), width);
        std::memcpy(static_cast<unsigned char*>(want.data()) + 9 * width, poison.data(), width);

        std::vector<HostTensor> g, w;
        g.push_back(HostTensor(got));
        w.push_back(HostTensor(want));
        const CheckOutcome host = compareRun("judge test", 1, {}, {}, {}, g, w, nlohmann::json::object());
        ASSERT_GT(host.mismatches, 3u) << "the data must hold mismatches for the test to mean anything";
        OnDevice dev(got, want);
        const auto count = backend().mismatchesOnDevice(dev.got.get(), dev.want.get(), dtype, n, tol.atol, tol.rtol);
        ASSERT_TRUE(count.has_value());
        EXPECT_EQ(*count, host.mismatches);
        // The same data made right is clean on both.
        OnDevice same(want, want);
        EXPECT_EQ(backend().mismatchesOnDevice(same.got.get(), same.want.get(), dtype, n, tol.atol, tol.rtol), 0u);
    }
}

TEST(CudaJudge, ChecksumSeesOneBitAndDependsOnTheKey)
{
    REQUIRE_JUDGE();
    for (size_t bytes : { size_t(1) << 20, size_t(12345) }) {
        HostTensor t(desc(HONE_U8, static_cast<int64_t>(bytes)));
        auto* p = static_cast<unsigned char*>(t.data());
        for (size_t i = 0; i < bytes; ++i)
            p[i] = static_cast<unsigned char>(i * 131 + 7);
        DeviceBuffer b(backend(), bytes);
        backend().upload(b.get(), t.data(), bytes);
        const auto a = backend().checksumOnDevice(b.get(), bytes, 42);
        ASSERT_TRUE(a.has_value());
        EXPECT_EQ(backend().checksumOnDevice(b.get(), bytes, 42), a) << "deterministic";
        EXPECT_NE(backend().checksumOnDevice(b.get(), bytes, 43), a) << "keyed";
        for (size_t at : { size_t(0), bytes / 2 + 3, bytes - 1 }) {
            p[at] ^= 0x10;
            backend().upload(b.get(), t.data(), bytes);
            EXPECT_NE(backend().checksumOnDevice(b.get(), bytes, 42), a) << "byte " << at;
            p[at] ^= 0x10;
        }
        // Two changes that cancel in a plain sum of words do not cancel here.
        auto* w = reinterpret_cast<uint64_t*>(p);
        w[0] += 1;
        w[1] -= 1;
        backend().upload(b.get(), t.data(), bytes);
        EXPECT_NE(backend().checksumOnDevice(b.get(), bytes, 42), a);
    }
}

TEST(CudaJudge, DevicePoisonIsTheHostPattern)
{
    REQUIRE_JUDGE();
    for (hone_dtype dtype : { HONE_F32, HONE_F16, HONE_BF16, HONE_F64, HONE_I32, HONE_I64, HONE_U8 }) {
        SCOPED_TRACE(std::string(hone::core::dtypeName(dtype)));
        const size_t n = 100003;
        HostTensor host(desc(dtype, static_cast<int64_t>(n)));
        host.poison();
        DeviceBuffer b(backend(), host.bytes());
        ASSERT_TRUE(backend().poisonOnDevice(b.get(), dtype, n));
        HostTensor back(desc(dtype, static_cast<int64_t>(n)));
        backend().download(back.data(), b.get(), back.bytes());
        EXPECT_EQ(std::memcmp(back.data(), host.data(), host.bytes()), 0);
    }
}

int main(int argc, char** argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    return gtestExitCode(RUN_ALL_TESTS());
}
