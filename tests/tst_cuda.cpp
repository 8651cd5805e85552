// The CUDA backend through real hone-worker processes: nvcc compiles and resource usage
// (needs only the toolkit), then correctness, timing, occupancy, GPU faults, hangs and the
// side-stream reward hack (need a GPU; skipped with the worker's reason otherwise).
//
// GoogleTest rather than QtTest: GPU hosts have no Qt, and these tests must run there.

#include "backends/local_executor.h"
#include "backends/worker_process.h"
#include "core/engine.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/resources.h"
#include "core/store.h"

#include <gtest/gtest.h>
#include "gtest_skip_code.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace hone;
namespace fs = std::filesystem;

namespace {

fs::path dataDir()
{
    const char* d = std::getenv("HONE_TEST_DATA");
    return d ? fs::path(d) : fs::path(HONE_TEST_DATA);
}

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

std::string readText(const fs::path& p)
{
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path scratch()
{
    static fs::path dir = [] {
        std::string tmpl = (fs::temp_directory_path() / "tst_cuda-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        return fs::path(tmpl);
    }();
    return dir;
}

backends::LocalExecutorConfig config(double stageSeconds = 120)
{
    backends::LocalExecutorConfig cfg;
    cfg.workerPath = workerPath();
    cfg.cacheDir = scratch() / "cache";
    cfg.limits.memoryMiB = 16384;
    cfg.limits.addressSpaceLimit = false;
    cfg.limits.stageSeconds = stageSeconds;
    return cfg;
}

const nlohmann::json& hello()
{
    static nlohmann::json h = [] {
        backends::LocalExecutor exec(config());
        return exec.hello();
    }();
    return h;
}

bool haveGpu()
{
    return hello().contains("backends") && hello()["backends"].value("cuda", false);
}

std::string noGpuReason()
{
    return "no GPU here: " + hello().value("cuda_unavailable", std::string("the worker reports no CUDA device"));
}

bool haveNvcc()
{
    return !hello().value("nvcc", std::string()).empty();
}

/// An eval request of `candidateFile` (a seed of cuda_scale or a hostile kernel) against the
/// cuda_scale problem, with the naive seed as baseline.
nlohmann::json request(const fs::path& candidateFile, const nlohmann::json& knobs = nlohmann::json::object(),
    std::vector<std::string> stages = { "compile", "check", "time" }, const std::string& flags = "")
{
    const core::ProblemSpec spec = core::loadProblem(dataDir() / "problems" / "cuda_scale");
    nlohmann::json req = core::protocol::makeMessage("eval");
    req["id"] = candidateFile.filename().string();
    req["problem"] = core::resolveProblem(spec);
    req["candidate"] = { { "name", candidateFile.filename().string() }, { "lang", "cuda" },
        { "source", readText(candidateFile) }, { "knobs", knobs }, { "flags", flags } };
    const core::Seed* base = spec.baselineSeed();
    req["baseline"] = { { "name", base->fileName }, { "lang", base->lang }, { "source", base->source },
        { "knobs", nlohmann::json::object() }, { "flags", "" } };
    req["stages"] = stages;
    req["config"] = { { "seeds", { 1, 2, 3 } }, { "samples", 20 }, { "warmup", 2 }, { "timing_shape", 0 } };
    req["limits"] = { { "compile_s", 120 }, { "run_s", 60 } };
    return req;
}

nlohmann::json evaluate(const nlohmann::json& req, double stageSeconds = 120)
{
    backends::LocalExecutor exec(config(stageSeconds));
    exec.submit(core::EvalJob { req["id"], req });
    std::optional<core::EvalDone> done;
    while (!done)
        done = exec.next(std::chrono::milliseconds(200));
    return done->result;
}

fs::path seed(const char* name)
{
    return dataDir() / "problems" / "cuda_scale" / "seeds" / name;
}

fs::path hostile(const char* name)
{
    return dataDir() / "cuda_hostile" / name;
}

std::string failureKind(const nlohmann::json& r)
{
    return r.contains("failure") ? r["failure"].value("kind", std::string()) : std::string();
}

std::string failureMessage(const nlohmann::json& r)
{
    return r.contains("failure") ? r["failure"].value("message", std::string()) : std::string();
}

} // namespace

TEST(CudaWorker, HelloSaysWhetherItCanRunAndWhy)
{
    const nlohmann::json& h = hello();
    ASSERT_EQ(h.value("type", std::string()), "hello") << h.dump();
    if (haveGpu()) {
        bool found = false;
        for (const auto& d : h["devices"])
            if (d.value("kind", std::string()) == "cuda") {
                found = true;
                EXPECT_GT(d.value("sms", 0), 0);
                EXPECT_FALSE(d.value("arch", std::string()).empty());
            }
        EXPECT_TRUE(found) << h.dump();
    } else {
        // The same binary runs without a GPU and names the reason.
        EXPECT_FALSE(h.value("cuda_unavailable", std::string()).empty()) << h.dump();
    }
}

TEST(CudaCompile, ReportsRegistersSharedMemoryAndSpillsPerKernel)
{
    if (!haveNvcc())
        GTEST_SKIP() << "no nvcc: " << hello().dump();
    const nlohmann::json r = evaluate(request(seed("tuned.cu"), { { "BLOCK", "256" }, { "VEC", "4" }, { "WAVES", "4" } }, { "compile" }));
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump();
    const auto& res = r["compile"]["resources"];
    ASSERT_TRUE(res.is_array()) << r["compile"].dump();
    ASSERT_EQ(res.size(), 1u) << res.dump();
    EXPECT_NE(res[0]["name"].get<std::string>().find("scaleTuned"), std::string::npos) << res.dump();
    EXPECT_GT(res[0]["registers"].get<int>(), 0);
    EXPECT_EQ(res[0]["spill_stores"].get<int>(), 0);
    EXPECT_NE(r["compile"]["command"].get<std::string>().find("-DVEC=4"), std::string::npos);
}

TEST(CudaCompile, CompileErrorNamesFileAndLine)
{
    if (!haveNvcc())
        GTEST_SKIP() << "no nvcc";
    nlohmann::json req = request(seed("naive.cu"), nlohmann::json::object(), { "compile" });
    std::string src = req["candidate"]["source"];
    src.replace(src.find("a * x[i]"), 8, "a * undefined_name[i]");
    req["candidate"]["source"] = src;
    const nlohmann::json r = evaluate(req);
    EXPECT_EQ(failureKind(r), "compile_error") << r.dump();
    EXPECT_NE(failureMessage(r).find("naive.cu:9"), std::string::npos) << failureMessage(r);
    EXPECT_NE(failureMessage(r).find("undefined_name"), std::string::npos) << failureMessage(r);
}

TEST(CudaCompile, RefusesFlagsOutsideTheAllowList)
{
    if (!haveNvcc())
        GTEST_SKIP() << "no nvcc";
    const nlohmann::json r
        = evaluate(request(seed("naive.cu"), nlohmann::json::object(), { "compile" }, "-Xcompiler=-fplugin=/tmp/x.so"));
    EXPECT_EQ(failureKind(r), "bad_candidate") << r.dump();
    EXPECT_NE(failureMessage(r).find("not allowed for CUDA"), std::string::npos) << failureMessage(r);
}

TEST(CudaCompile, EveryBundledCudaSeedCompilesAtItsStartingKnobs)
{
    if (!haveNvcc())
        GTEST_SKIP() << "no nvcc";
    const fs::path suite = hone::core::findResource("problems/ads"); // as hone finds it (core/resources.h)
    ASSERT_FALSE(suite.empty()) << hone::core::describeResourceSearch("problems/ads");
    backends::LocalExecutorConfig cfg = config();
    cfg.parallel = 2;
    backends::LocalExecutor exec(cfg);
    int submitted = 0;
    for (const auto& dir : fs::directory_iterator(suite)) {
        const core::ProblemSpec spec = core::loadProblem(dir.path());
        for (const core::Seed& seed : spec.seeds) {
            const core::KnobSpace space = core::parseKnobSpace(seed.source, seed.fileName);
            nlohmann::json knobs = nlohmann::json::object();
            for (const auto& [k, v] : space.initial().value_or(core::KnobValues {}))
                knobs[k] = v;
            nlohmann::json req = core::protocol::makeMessage("eval");
            req["id"] = spec.name + "/" + seed.fileName;
            req["problem"] = core::resolveProblem(spec);
            req["candidate"] = { { "name", seed.fileName }, { "lang", seed.lang }, { "source", seed.source },
                { "knobs", knobs }, { "flags", space.flags } };
            req["stages"] = { "compile" };
            exec.submit(core::EvalJob { req["id"], req });
            ++submitted;
        }
    }
    EXPECT_GE(submitted, 20);
    for (int done = 0; done < submitted;) {
        auto d = exec.next(std::chrono::milliseconds(500));
        if (!d)
            continue;
        ++done;
        EXPECT_EQ(d->result.value("status", std::string()), "ok") << d->id << ": " << failureMessage(d->result);
        if (d->result.contains("compile") && d->result["compile"].contains("resources")) {
            for (const auto& k : d->result["compile"]["resources"]) {
                EXPECT_EQ(k.value("spill_stores", 0), 0) << d->id << " spills in " << k.value("name", std::string());
            }
        }
    }
}

// Every bundled seed at its starting knobs is correct, so its checks must pass on every seed,
// also with eight workers sharing the GPU. This caught uploads that had not landed when the
// candidate ran (a pageable cuMemcpyHtoD is not ordered with a non-blocking stream): about one
// evaluation in ten then failed with partial_write or NaN.
TEST(CudaGpu, EveryBundledSeedPassesItsChecksOnManySeeds)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const fs::path suite = hone::core::findResource("problems/ads"); // as hone finds it (core/resources.h)
    ASSERT_FALSE(suite.empty()) << hone::core::describeResourceSearch("problems/ads");
    backends::LocalExecutorConfig cfg = config();
    cfg.parallel = 8;
    backends::LocalExecutor exec(cfg);
    int submitted = 0;
    for (const auto& dir : fs::directory_iterator(suite)) {
        const core::ProblemSpec spec = core::loadProblem(dir.path());
        for (const core::Seed& seed : spec.seeds) {
            // The .hip seeds need an AMD GPU (or HONE_HIP_PLATFORM=nvidia: tst_hip_nvidia).
            if (seed.lang != "cuda")
                continue;
            const core::KnobSpace space = core::parseKnobSpace(seed.source, seed.fileName);
            nlohmann::json knobs = nlohmann::json::object();
            for (const auto& [k, v] : space.initial().value_or(core::KnobValues {}))
                knobs[k] = v;
            nlohmann::json req = core::protocol::makeMessage("eval");
            req["id"] = spec.name + "/" + seed.fileName;
            req["problem"] = core::resolveProblem(spec);
            req["candidate"] = { { "name", seed.fileName }, { "lang", seed.lang }, { "source", seed.source },
                { "knobs", knobs }, { "flags", space.flags } };
            req["stages"] = { "compile", "check" };
            req["config"] = { { "seeds", { 1, 2, 3, 4, 5, 6, 7, 8 } } };
            exec.submit(core::EvalJob { req["id"], req });
            ++submitted;
        }
    }
    EXPECT_GE(submitted, 20);
    for (int done = 0; done < submitted;) {
        auto d = exec.next(std::chrono::milliseconds(500));
        if (!d)
            continue;
        ++done;
        EXPECT_EQ(d->result.value("status", std::string()), "ok") << d->id << ": " << failureMessage(d->result);
    }
}

TEST(CudaCompile, WithoutAGpuAnEvalFailsSayingWhy)
{
    if (haveGpu())
        GTEST_SKIP() << "this host has a GPU";
    if (!haveNvcc())
        GTEST_SKIP() << "no nvcc";
    const nlohmann::json r = evaluate(request(seed("naive.cu")));
    EXPECT_EQ(failureKind(r), "worker_error") << r.dump();
    EXPECT_NE(failureMessage(r).find("cannot run CUDA candidates here"), std::string::npos) << failureMessage(r);
}

TEST(CudaGpu, CorrectKernelIsCheckedTimedAndProfiled)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json r = evaluate(request(seed("tuned.cu"), { { "BLOCK", "256" }, { "VEC", "4" }, { "WAVES", "4" } }));
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump().substr(0, 2000);
    // Every small shape with 3 seeds, plus the re-check after timing.
    EXPECT_EQ(r["checks"].size(), 3u * 3u + 1u);
    const auto& t = r["timing"];
    EXPECT_GE(t["samples_ns"].size(), 20u);
    EXPECT_GT(t["median_ns"].get<double>(), 0);
    EXPECT_GT(t["speedup"].get<double>(), 1.0) << "vectorised grid-stride vs one thread per element: " << t.dump();
    EXPECT_EQ(t["method"]["side_stream_samples"].get<int>(), 0);
    const auto& occ = r["occupancy"];
    ASSERT_TRUE(occ.contains("kernels")) << occ.dump();
    ASSERT_EQ(occ["kernels"].size(), 1u) << occ.dump();
    EXPECT_EQ(occ["kernels"][0]["block"][0].get<int>(), 256);
    EXPECT_GT(occ["kernels"][0]["blocks_per_sm"].get<int>(), 0);
    EXPECT_GT(occ["theoretical"].get<double>(), 0.0);
    const auto& roof = r["roofline"];
    EXPECT_GT(roof["frac_bandwidth"].get<double>(), 0.3) << roof.dump();
    EXPECT_FALSE(r["diagnosis"]["suspicious"].get<bool>()) << r["diagnosis"].dump();
}

