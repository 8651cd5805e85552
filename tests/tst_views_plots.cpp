// The workbench's plots: the occupancy calculator (views/occupancy_calc), the roofline, the
// occupancy-vs-block-size plot and the progress plot (views/*_plot), offscreen.
#include "core/store.h"
#include "result_values.h"
#include "views/occupancy_calc.h"
#include "views/occupancy_plot.h"
#include "views/progress_plot.h"
#include "views/roofline_plot.h"
#include "views/session_data.h"

#include <qcustomplot.h>

#include <QElapsedTimer>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <random>

using namespace hone::views;
using nlohmann::json;

namespace {

const char* const kCpuDevice = "cpu: Intel(R) Xeon(R) Processor (2 cores)";
const char* const kH100 = "cuda: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)";

// ---- test data: results as the worker reports them (docs/FORMATS.md, "Worker protocol"), built as
// the typed values the views read

namespace proto = hone::core::protocol;
using hone::testing::check;

proto::EvalResult cpuResult(double speedup, double intensity, double gflops, const std::string& bound,
    double peakGbps = 40.0, double peakGflops = 352.0)
{
    const double bytes = 8.0 * 4096 * 2048, flops = intensity * bytes;
    const double medianNs = flops / gflops;
    proto::EvalResult r = hone::testing::passed(hone::testing::timed(medianNs, speedup));
    proto::Roofline rf;
    rf.flops = flops;
    rf.bytes = bytes;
    rf.gflops = gflops;
    rf.gbps = gflops / intensity;
    rf.intensity = intensity;
    rf.peakGflops = peakGflops;
    rf.peakGbps = peakGbps;
    rf.fracCompute = gflops / peakGflops;
    rf.fracBandwidth = gflops / intensity / peakGbps;
    rf.floorNs = bytes / peakGbps;
    r.roofline = rf;
    r.diagnosis = proto::Diagnosis { bound, bound + "-bound", false, json::object() };
    r.environment.emplace();
    r.environment->device = kCpuDevice;
    r.environment->backend = "cpu";
    r.environment->compiler = "g++ (Debian 12.2.0-14) 12.2.0";
    r.environment->extra = { { "cores", 2 } };
    return r;
}

proto::EvalResult failedResult(const std::string& kind)
{
    proto::EvalResult r = proto::EvalResult::failed(
        "", proto::failureKindFromName(kind).value_or(proto::FailureKind::WorkerError), "check", "3 mismatches in y");
    r.compile = hone::testing::compiled(true, "");
    r.checks = std::vector { check(false, 0.5, 0.3, 3) };
    r.environment.emplace();
    r.environment->device = kCpuDevice;
    r.environment->backend = "cpu";
    return r;
}

// One occupancy.kernels[] entry as the CUDA backend writes it (backends/worker/cuda_backend.cpp).
proto::LaunchOccupancy occupancyKernel(const std::string& name, int block, int regs, long long staticSmem,
    long long dynSmem, int blocksPerSm, double occupancy, const std::string& limiter, long long grid = 4096)
{
    proto::LaunchOccupancy k;
    k.name = name;
    k.block = { block, 1, 1 };
    k.threads = grid * block;
    k.registers = regs;
    k.staticSmem = staticSmem;
    k.dynamicSmem = dynSmem;
    k.blocksPerSm = blocksPerSm;
    k.occupancy = occupancy;
    k.limiter = limiter;
    k.extra = { { "grid", { grid, 1, 1 } }, { "local_bytes", 0 },
        { "waves", static_cast<double>(grid) / (std::max(1, blocksPerSm) * 132.0) } };
    return k;
}

// A CUDA result on an H100 whose main kernel is `kernel` (plus a small helper launch).
proto::EvalResult cudaResult(double speedup, const proto::LaunchOccupancy& kernel, const std::string& device = kH100)
{
    proto::EvalResult r = cpuResult(speedup, 2.5, 900.0, "occupancy", 3350.0, 51000.0);
    r.environment->device = device;
    r.environment->backend = "cuda";
    r.environment->compiler = "Build cuda_12.4.r12.4/compiler.0";
    r.environment->extra = { { "cores", 16 } };
    proto::KernelResources res;
    res.name = kernel.name;
    res.registers = kernel.registers;
    res.smemStatic = kernel.staticSmem;
    res.stackBytes = 0;
    res.spillStores = 0;
    res.spillLoads = 0;
    res.extra = { { "mangled", "_Z6kernelPf" } };
    r.compile->resources = { res };
    proto::Occupancy occ;
    occ.kernels = { occupancyKernel("zero_fill(float*)", 128, 8, 0, 0, 16, 1.0, "none", 64), kernel };
    occ.theoretical = kernel.occupancy;
    occ.limiter = kernel.limiter;
    occ.mainKernel = kernel.name;
    r.occupancy = occ;
    return r;
}

NodeInfo node(qint64 id, qint64 parent, const QString& origin = QStringLiteral("mutation"))
{
    NodeInfo n;
    n.id = id;
    n.parent = parent;
    n.seq = id;
    n.origin = origin;
    if (id > 0) {
        n.sourceHash = QStringLiteral("%1").arg(id, 64, 16, QLatin1Char('0'));
        n.sourceName = QStringLiteral("tuned.cu");
    }
    return n;
}

NodeInfo evaluated(NodeInfo n, const proto::EvalResult& result, double atSeconds)
{
    applyResult(n, result);
    n.evaluatedAtSeconds = atSeconds;
    return n;
}

/// Something was drawn: the image is not empty and holds several colours.
int distinctColours(const QImage& image)
{
    QSet<QRgb> seen;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2) {
            seen.insert(image.pixel(x, y));
            if (seen.size() > 64)
                return static_cast<int>(seen.size());
        }
    return static_cast<int>(seen.size());
}

const QString kBounds[] = { QStringLiteral("memory"), QStringLiteral("compute"), QStringLiteral("latency"),
    QStringLiteral("occupancy"), QString() };

/// A session of `count` candidates under the root: most ok with a roofline point spread over
/// four decades, every seventh failed. Nodes arrive pending and get their result a batch later.
struct SyntheticSession {
    int ok = 0;
    int failed = 0;
    std::map<QString, int> byBound;
};