TEST(CudaGpu, IllegalAddressFailsTheCandidateAndTheGpuStaysUsable)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json bad = evaluate(request(hostile("illegal_address.cu")));
    EXPECT_EQ(failureKind(bad), "runtime_error") << bad.dump().substr(0, 2000);
    EXPECT_NE(failureMessage(bad).find("ILLEGAL_ADDRESS"), std::string::npos) << failureMessage(bad);
    EXPECT_TRUE(bad.value("device_lost", false));
    const nlohmann::json next = evaluate(request(seed("naive.cu")));
    EXPECT_EQ(next.value("status", std::string()), "ok") << next.dump().substr(0, 2000);
}

TEST(CudaGpu, TrapFailsTheCandidateAndTheGpuStaysUsable)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json bad = evaluate(request(hostile("trap.cu")));
    EXPECT_EQ(failureKind(bad), "runtime_error") << bad.dump().substr(0, 2000);
    EXPECT_NE(failureMessage(bad).find("GPU fault"), std::string::npos) << failureMessage(bad);
    const nlohmann::json next = evaluate(request(seed("naive.cu")));
    EXPECT_EQ(next.value("status", std::string()), "ok") << next.dump().substr(0, 2000);
}

TEST(CudaGpu, HangIsKilledAndTheGpuStaysUsable)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json bad = evaluate(request(hostile("hang.cu")), 15);
    EXPECT_EQ(failureKind(bad), "timeout") << bad.dump().substr(0, 2000);
    const nlohmann::json next = evaluate(request(seed("naive.cu")));
    EXPECT_EQ(next.value("status", std::string()), "ok") << next.dump().substr(0, 2000);
}

TEST(CudaGpu, WrongPartialAndMutatingKernelsFail)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    EXPECT_EQ(failureKind(evaluate(request(hostile("wrong.cu")))), "wrong_result");
    EXPECT_EQ(failureKind(evaluate(request(hostile("partial.cu")))), "partial_write");
    EXPECT_EQ(failureKind(evaluate(request(hostile("mutate.cu")))), "input_mutation");
}

TEST(CudaGpu, SideStreamWorkIsCountedInTheTime)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json r = evaluate(request(hostile("side_stream.cu")));
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump().substr(0, 2000);
    // The kernel spins ~2 ms on a private stream; events on the harness stream alone would
    // report microseconds and a huge speedup.
    EXPECT_GT(r["timing"]["median_ns"].get<double>(), 1e6) << r["timing"].dump();
    EXPECT_GT(r["timing"]["method"]["side_stream_samples"].get<int>(), 0);
    EXPECT_LT(r["timing"]["speedup"].get<double>(), 1.0);
}

// The timing method: a candidate that spends 40 us on the host before its launch is timed as
// fast as the same kernel without the host work (interleaved, as candidate and baseline),
// because its launch overlaps the delay queued before the start event. With a synchronize
// before the start event the 40 us would be counted: on this 12 * 2^24-byte shape (about 70 us
// on an H100) a ratio near 0.6.
TEST(CudaGpu, HostLaunchTimeIsNotCountedAsGpuTime)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const fs::path file = dataDir() / "cuda_timing" / "slow_host.cu";
    nlohmann::json req = request(file, { { "HOST_US", "40" } });
    req["baseline"] = { { "name", "slow_host.cu" }, { "lang", "cuda" }, { "source", readText(file) },
        { "knobs", { { "HOST_US", "0" } } }, { "flags", "" } };
    const nlohmann::json r = evaluate(req);
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump().substr(0, 2000);
    const auto& t = r["timing"];
    EXPECT_NE(t["method"]["method"].get<std::string>().find("delay kernel"), std::string::npos) << t["method"].dump();
    EXPECT_GT(t["speedup"].get<double>(), 0.9) << t.dump();
    EXPECT_LT(t["median_ns"].get<double>(), t["baseline"]["median_ns"].get<double>() + 10000) << t.dump();
    EXPECT_LE(t["method"]["exposed_launches"].get<int>(), t["method"]["delayed_runs"].get<int>() / 4) << t["method"].dump();
    RecordProperty("median_ns", std::to_string(t["median_ns"].get<double>()));
    RecordProperty("baseline_median_ns", std::to_string(t["baseline"]["median_ns"].get<double>()));
    RecordProperty("speedup", std::to_string(t["speedup"].get<double>()));
    RecordProperty("exposed_launches", t["method"]["exposed_launches"].dump() + " of " + t["method"]["delayed_runs"].dump());
}