SyntheticSession feed(SessionData& data, int count, int batches, std::mt19937& rng, RooflinePlot* plot = nullptr)
{
    SyntheticSession s;
    std::uniform_real_distribution<double> logI(-2, 2), frac(0.01, 0.9);
    std::vector<NodeInfo> all;
    all.push_back(node(0, -1, QStringLiteral("root")));
    for (int i = 1; i <= count; ++i) {
        NodeInfo n = node(i, i == 1 ? 0 : 1 + static_cast<int>(rng() % static_cast<unsigned>(i - 1)));
        if (i % 7 == 0) {
            n = evaluated(n, failedResult("wrong_result"), i);
            ++s.failed;
        } else {
            const double intensity = std::pow(10.0, logI(rng));
            const double roof = std::min(352.0, 40.0 * intensity);
            const QString bound = kBounds[static_cast<size_t>(i % 5)];
            n = evaluated(n, cpuResult(0.5 + frac(rng) * 2, intensity, roof * frac(rng), bound.toStdString()), i);
            ++s.ok;
            ++s.byBound[bound];
        }
        all.push_back(n);
    }
    // Batch k adds nodes of the slice k as pending and evaluates those of slice k-1.
    const size_t per = (all.size() + static_cast<size_t>(batches) - 1) / static_cast<size_t>(batches);
    for (int b = 0; b <= batches; ++b) {
        SessionData::Batch batch;
        const size_t lo = static_cast<size_t>(b) * per, hi = std::min(all.size(), lo + per);
        for (size_t i = lo; i < hi; ++i) {
            NodeInfo pending = all[i];
            if (i > 0) {
                pending.status = NodeInfo::Status::Pending;
                pending.result.reset();
                pending.intensity = pending.gflops = 0;
                pending.evaluatedAtSeconds = -1;
            }
            batch.nodes.push_back(pending);
        }
        if (b > 0) {
            const size_t plo = static_cast<size_t>(b - 1) * per, phi = std::min(all.size(), plo + per);
            for (size_t i = std::max<size_t>(plo, 1); i < phi; ++i)
                batch.nodes.push_back(all[i]);
        }
        data.apply(batch);
        if (plot)
            plot->flush();
    }
    return s;
}

} // namespace

class TestViewsPlots : public QObject {
    Q_OBJECT

private slots:
    // ---- occupancy calculator --------------------------------------------------------------
    void occupancy_data();
    void occupancy();
    void occupancyRejectsImpossibleLaunches_data();
    void occupancyRejectsImpossibleLaunches();
    void presets();
    void crossCheckWithWorkerReport();

    // ---- roofline ------------------------------------------------------------------------------
    void rooflineEmptyState();
    void rooflinePointsAndCeilings();
    void rooflineClickSelectsNearest();
    void roofline5000Points();
    void rooflineMeasuredIntensityAndLegendOutside();

    // ---- occupancy plot ------------------------------------------------------------------------
    void occupancyPlotMarksBlockSize();
    void occupancyPlotCompilerResourcesOnly();
    void occupancyPlotCpuNode();

    // ---- progress ------------------------------------------------------------------------------
    void progressAppendsIncrementally();
    void progressTokens();

    // ---- all plots draw something; a real recorded CPU session ---------------------------------
    void plotsDrawSomething();
    void realCpuSession();
};

// Values by hand from the CUDA occupancy rules (registers per warp rounded to 256 and placed per
// quarter-SM, shared memory + 1 KiB reserve rounded to 128 bytes).
void TestViewsPlots::occupancy_data()
{
    QTest::addColumn<QString>("arch");
    QTest::addColumn<int>("block");
    QTest::addColumn<int>("regs");
    QTest::addColumn<qlonglong>("staticSmem");
    QTest::addColumn<qlonglong>("dynSmem");
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("warps");
    QTest::addColumn<double>("occupancy");
    QTest::addColumn<int>("limiter");

    using L = OccupancyLimiter;
    QTest::addRow("sm_90 256 threads 32 regs: full") << "sm_90" << 256 << 32 << 0LL << 0LL << 8 << 64 << 1.0 << int(L::None);
    QTest::addRow("sm_90 256 threads 128 regs") << "sm_90" << 256 << 128 << 0LL << 0LL << 2 << 16 << 0.25 << int(L::Registers);
    QTest::addRow("sm_90 128 threads 48 KiB smem") << "sm_90" << 128 << 32 << 0LL << 49152LL << 4 << 16 << 0.25 << int(L::SharedMemory);
    QTest::addRow("sm_90 256 threads 96 regs") << "sm_90" << 256 << 96 << 0LL << 0LL << 2 << 16 << 0.25 << int(L::Registers);
    QTest::addRow("sm_90 128 threads 64 regs") << "sm_90" << 128 << 64 << 0LL << 0LL << 8 << 32 << 0.5 << int(L::Registers);
    QTest::addRow("sm_90 1024 threads 64 regs") << "sm_90" << 1024 << 64 << 0LL << 0LL << 1 << 32 << 0.5 << int(L::Registers);
    QTest::addRow("sm_90 32 threads: 32-block cap") << "sm_90" << 32 << 32 << 0LL << 0LL << 32 << 32 << 0.5 << int(L::Blocks);
    QTest::addRow("sm_90 768 threads: thread slots") << "sm_90" << 768 << 32 << 0LL << 0LL << 2 << 48 << 0.75 << int(L::Warps);
    // 96 regs: 3072 per warp, 5 warps per quarter-SM = 20 (not 65536/3072 = 21).
    QTest::addRow("sm_90 32 threads 96 regs: sub-partitions") << "sm_90" << 32 << 96 << 0LL << 0LL << 20 << 20 << 20.0 / 64 << int(L::Registers);
    // 45666 + 1024 = 46690 bytes round to 46720: 4 blocks (46690 would give 5).
    QTest::addRow("sm_90 smem rounds to 128 B") << "sm_90" << 128 << 32 << 0LL << 45666LL << 4 << 16 << 0.25 << int(L::SharedMemory);
    QTest::addRow("sm_89 256 threads 32 regs: full") << "sm_89" << 256 << 32 << 0LL << 0LL << 6 << 48 << 1.0 << int(L::None);
    QTest::addRow("sm_89 128 threads 32 KiB static") << "sm_89" << 128 << 32 << 32768LL << 0LL << 3 << 12 << 0.25 << int(L::SharedMemory);
    QTest::addRow("sm_80 128 threads 100 KiB dynamic") << "sm_80" << 128 << 32 << 0LL << 102400LL << 1 << 4 << 4.0 / 64 << int(L::SharedMemory);
    QTest::addRow("sm_80 256 threads 128 regs") << "sm_80" << 256 << 128 << 0LL << 0LL << 2 << 16 << 0.25 << int(L::Registers);
}