TEST(CudaGpu, NsightComputeStageGivesThroughputOccupancyAndStalls)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json r = evaluate(request(seed("tuned.cu"), { { "BLOCK", "256" }, { "VEC", "4" }, { "WAVES", "4" } },
        { "compile", "check", "time", "profile" }));
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump().substr(0, 2000);
    ASSERT_TRUE(r.contains("profile")) << r.dump().substr(0, 2000);
    const auto& p = r["profile"];
    if (p.contains("error") && p["error"].get<std::string>().find("not found") != std::string::npos)
        GTEST_SKIP() << p["error"].get<std::string>();
    ASSERT_TRUE(p.contains("main")) << p.dump();
    // A streaming kernel: DRAM busy, SM mostly idle, warps waiting on memory.
    EXPECT_GT(p["main"]["dram_pct"].get<double>(), 30.0) << p.dump();
    EXPECT_GT(p["main"]["achieved_occupancy_pct"].get<double>(), 0.0) << p.dump();
    EXPECT_FALSE(p["main"]["stalls"].empty()) << p.dump();
    EXPECT_NE(r["diagnosis"]["evidence"].get<std::string>().find("Nsight Compute"), std::string::npos);
}

TEST(CudaGpu, CalibratesCopyFmaAndTensorCeilings)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    backends::LocalExecutor exec(config(600));
    const nlohmann::json c = exec.ceilings("cuda");
    EXPECT_GT(c.value("peak_gbps", 0.0), 500.0) << c.dump();
    EXPECT_GT(c.value("peak_gflops", 0.0), 5000.0) << c.dump();
    EXPECT_GT(c.value("peak_tensor_gflops", 0.0), 50000.0) << c.dump();
}