void TestViewsPlots::occupancy()
{
    QFETCH(QString, arch);
    QFETCH(int, block);
    QFETCH(int, regs);
    QFETCH(qlonglong, staticSmem);
    QFETCH(qlonglong, dynSmem);
    QFETCH(int, blocks);
    QFETCH(int, warps);
    QFETCH(double, occupancy);
    QFETCH(int, limiter);
    const auto d = DeviceLimits::forArch(arch.toStdString());
    QVERIFY(d);
    const auto r = computeOccupancy(*d, { block, regs, staticSmem, dynSmem });
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.blocksPerSm, blocks);
    QCOMPARE(r.activeWarps, warps);
    QCOMPARE(r.occupancy, occupancy);
    QCOMPARE(limiterName(r.limiter), limiterName(static_cast<OccupancyLimiter>(limiter)));
    QCOMPARE(occupancyOf(*d, block, r.blocksPerSm), occupancy);
}

void TestViewsPlots::occupancyRejectsImpossibleLaunches_data()
{
    QTest::addColumn<int>("block");
    QTest::addColumn<int>("regs");
    QTest::addColumn<qlonglong>("dynSmem");
    QTest::addColumn<QString>("why");
    QTest::addRow("block over 1024") << 2048 << 32 << 0LL << "exceeds the limit of 1024";
    QTest::addRow("255 regs x 1024 threads") << 1024 << 255 << 0LL << "too many resources requested for launch";
    QTest::addRow("256 regs per thread") << 128 << 256 << 0LL << "exceed the limit of 255";
    QTest::addRow("228 KiB of smem") << 128 << 32 << 228LL * 1024 << "exceed the 227 KiB limit";
}

void TestViewsPlots::occupancyRejectsImpossibleLaunches()
{
    QFETCH(int, block);
    QFETCH(int, regs);
    QFETCH(qlonglong, dynSmem);
    QFETCH(QString, why);
    const auto r = computeOccupancy(DeviceLimits::sm90(), { block, regs, 0, dynSmem });
    QCOMPARE(r.blocksPerSm, 0);
    QCOMPARE(r.occupancy, 0.0);
    QVERIFY(!r.launchable());
    QVERIFY2(QString::fromStdString(r.error).contains(why), r.error.c_str());
    // The largest block that does fit a 227 KiB block on sm_90: exactly one.
    QCOMPARE(computeOccupancy(DeviceLimits::sm90(), { 128, 32, 0, 227LL * 1024 }).blocksPerSm, 1);
}

void TestViewsPlots::presets()
{
    const auto h = DeviceLimits::sm90();
    QCOMPARE(h.maxThreadsPerSm, 2048);
    QCOMPARE(h.maxBlocksPerSm, 32);
    QCOMPARE(h.maxWarpsPerSm, 64);
    QCOMPARE(h.registersPerSm, 65536);
    QCOMPARE(h.sharedPerSm, 228LL * 1024);
    QCOMPARE(h.sharedPerBlock, 227LL * 1024);
    QCOMPARE(h.reservedSharedPerBlock, 1024LL);
    QCOMPARE(h.sharedAllocationUnit, 128);
    QCOMPARE(h.registerAllocationUnit, 256);
    QCOMPARE(DeviceLimits::forArch("sm_90a")->arch, std::string("sm_90"));
    QCOMPARE(DeviceLimits::forArch("8.9")->arch, std::string("sm_89"));
    QVERIFY(!DeviceLimits::forArch("sm_70"));

    auto archOf = [](const std::string& device) {
        proto::EvalResult r;
        r.status = proto::EvalStatus::Ok;
        r.environment.emplace();
        r.environment->device = device;
        const auto d = DeviceLimits::fromResult(r);
        return d ? QString::fromStdString(d->arch) : QStringLiteral("none");
    };
    QCOMPARE(archOf(kH100), QStringLiteral("sm_90"));
    QCOMPARE(archOf("cuda: NVIDIA A100-SXM4-80GB (sm_80, 108 SMs)"), QStringLiteral("sm_80"));
    QCOMPARE(archOf("cuda: NVIDIA L4 (sm_89, 58 SMs)"), QStringLiteral("sm_89"));
    QCOMPARE(archOf("cuda: NVIDIA H200"), QStringLiteral("sm_90")); // by name, no arch in the string
    QCOMPARE(archOf(kCpuDevice), QStringLiteral("none"));
    QCOMPARE(archOf("cuda: Tesla V100 (sm_70, 80 SMs)"), QStringLiteral("none"));
    QCOMPARE(QString::fromStdString(DeviceLimits::fromResult(cudaResult(1, occupancyKernel("k", 256, 32, 0, 0, 8, 1.0, "none")))->arch),
        QStringLiteral("sm_90"));
    QVERIFY(!DeviceLimits::fromResult(cpuResult(1, 1, 1, "memory")));
}

// The worker's `occupancy` block as the CUDA backend writes it. No result from a real GPU run is
// checked in, so blocks_per_sm here is what cuOccupancyMaxActiveBlocksPerMultiprocessor returns for
// these resources on sm_90 by the occupancy rules, and `limiter` is what the worker's own
// per-resource comparison names; the calculator must agree with both, through mainKernelLaunch.
void TestViewsPlots::crossCheckWithWorkerReport()
{
    const std::vector<proto::LaunchOccupancy> kernels = {
        occupancyKernel("softmax_rows(float const*, float*, int, int)", 256, 40, 0, 0, 6, 0.75, "registers"),
        occupancyKernel("reduce_sum(float const*, float*, int)", 128, 30, 0, 0, 16, 1.0, "none"),
        occupancyKernel("gemm_tile<128, 64>(bf16 const*, bf16 const*, float*)", 128, 128, 32768, 16384, 4, 0.25, "registers"),
        occupancyKernel("scan_block(int*, int)", 32, 96, 0, 0, 20, 0.3125, "registers"),
        occupancyKernel("big_tile(float*)", 256, 32, 0, 100 * 1024, 2, 0.25, "shared memory"),
    };
    for (const auto& k : kernels) {
        const auto r = cudaResult(1.5, k);
        const auto launch = mainKernelLaunch(r);
        QVERIFY(launch);
        QCOMPARE(launch->name, k.name);
        QVERIFY(launch->hasBlock);
        const auto d = DeviceLimits::fromResult(r);
        QVERIFY(d);
        const auto mine = computeOccupancy(*d, launch->resources);
        const QByteArray what = QByteArray::fromStdString(launch->name);
        QVERIFY2(mine.blocksPerSm == launch->reportedBlocksPerSm, what.constData());
        QVERIFY2(qFuzzyCompare(mine.occupancy, launch->reportedOccupancy), what.constData());
        QVERIFY2(limiterName(mine.limiter) == launch->reportedLimiter, what.constData());
    }
    // Without `occupancy` the compiler's numbers stand in, with no block size.
    proto::EvalResult r = cudaResult(1.5, kernels[0]);
    r.occupancy.reset();
    const auto launch = mainKernelLaunch(r);
    QVERIFY(launch);
    QVERIFY(!launch->hasBlock);
    QCOMPARE(launch->resources.registers, 40);
    QVERIFY(isCudaResult(r));
    QVERIFY(!isCudaResult(cpuResult(1, 1, 1, "memory")));
}

void TestViewsPlots::rooflineEmptyState()
{
    SessionData data;
    Selection sel;
    RooflinePlot plot(&data, &sel);
    QVERIFY(plot.isEmptyState());
    QVERIFY(plot.emptyText().contains(QStringLiteral("No roofline yet")));

    SessionData::Batch b;
    b.nodes = { node(0, -1, QStringLiteral("root")), evaluated(node(1, 0, QStringLiteral("seed")), failedResult("wrong_result"), 1) };
    data.apply(b);
    QTRY_VERIFY(plot.emptyText().contains(QStringLiteral("1 evaluation(s) failed")));
    QCOMPARE(plot.failedCount(), 1);

    SessionData::Batch b2;
    b2.nodes = { evaluated(node(2, 0), cpuResult(1.2, 0.6, 3.0, "latency"), 2) };
    data.apply(b2);
    QTRY_VERIFY(!plot.isEmptyState());
    QCOMPARE(plot.pointCount(), 1);

    data.clear();
    QTRY_VERIFY(plot.isEmptyState());
    QCOMPARE(plot.pointCount(), 0);
}

void TestViewsPlots::rooflinePointsAndCeilings()
{
    SessionData data;
    Selection sel;
    RooflinePlot plot(&data, &sel);
    plot.resize(900, 600);
    std::mt19937 rng(7);
    const SyntheticSession s = feed(data, 120, 4, rng);
    QTRY_COMPARE(plot.pointCount(), s.ok);
    QVERIFY(s.failed > 0);
    QCOMPARE(plot.failedCount(), s.failed);
    QVERIFY(plot.failedNote().contains(QString::number(s.failed)));
    QCOMPARE(plot.categoryGraph(RooflinePlot::Memory)->dataCount(), s.byBound.at(QStringLiteral("memory")));
    QCOMPARE(plot.categoryGraph(RooflinePlot::Compute)->dataCount(), s.byBound.at(QStringLiteral("compute")));
    QCOMPARE(plot.categoryGraph(RooflinePlot::Unclassified)->dataCount(), s.byBound.at(QString()));

    // The ceilings: a bandwidth slope peak_gbps x I up to the ridge, then the flat compute roof.
    const Ceilings& c = data.ceilings();
    const double bw = c.peakGbps, peak = c.peakGflops;
    QCOMPARE(bw, 40.0);
    QCOMPARE(peak, 352.0);
    auto* slope = plot.bandwidthRoof()->data().data();
    QVERIFY(slope->size() >= 2);
    for (auto it = slope->constBegin(); it != slope->constEnd(); ++it)
        QVERIFY(qFuzzyCompare(it->value, bw * it->key));
    QCOMPARE((slope->constEnd() - 1)->key, peak / bw);
    auto* roof = plot.computeRoof()->data().data();
    QVERIFY(roof->size() >= 2);
    QCOMPARE(roof->constBegin()->key, peak / bw);
    for (auto it = roof->constBegin(); it != roof->constEnd(); ++it)
        QCOMPARE(it->value, peak);
    QCOMPARE(plot.bandwidthLabel(), QStringLiteral("40 GB/s"));
    QCOMPARE(plot.computeLabel(), QStringLiteral("352 GFLOP/s"));
    QVERIFY(plot.plot()->plotLayout()->elementCount() > 0);
    // The device names the plot.
    auto* title = qobject_cast<QCPTextElement*>(plot.plot()->plotLayout()->element(0, 0));
    QVERIFY(title);
    QVERIFY(title->text().contains(QString::fromLatin1(kCpuDevice)));

    // The best-so-far trajectory: one vertex per improvement, in evaluation order.
    const auto traj = data.bestTrajectory();
    QVERIFY(traj.size() >= 2);
    QCOMPARE(plot.trajectory()->dataCount(), static_cast<int>(traj.size()));
    const NodeInfo* last = data.node(traj.back());
    QCOMPARE((plot.trajectory()->data()->constEnd() - 1)->key, last->intensity);
    QCOMPARE((plot.trajectory()->data()->constEnd() - 1)->value, last->gflops);

    // A plotted node that changes bound moves between graphs; the total stays.
    NodeInfo moved = *data.node(1);
    QCOMPARE(moved.bound, QStringLiteral("compute"));
    moved.bound = QStringLiteral("memory");
    SessionData::Batch b;
    b.nodes = { moved };
    data.apply(b);
    QTRY_COMPARE(plot.categoryGraph(RooflinePlot::Memory)->dataCount(), s.byBound.at(QStringLiteral("memory")) + 1);
    QCOMPARE(plot.categoryGraph(RooflinePlot::Compute)->dataCount(), s.byBound.at(QStringLiteral("compute")) - 1);
    QCOMPARE(plot.pointCount(), s.ok);

    // The selection is outlined where its node is.
    sel.setCurrent(3);
    QTRY_COMPARE(plot.selectedMarker()->dataCount(), 1);
    QCOMPARE(plot.selectedMarker()->data()->constBegin()->key, data.node(3)->intensity);
    sel.setCurrent(7); // failed: not plotted, so nothing is outlined
    QTRY_COMPARE(plot.selectedMarker()->dataCount(), 0);
}