TEST(CudaGpu, SearchFindsAFasterKernel)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    core::Store store((scratch() / "hone.db").string());
    backends::LocalExecutorConfig cfg = config();
    cfg.parallel = 2;
    backends::LocalExecutor exec(cfg);
    core::Engine engine(store, exec);
    core::RunOptions opt;
    opt.problemDir = dataDir() / "problems" / "cuda_scale";
    opt.target = "cuda";
    opt.budget = 12;
    opt.workers = 2;
    const core::Report report = engine.run(opt, nullptr);
    ASSERT_TRUE(report.best.has_value()) << report.stopReason;
    EXPECT_GT(report.bestSpeedup, 1.2) << report.bestSource << " " << core::knobsToString(report.bestKnobs);
    EXPECT_NE(report.device.find("cuda"), std::string::npos) << report.device;
}

// Containment of CUDA candidates (docs/THREAT_MODEL.md): each runs in a GPU runner process,
// sandboxed, holding a context of its own and only the buffers of its calls. Each kernel below
// did its harm when CUDA candidates ran inside the worker's process (HONE_CUDA_IN_PROCESS=1).

static fs::path contained(const char* name)
{
    return dataDir() / "cuda_contained" / name;
}

static bool sandboxed()
{
    return hello().contains("sandbox") && hello()["sandbox"].value("enabled", false);
}