// Issue 23: candidates whose profile counted DRAM bytes sit at their own measured intensity
// (FLOPs / DRAM bytes), not all on the problem's one vertical line; the legend sits outside the
// axis rect, so it covers no point.
void TestViewsPlots::rooflineMeasuredIntensityAndLegendOutside()
{
    SessionData data;
    Selection sel;
    RooflinePlot plot(&data, &sel);
    plot.resize(700, 260); // a short bottom dock
    SessionData::Batch b;
    b.nodes.push_back(node(0, -1, QStringLiteral("root")));
    const double moved[] = { 2.0, 0.5, 1.0 }; // DRAM bytes as a multiple of the problem's bytes
    for (int i = 1; i <= 3; ++i) {
        proto::EvalResult r = cpuResult(1.0 + i, 2.5, 30.0 * i, "memory");
        r.profile.emplace();
        r.profile->dramBytes = *r.roofline->bytes * moved[i - 1];
        r.profile->extra = { { "tool", "ncu" }, { "kernels", json::array() } };
        b.nodes.push_back(evaluated(node(i, 0), r, i));
    }
    const proto::EvalResult unprofiled = cpuResult(1.5, 2.5, 20.0, "memory");
    b.nodes.push_back(evaluated(node(4, 0), unprofiled, 4));
    data.apply(b);
    plot.flush();
    QCOMPARE(plot.pointCount(), 4);
    for (int i = 1; i <= 3; ++i) {
        QVERIFY(data.node(i)->intensityMeasured);
        QVERIFY(qFuzzyCompare(data.node(i)->intensity, 2.5 / moved[i - 1]));
    }
    QVERIFY(!data.node(4)->intensityMeasured);
    QCOMPARE(data.node(4)->intensity, 2.5);
    QSet<double> xs;
    for (auto it = plot.categoryGraph(RooflinePlot::Memory)->data()->constBegin();
         it != plot.categoryGraph(RooflinePlot::Memory)->data()->constEnd(); ++it)
        xs.insert(it->key);
    QCOMPARE(xs.size(), 3); // 1.25, 5 and 2.5 (twice: measured 1x and the unprofiled one)
    QVERIFY2(plot.plot()->xAxis->label().contains(QLatin1String("measured for 3 of 4")),
        qPrintable(plot.plot()->xAxis->label()));

    plot.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plot));
    plot.plot()->replot();
    const QRect legend = plot.plot()->legend->outerRect();
    const QRect axes = plot.plot()->axisRect()->rect();
    QVERIFY(legend.isValid() && axes.isValid());
    QVERIFY2(!legend.intersects(axes), "the legend lies over the plot's data area");
}

void TestViewsPlots::rooflineClickSelectsNearest()
{
    SessionData data;
    Selection sel;
    RooflinePlot plot(&data, &sel);
    plot.resize(900, 600);
    plot.show();
    std::mt19937 rng(11);
    const SyntheticSession s = feed(data, 60, 2, rng);
    // One point well away from the cloud, so its pixel is its own.
    SessionData::Batch b;
    NodeInfo lone = evaluated(node(61, 1), cpuResult(2.0, 400.0, 30.0, "latency"), 70);
    b.nodes = { lone };
    data.apply(b);
    plot.flush();
    QCOMPARE(plot.pointCount(), s.ok + 1);

    QCustomPlot* p = plot.plot();
    const QPoint px(qRound(p->xAxis->coordToPixel(400.0)), qRound(p->yAxis->coordToPixel(30.0)));
    QVERIFY(p->axisRect()->rect().contains(px));
    QSignalSpy spy(&sel, &Selection::currentChanged);
    QTest::mouseClick(p, Qt::LeftButton, Qt::NoModifier, px);
    QCOMPARE(sel.current(), qint64(61));
    QCOMPARE(spy.count(), 1);
    QTRY_COMPARE(plot.selectedMarker()->dataCount(), 1);

    // By data coordinate: a little off the point still finds it; the nearest of the cloud wins.
    sel.setCurrent(-1);
    QCOMPARE(plot.selectNearest(420.0, 31.0), qint64(61));
    QCOMPARE(sel.current(), qint64(61));
    const NodeInfo* target = data.node(5);
    QVERIFY(target->status == NodeInfo::Status::Ok);
    const qint64 hit = plot.selectNearest(target->intensity, target->gflops);
    QVERIFY(hit >= 0);
    const NodeInfo* got = data.node(hit);
    // The chosen node lies on the same pixel as the target (points may overlap exactly).
    QVERIFY(std::abs(p->xAxis->coordToPixel(got->intensity) - p->xAxis->coordToPixel(target->intensity)) < 1.0);
    QVERIFY(std::abs(p->yAxis->coordToPixel(got->gflops) - p->yAxis->coordToPixel(target->gflops)) < 1.0);
    QCOMPARE(sel.current(), hit);

    // Empty space selects nothing and keeps the selection.
    const QPoint corner = p->axisRect()->topLeft() + QPoint(3, 3);
    QCOMPARE(plot.nodeAtPixel(corner), qint64(-1));
    QTest::mouseClick(p, Qt::LeftButton, Qt::NoModifier, corner);
    QCOMPARE(sel.current(), hit);
}

void TestViewsPlots::roofline5000Points()
{
    SessionData data;
    Selection sel;
    RooflinePlot plot(&data, &sel);
    plot.resize(900, 600);
    plot.show();
    const int plottables = plot.plot()->plottableCount();
    const int items = plot.plot()->itemCount();
    std::mt19937 rng(3);
    QElapsedTimer t;
    t.start();
    const SyntheticSession s = feed(data, 5833, 10, rng, &plot);
    const qint64 ms = t.elapsed();
    QCOMPARE(s.ok, 5000);
    QCOMPARE(plot.pointCount(), 5000);
    QCOMPARE(plot.failedCount(), 833);
    QCOMPARE(plot.plot()->plottableCount(), plottables); // graphs per bound, not items per point
    QCOMPARE(plot.plot()->itemCount(), items);
    QElapsedTimer r;
    r.start();
    plot.plot()->replot(QCustomPlot::rpImmediateRefresh);
    qInfo("5000 points: 11 batches applied and flushed in %lld ms; one replot %lld ms", ms, r.elapsed());
}

void TestViewsPlots::occupancyPlotMarksBlockSize()
{
    SessionData data;
    Selection sel;
    OccupancyPlot plot(&data, &sel);
    QVERIFY(plot.isEmptyState());
    QVERIFY(plot.emptyText().contains(QStringLiteral("Select a node")));

    const proto::LaunchOccupancy kernel = occupancyKernel("softmax_rows(float const*, float*, int, int)", 256, 40, 0, 0, 6, 0.75, "registers");
    SessionData::Batch b;
    b.nodes = { node(0, -1, QStringLiteral("root")), node(1, 0, QStringLiteral("seed")) };
    data.apply(b);
    sel.setCurrent(1);
    QVERIFY(plot.isEmptyState());
    QVERIFY(plot.emptyText().contains(QStringLiteral("not been evaluated")));

    // The result arrives for the selected node: the plot follows.
    SessionData::Batch b2;
    b2.nodes = { evaluated(node(1, 0, QStringLiteral("seed")), cudaResult(1.0, kernel), 3) };
    data.apply(b2);
    QVERIFY(!plot.isEmptyState());
    QCOMPARE(plot.arch(), QStringLiteral("sm_90"));
    QCOMPARE(plot.markedBlockSize(), 256);
    QCOMPARE(plot.markedOccupancy(), 0.75);
    QCOMPARE(plot.marker()->dataCount(), 1);
    QCOMPARE(plot.marker()->data()->constBegin()->key, 256.0);
    QCOMPARE(plot.marker()->data()->constBegin()->value, 75.0);
    QVERIFY2(plot.markerLabel().contains(QStringLiteral("75%")), qPrintable(plot.markerLabel()));
    QVERIFY(plot.markerLabel().contains(QStringLiteral("registers")));
    QVERIFY(plot.markerLabel().contains(QStringLiteral("6 blocks/SM")));
    QVERIFY(!plot.markerLabel().contains(QStringLiteral("driver reported"))); // it agrees
    QVERIFY(plot.heading().contains(QStringLiteral("softmax_rows")));
    QVERIFY(plot.heading().contains(QStringLiteral("40 registers")));

    // The curves over 32..1024: the total and each limit alone, at the candidate's block size and
    // where registers stop mattering (32 regs would be full; 40 regs caps at 48 warps = 75%).
    QCOMPARE(plot.occupancyCurve()->dataCount(), 32);
    auto at = [](QCPGraph* g, double block) { return g->data()->findBegin(block, false)->value; };
    QCOMPARE(at(plot.occupancyCurve(), 256), 75.0);
    QCOMPARE(at(plot.registerLimitCurve(), 256), 75.0);
    QCOMPARE(at(plot.sharedLimitCurve(), 256), 100.0);
    QCOMPARE(at(plot.slotLimitCurve(), 256), 100.0);
    QCOMPARE(at(plot.occupancyCurve(), 32), 50.0);   // 32 blocks of one warp
    QCOMPARE(at(plot.slotLimitCurve(), 32), 50.0);
    QCOMPARE(at(plot.occupancyCurve(), 1024), 50.0); // 48 warps of registers hold one 32-warp block
    QVERIFY(plot.registerLimitCurve()->pen().style() == Qt::DashLine);
    QVERIFY(plot.sharedLimitCurve()->pen().style() == Qt::DashLine);

    // When the calculator and the driver disagree, the label says what the driver reported.
    proto::LaunchOccupancy odd = kernel;
    odd.blocksPerSm = 4;
    odd.occupancy = 0.5;
    SessionData::Batch b3;
    b3.nodes = { evaluated(node(2, 1), cudaResult(1.1, odd), 4) };
    data.apply(b3);
    sel.setCurrent(2);
    QVERIFY(plot.markerLabel().contains(QStringLiteral("driver reported 4 blocks/SM (50%)")));

    // Shared memory as the limiter: 48 KiB at block 128 is 4 blocks, 25%.
    const proto::LaunchOccupancy smemKernel = occupancyKernel("tile(float*)", 128, 32, 0, 49152, 4, 0.25, "shared memory");
    SessionData::Batch b4;
    b4.nodes = { evaluated(node(3, 1), cudaResult(1.1, smemKernel), 5) };
    data.apply(b4);
    sel.setCurrent(3);
    QCOMPARE(plot.markedBlockSize(), 128);
    QCOMPARE(plot.markedOccupancy(), 0.25);
    QVERIFY(plot.markerLabel().contains(QStringLiteral("shared memory")));
    QCOMPARE(at(plot.sharedLimitCurve(), 128), 25.0);
    QCOMPARE(at(plot.sharedLimitCurve(), 256), 50.0); // the same 4 blocks hold twice the warps
}