TEST(CudaGpu, CandidateFindsNoneOfTheWorkersMemory)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    // It writes zeros (wrong_result) when its address space holds the eval request's text.
    const nlohmann::json r = evaluate(request(contained("read_judge.cu")));
    EXPECT_EQ(r.value("status", std::string()), "ok") << failureKind(r) << ": " << failureMessage(r);
}

TEST(CudaGpu, PatchedEventTimerIsSuspicious)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    // Its process's cuEventElapsedTime reports a twentieth of its ~5 ms calls; the worker's
    // own clock sees the whole call.
    const nlohmann::json r = evaluate(request(contained("patch_event_timer.cu")));
    EXPECT_EQ(failureKind(r), "suspicious") << failureMessage(r);
    EXPECT_NE(failureMessage(r).find("clock"), std::string::npos) << failureMessage(r);
    EXPECT_FALSE(r.contains("timing") && r["timing"].contains("speedup") && r["timing"]["speedup"].get<double>() > 2)
        << r["timing"].dump();
}

TEST(CudaGpu, CandidateCannotWriteTheCache)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    if (!sandboxed())
        GTEST_SKIP() << "the sandbox is off here: " << hello()["sandbox"].dump();
    fs::remove("/tmp/pwned-by-candidate");
    const nlohmann::json r = evaluate(request(contained("write_cache.cu")));
    EXPECT_EQ(r.value("status", std::string()), "ok") << failureKind(r) << ": " << failureMessage(r);
    int objects = 0;
    for (const auto& e : fs::recursive_directory_iterator(scratch() / "cache")) {
        EXPECT_EQ(e.path().filename().string().find("pwned"), std::string::npos) << e.path();
        if (e.is_regular_file() && e.path().extension() == ".so") {
            ++objects;
            std::ifstream in(e.path(), std::ios::binary);
            std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            EXPECT_FALSE(bytes.size() >= 5 && bytes.compare(bytes.size() - 5, 5, "pwned") == 0) << e.path();
        }
    }
    EXPECT_GT(objects, 0) << "the compiled objects should be in " << (scratch() / "cache");
    EXPECT_FALSE(fs::exists("/tmp/pwned-by-candidate"));
}