void TestViewsPlots::occupancyPlotCompilerResourcesOnly()
{
    SessionData data;
    Selection sel;
    OccupancyPlot plot(&data, &sel);
    proto::EvalResult r = cudaResult(0.9, occupancyKernel("k(float*)", 256, 128, 0, 0, 2, 0.25, "registers"));
    r.occupancy.reset();
    SessionData::Batch b;
    b.nodes = { node(0, -1, QStringLiteral("root")), evaluated(node(1, 0), r, 2) };
    data.apply(b);
    sel.setCurrent(1);
    QVERIFY(!plot.isEmptyState());
    QCOMPARE(plot.markedBlockSize(), -1);
    QCOMPARE(plot.marker()->dataCount(), 0);
    QVERIFY(plot.markerLabel().contains(QStringLiteral("block size unknown")));
    QCOMPARE(plot.occupancyCurve()->dataCount(), 32);
    QCOMPARE(plot.occupancyCurve()->data()->findBegin(256, false)->value, 25.0);
}

void TestViewsPlots::occupancyPlotCpuNode()
{
    SessionData data;
    Selection sel;
    OccupancyPlot plot(&data, &sel);
    SessionData::Batch b;
    b.nodes = { node(0, -1, QStringLiteral("root")), evaluated(node(1, 0, QStringLiteral("seed")), cpuResult(1, 0.6, 2.0, "latency"), 1) };
    data.apply(b);
    sel.setCurrent(1);
    QVERIFY(plot.isEmptyState());
    QVERIFY2(plot.emptyText().contains(QStringLiteral("occupancy applies to GPU kernels; node 1 ran on cpu: Intel"),
                 Qt::CaseInsensitive),
        qPrintable(plot.emptyText()));
    QCOMPARE(plot.markedBlockSize(), -1);
    sel.setCurrent(0);
    QVERIFY(plot.emptyText().contains(QStringLiteral("root")));
}

void TestViewsPlots::progressAppendsIncrementally()
{
    SessionData data;
    ProgressPlot plot(&data);
    QCOMPARE(plot.bestGraph()->dataCount(), 0);
    QVERIFY(plot.statsText().contains(QStringLiteral("No evaluations")));

    auto point = [](double s, int evals, int fails, double best) {
        ProgressPoint p;
        p.seconds = s;
        p.evaluations = evals;
        p.failures = fails;
        p.bestSpeedup = best;
        p.evaluationsPerMinute = s > 0 ? evals * 60.0 / s : 0;
        return p;
    };
    SessionData::Batch b;
    b.progress = { point(2, 1, 0, 1.0), point(5, 2, 1, 1.0), point(9, 3, 1, 1.4) };
    data.apply(b);
    QCOMPARE(plot.bestGraph()->dataCount(), 3);
    QCOMPARE(plot.evaluationsGraph()->dataCount(), 3);
    QCOMPARE(plot.failuresGraph()->dataCount(), 3);
    QCOMPARE(plot.bestGraph()->lineStyle(), QCPGraph::lsStepLeft);
    QCOMPARE((plot.bestGraph()->data()->constEnd() - 1)->value, 1.4);

    // Appending keeps what is there: a mark put on the first sample survives the next batch
    // (a rebuild would rewrite it).
    plot.bestGraph()->data()->begin()->value = 99;
    SessionData::Batch b2;
    b2.progress = { point(12, 4, 1, 2.1), point(90, 5, 1, 2.1) };
    data.apply(b2);
    QCOMPARE(plot.bestGraph()->dataCount(), 5);
    QCOMPARE(plot.bestGraph()->data()->constBegin()->value, 99.0);
    QCOMPARE((plot.evaluationsGraph()->data()->constEnd() - 1)->key, 90.0);
    QCOMPARE((plot.evaluationsGraph()->data()->constEnd() - 1)->value, 5.0);
    QCOMPARE(plot.pointsConsumed(), 5);
    QVERIFY2(plot.statsText().contains(QStringLiteral("5 evaluations · 1 failed · best 2.10x · 3.3 eval/min")),
        qPrintable(plot.statsText()));
    QVERIFY(plot.statsText().contains(QStringLiteral("no LLM calls")));
    QVERIFY(plot.tokenPlot()->isHidden());
    // The redraw catches up within 100 ms and the axes cover the data.
    QTRY_VERIFY(plot.plot()->xAxis->range().upper >= 90);
    QTRY_VERIFY(plot.plot()->yAxis->range().upper > 2.1);

    data.clear();
    QCOMPARE(plot.bestGraph()->dataCount(), 0);
    QCOMPARE(plot.pointsConsumed(), 0);
}

void TestViewsPlots::progressTokens()
{
    SessionData data;
    ProgressPlot plot(&data);
    ProgressPoint p;
    p.seconds = 30;
    p.evaluations = 4;
    p.bestSpeedup = 1.3;
    p.evaluationsPerMinute = 8;
    SessionData::Batch b;
    b.progress = { p };
    p.seconds = 60;
    p.evaluations = 8;
    p.tokensIn = 12000;
    p.tokensOut = 3400;
    p.costUsd = 0.0615;
    b.progress.push_back(p);
    data.apply(b);
    QCOMPARE(plot.tokensGraph()->dataCount(), 1); // only samples that know the model's totals
    QCOMPARE(plot.tokensGraph()->data()->constBegin()->value, 15400.0);
    QCOMPARE(plot.costGraph()->data()->constBegin()->value, 0.0615);
    QVERIFY2(plot.statsText().contains(QStringLiteral("12,000 in / 3,400 out tokens · $0.0615")), qPrintable(plot.statsText()));
    QTRY_VERIFY(!plot.tokenPlot()->isHidden());
}

void TestViewsPlots::plotsDrawSomething()
{
    SessionData data;
    Selection sel;
    RooflinePlot roofline(&data, &sel);
    OccupancyPlot occupancy(&data, &sel);
    ProgressPlot progress(&data);
    std::mt19937 rng(5);
    feed(data, 40, 2, rng);
    SessionData::Batch b;
    b.nodes = { evaluated(node(41, 1), cudaResult(1.3, occupancyKernel("k(float*)", 256, 40, 0, 0, 6, 0.75, "registers")), 50) };
    ProgressPoint p;
    for (int i = 1; i <= 41; ++i) {
        p.seconds = i * 1.5;
        p.evaluations = i;
        p.bestSpeedup = 1 + i / 20.0;
        b.progress.push_back(p);
    }
    data.apply(b);
    sel.setCurrent(41);
    roofline.flush();
    progress.flush();
    for (QWidget* w : std::initializer_list<QWidget*> { &roofline, &occupancy, &progress }) {
        w->resize(800, 500);
        w->show();
    }
    roofline.flush();
    progress.flush();
    QVERIFY(!occupancy.isEmptyState());
    occupancy.plot()->replot();
    for (QWidget* w : std::initializer_list<QWidget*> { &roofline, &occupancy, &progress }) {
        const QImage image = w->grab().toImage();
        QVERIFY(!image.isNull());
        // HONE_TEST_SNAPSHOTS=DIR keeps the images for a look by eye.
        if (const QString dir = qEnvironmentVariable("HONE_TEST_SNAPSHOTS"); !dir.isEmpty())
            image.save(dir + QLatin1Char('/') + QString::fromLatin1(w->metaObject()->className()).section(QLatin1Char(':'), -1)
                + QStringLiteral(".png"));
        QCOMPARE(image.width(), 800);
        // Axes, labels, lines and points in several colours, not one flat fill.
        const int colours = distinctColours(image);
        QVERIFY2(colours > 8, qPrintable(QStringLiteral("%1 drew %2 colours").arg(w->metaObject()->className()).arg(colours)));
    }
    // The points are drawn in their colours where they are: memory-bound blue, compute-bound red.
    const QImage image = roofline.plot()->toPixmap().toImage();
    QCustomPlot* rp = roofline.plot();
    int memory = 0, memoryBlue = 0, compute = 0, computeRed = 0;
    auto drawnAt = [&](const NodeInfo& n, auto&& test) {
        const int cx = qRound(rp->xAxis->coordToPixel(n.intensity)), cy = qRound(rp->yAxis->coordToPixel(n.gflops));
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
                if (image.valid(cx + dx, cy + dy) && test(image.pixelColor(cx + dx, cy + dy)))
                    return true;
        return false;
    };
    for (const auto& n : data.nodes()) {
        if (n.status != NodeInfo::Status::Ok || n.id == 41)
            continue;
        if (n.bound == QLatin1String("memory")) {
            ++memory;
            memoryBlue += drawnAt(n, [](const QColor& c) { return c.blue() > c.red() + 60 && c.blue() > c.green() + 20; });
        } else if (n.bound == QLatin1String("compute")) {
            ++compute;
            computeRed += drawnAt(n, [](const QColor& c) { return c.red() > c.green() + 80 && c.red() > c.blue() + 80; });
        }
    }
    QVERIFY(memory > 0 && compute > 0);
    QVERIFY2(memoryBlue * 2 >= memory, qPrintable(QStringLiteral("%1 of %2 memory-bound points blue").arg(memoryBlue).arg(memory)));
    QVERIFY2(computeRed * 2 >= compute, qPrintable(QStringLiteral("%1 of %2 compute-bound points red").arg(computeRed).arg(compute)));
}

// A real search: `hone run` on the CPU softmax problem into a fresh store, loaded as the
// workbench loads it.
void TestViewsPlots::realCpuSession()
{
    const QString cli = qEnvironmentVariable("HONE_CLI");
    if (cli.isEmpty())
        QSKIP("HONE_CLI is not set (run through ctest)");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString db = dir.filePath(QStringLiteral("store.db"));
    QProcess run;
    run.setProcessChannelMode(QProcess::MergedChannels);
    run.start(cli, { QStringLiteral("--store"), db, QStringLiteral("--cache-dir"), dir.filePath(QStringLiteral("cache")),
                       QStringLiteral("--no-skills"), QStringLiteral("run"),
                       QString::fromUtf8(HONE_SOURCE_DIR) + QStringLiteral("/resources/problems/cpu/softmax"),
                       QStringLiteral("--budget"),
                       QStringLiteral("6"), QStringLiteral("--workers"), QStringLiteral("1"), QStringLiteral("--samples"),
                       QStringLiteral("20") });
    QVERIFY(run.waitForFinished(300000));
    QVERIFY2(run.exitCode() == 0, run.readAll().constData());

    hone::core::Store store(db.toStdString());
    const auto sessions = store.sessions();
    QCOMPARE(sessions.size(), size_t(1));
    SessionData data;
    data.setStore(&store);
    Selection sel;
    RooflinePlot roofline(&data, &sel);
    OccupancyPlot occupancy(&data, &sel);
    ProgressPlot progress(&data);
    data.loadFromStore(store, sessions.front().id);
    roofline.flush();

    int ok = 0;
    for (const auto& n : data.nodes())
        ok += n.status == NodeInfo::Status::Ok && n.intensity > 0 && n.gflops > 0;
    QVERIFY(ok >= 1);
    QCOMPARE(roofline.pointCount(), ok);
    QVERIFY(!roofline.isEmptyState());
    const double bw = data.ceilings().peakGbps;
    QVERIFY(bw > 0);
    auto* slope = roofline.bandwidthRoof()->data().data();
    for (auto it = slope->constBegin(); it != slope->constEnd(); ++it)
        QVERIFY(qFuzzyCompare(it->value, bw * it->key));
    QCOMPARE(roofline.computeRoof()->data()->constBegin()->value, data.ceilings().peakGflops);

    sel.setCurrent(data.bestNode());
    QVERIFY(occupancy.isEmptyState());
    QVERIFY2(occupancy.emptyText().contains(QStringLiteral("ran on cpu:")), qPrintable(occupancy.emptyText()));

    QCOMPARE(progress.bestGraph()->dataCount(), static_cast<int>(data.progress().size()));
    QCOMPARE(progress.pointsConsumed(), 6);
    QVERIFY(progress.statsText().contains(QStringLiteral("6 evaluations")));
}

QTEST_MAIN(TestViewsPlots)
#include "tst_views_plots.moc"