TEST(CudaGpu, ProfiledCandidateIsSandboxedToo)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    if (!sandboxed())
        GTEST_SKIP() << "the sandbox is off here: " << hello()["sandbox"].dump();
    // The Nsight Compute stage runs the candidate once more, in a process of its own under ncu:
    // that process is sandboxed like the runners, so the same writes fail there too.
    fs::remove("/tmp/pwned-by-candidate");
    const nlohmann::json r
        = evaluate(request(contained("write_cache.cu"), nlohmann::json::object(), { "compile", "check", "time", "profile" }));
    EXPECT_EQ(r.value("status", std::string()), "ok") << failureKind(r) << ": " << failureMessage(r);
    ASSERT_TRUE(r.contains("profile")) << r.dump().substr(0, 2000);
    const auto& p = r["profile"];
    if (p.contains("error") && p["error"].get<std::string>().find("not found") != std::string::npos)
        GTEST_SKIP() << p["error"].get<std::string>();
    EXPECT_TRUE(p.contains("main")) << "the profile ran in the sandbox: " << p.dump();
    for (const auto& e : fs::recursive_directory_iterator(scratch() / "cache"))
        EXPECT_EQ(e.path().filename().string().find("pwned"), std::string::npos) << e.path();
    EXPECT_FALSE(fs::exists("/tmp/pwned-by-candidate"));
}

TEST(CudaGpu, ForgedProtocolLinesAreNotAdopted)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    // A forged "ok, 1000x" line on every pipe it inherited. In the worker's process it reached
    // the engine (protocol_error); from a runner it reaches only the worker's stderr.
    const nlohmann::json r = evaluate(request(contained("forge_protocol.cu")));
    EXPECT_NE(failureKind(r), "protocol_error") << failureMessage(r);
    ASSERT_EQ(r.value("status", std::string()), "ok") << failureKind(r) << ": " << failureMessage(r);
    // The device clock check's numbers, for the record (docs/THREAT_MODEL.md).
    std::printf("forge_protocol.cu timing.method: %s\n", r["timing"]["method"].dump().c_str());
    EXPECT_EQ(r["checks"].size(), 3u * 3u + 1u) << r.dump().substr(0, 2000);
    EXPECT_GT(r["timing"]["median_ns"].get<double>(), 1000.0) << r["timing"].dump();
    EXPECT_LT(r["timing"]["speedup"].get<double>(), 100.0) << r["timing"].dump();
}

int main(int argc, char** argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    return gtestExitCode(RUN_ALL_TESTS());
}

// Input coverage (issue 18, class 9): the ads softmax's [check] distributions and drawn shapes
// catch what its listed shapes and init do not, on the GPU as on the CPU (tst_coverage).
static nlohmann::json adsSoftmaxCheck(const char* candidate)
{
    const core::ProblemSpec spec = core::loadProblem(hone::core::findResource("problems/ads") / "softmax");
    const fs::path file = dataDir() / "cuda_coverage" / candidate;
    nlohmann::json req = core::protocol::makeMessage("eval");
    req["id"] = std::string(candidate);
    req["problem"] = core::resolveProblem(spec);
    req["candidate"] = { { "name", candidate }, { "lang", "cuda" }, { "source", readText(file) },
        { "knobs", nlohmann::json::object() }, { "flags", "" } };
    req["stages"] = { "compile", "check" };
    req["config"] = { { "seeds", { 1, 2, 3 } } };
    return evaluate(req);
}

TEST(CudaGpu, SoftmaxWithoutMaxFailsOnLargeOrNegativeInputs)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json r = adsSoftmaxCheck("softmax_no_max.cu");
    EXPECT_TRUE(failureKind(r) == "nan" || failureKind(r) == "wrong_result") << failureKind(r) << ": " << failureMessage(r);
    const std::string m = failureMessage(r);
    EXPECT_TRUE(m.find(" dist large ") != std::string::npos || m.find(" dist negative ") != std::string::npos) << m;
}

TEST(CudaGpu, KernelForTheListedShapesFailsOnADrawnShape)
{
    if (!haveGpu())
        GTEST_SKIP() << noGpuReason();
    const nlohmann::json r = adsSoftmaxCheck("softmax_listed_shapes.cu");
    EXPECT_EQ(failureKind(r), "wrong_result") << failureMessage(r);
    const std::string m = failureMessage(r);
    EXPECT_TRUE(m.find("random[") != std::string::npos && m.find("M=") != std::string::npos
        && m.find("N=") != std::string::npos) << m;
}
