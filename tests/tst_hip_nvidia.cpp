// The HIP run path on an NVIDIA GPU: HIP on the NVIDIA platform (HONE_HIP_PLATFORM=nvidia, a
// test bench, docs/HIP.md). Real hone-worker processes compile .hip candidates with nvcc against
// HIP's NVIDIA platform headers and run them through the worker's HIP backend (hip_backend.cpp,
// hip_runtime.cpp) over libhone-hip-nvidia.so, i.e. the CUDA driver: buffers, the harness
// stream, events, the cache flush, the checks, the interleaved-baseline timing, GPU faults and
// the calibrated ceilings. `HipNvidiaCompile.*` needs nvcc only (label cuda); `HipNvidiaGpu.*`
// needs a GPU (label gpu) and skips with the reason without one.
//
// The headers: $HONE_HIP_NVIDIA_INCLUDE, else the bundle's share/hone/hip-nvidia/include, else
// made here from /usr/include/hip by scripts/hip-nvidia-headers (HONE_SOURCE_DIR).

#include "backends/local_executor.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/resources.h"

#include <gtest/gtest.h>
#include "gtest_skip_code.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace hone;
namespace fs = std::filesystem;

namespace {

std::string workerPath()
{
    const char* w = std::getenv("HONE_WORKER");
    return w ? w : "hone-worker";
}

fs::path dataDir()
{
    const char* d = std::getenv("HONE_TEST_DATA");
    return d ? fs::path(d) : fs::path(HONE_TEST_DATA);
}

std::string readText(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

fs::path scratch()
{
    static fs::path dir = [] {
        std::string tmpl = (fs::temp_directory_path() / "tst_hip_nvidia-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        return fs::path(tmpl);
    }();
    return dir;
}

/// Why the NVIDIA platform headers cannot be had ("" when they are there).
std::string g_headersMissing;

void findOrMakeHeaders()
{
    if (const char* e = std::getenv("HONE_HIP_NVIDIA_INCLUDE"); e && *e)
        return;
    std::error_code ec;
    const fs::path worker = fs::canonical(workerPath(), ec);
    if (!ec && fs::exists(worker.parent_path().parent_path() / "share/hone/hip-nvidia/include/hip/hip_runtime.h"))
        return; // the bundle's (scripts/device-bundle)
    const char* src = std::getenv("HONE_SOURCE_DIR");
    const fs::path script = src ? fs::path(src) / "scripts" / "hip-nvidia-headers" : fs::path();
    if (script.empty() || !fs::exists(script) || !fs::exists("/usr/include/hip/nvidia_detail")) {
        g_headersMissing = "no HIP NVIDIA platform headers (set HONE_HIP_NVIDIA_INCLUDE, or HONE_SOURCE_DIR with "
                           "/usr/include/hip from libamdhip64-dev)";
        return;
    }
    const fs::path out = scratch() / "hip-nvidia-include";
    const std::string cmd = script.string() + " " + out.string() + " > " + (scratch() / "headers.log").string() + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        g_headersMissing = "scripts/hip-nvidia-headers failed: " + readText(scratch() / "headers.log");
        return;
    }
    ::setenv("HONE_HIP_NVIDIA_INCLUDE", out.c_str(), 1);
}

backends::LocalExecutorConfig config(double stageSeconds = 300)
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
    return hello().contains("backends") && hello()["backends"].value("hip", false);
}

std::string noGpuReason()
{
    return "no GPU for HIP on NVIDIA here: " + hello().value("hip_unavailable", std::string("the worker says nothing"));
}

bool haveNvcc()
{
    return !hello().value("hipcc", std::string()).empty();
}

fs::path candidate(const char* name)
{
    return dataDir() / "hip" / "nvidia" / name;
}

fs::path softmaxProblem()
{
    const fs::path p = core::findResource("problems/ads/softmax");
    if (p.empty())
        throw std::runtime_error(core::describeResourceSearch("problems/ads/softmax"));
    return p;
}

/// An eval of `file` against ads/softmax, with softmax_naive.hip as the baseline.
nlohmann::json request(const fs::path& file, std::vector<std::string> stages = { "compile", "check", "time" })
{
    const core::ProblemSpec spec = core::loadProblem(softmaxProblem());
    nlohmann::json req = core::protocol::makeMessage("eval");
    req["id"] = file.filename().string();
    req["problem"] = core::resolveProblem(spec);
    req["candidate"] = { { "name", file.filename().string() }, { "lang", "hip" }, { "source", readText(file) },
        { "knobs", nlohmann::json::object() }, { "flags", "" } };
    req["baseline"] = { { "name", "softmax_naive.hip" }, { "lang", "hip" },
        { "source", readText(candidate("softmax_naive.hip")) }, { "knobs", nlohmann::json::object() }, { "flags", "" } };
    req["stages"] = stages;
    req["config"] = { { "seeds", { 1, 2, 3 } }, { "samples", 20 }, { "warmup", 2 }, { "timing_shape", 0 } };
    req["limits"] = { { "compile_s", 300 }, { "run_s", 120 } };
    return req;
}

nlohmann::json evaluate(const nlohmann::json& req)
{
    backends::LocalExecutor exec(config());
    exec.submit(core::EvalJob { req["id"], req });
    std::optional<core::EvalDone> done;
    while (!done)
        done = exec.next(std::chrono::milliseconds(200));
    return done->result;
}

std::string failureKind(const nlohmann::json& r)
{
    return r.contains("failure") ? r["failure"].value("kind", std::string()) : std::string();
}

std::string failureMessage(const nlohmann::json& r)
{
    return r.contains("failure") ? r["failure"].value("message", std::string()) : std::string();
}

#define HONE_NEED_NVCC                                                                             \
    if (!haveNvcc())                                                                               \
        GTEST_SKIP() << "no nvcc: " << hello().dump();                                             \
    if (!g_headersMissing.empty())                                                                 \
        GTEST_SKIP() << g_headersMissing;

#define HONE_NEED_GPU                                                                              \
    if (!haveGpu())                                                                                \
        GTEST_SKIP() << noGpuReason();                                                             \
    if (!g_headersMissing.empty())                                                                 \
        GTEST_SKIP() << g_headersMissing;

} // namespace

TEST(HipNvidiaCompile, HelloNamesThePlatformAndWhyItCannotRun)
{
    const nlohmann::json& h = hello();
    ASSERT_EQ(h.value("type", std::string()), "hello") << h.dump();
    std::cout << "hello: " << h.dump() << "\n";
    EXPECT_EQ(h.value("hip_platform", std::string()), "nvidia") << h.dump();
    if (haveGpu()) {
        bool found = false;
        for (const auto& d : h["devices"])
            if (d.value("kind", std::string()) == "hip") {
                found = true;
                EXPECT_EQ(d.value("platform", std::string()), "nvidia") << d.dump();
                EXPECT_EQ(d.value("arch", std::string()).rfind("sm_", 0), 0u) << d.dump();
                EXPECT_EQ(d.value("wave_size", 0), 32) << d.dump();
            }
        EXPECT_TRUE(found) << h.dump();
    } else {
        EXPECT_NE(h.value("hip_unavailable", std::string()).find("HIP on NVIDIA"), std::string::npos) << h.dump();
    }
}

TEST(HipNvidiaCompile, WaveGenericCandidateBuildsWithNvccAndHasNoAmdCodeObject)
{
    HONE_NEED_NVCC
    const nlohmann::json r = evaluate(request(candidate("softmax_wave.hip"), { "compile" }));
    ASSERT_TRUE(r["compile"].value("ok", false)) << r.dump().substr(0, 3000);
    const std::string command = r["compile"].value("command", std::string());
    EXPECT_NE(command.find("nvcc"), std::string::npos) << command;
    EXPECT_NE(command.find("-D__HIP_PLATFORM_NVIDIA__"), std::string::npos) << command;
    EXPECT_NE(command.find("-x cu"), std::string::npos) << command;
    const auto& res = r["compile"]["resources"];
    EXPECT_NE(res.value("note", std::string()).find("no AMDGPU code object"), std::string::npos) << res.dump();
    // The headers warn about CUDA APIs deprecated since HIP 5.2; they are system headers.
    EXPECT_EQ(r["compile"]["messages"].size(), 0u) << r["compile"]["log"].dump();
}

TEST(HipNvidiaCompile, CompileErrorNamesTheCandidatesFileAndLine)
{
    HONE_NEED_NVCC
    const std::string src = "#include <hone/kernel.h>\n#include <hip/hip_runtime.h>\n"
                            "extern \"C\" int hone_run(const hone_args* a) { return undefined_thing(a); }\n";
    const fs::path file = scratch() / "broken.hip";
    std::ofstream(file) << src;
    const nlohmann::json r = evaluate(request(file, { "compile" }));
    EXPECT_EQ(failureKind(r), "compile_error") << r.dump().substr(0, 2000);
    bool found = false;
    for (const auto& m : r["compile"]["messages"])
        if (m.value("severity", std::string()) == "error" && m.value("line", 0) == 3
            && m.value("file", std::string()).find("broken.hip") != std::string::npos)
            found = true;
    EXPECT_TRUE(found) << r["compile"].dump().substr(0, 2000);
}

TEST(HipNvidiaGpu, WaveGenericCandidatePassesChecksAndIsTimedAgainstTheBaseline)
{
    HONE_NEED_GPU
    const nlohmann::json r = evaluate(request(candidate("softmax_wave.hip")));
    ASSERT_EQ(r.value("status", std::string()), "ok") << r.dump().substr(0, 3000);
    EXPECT_GE(r["checks"].size(), 5u * 3u);
    const auto& t = r["timing"];
    EXPECT_GE(t["samples_ns"].size(), 20u);
    EXPECT_GT(t["median_ns"].get<double>(), 0);
    EXPECT_GT(t["baseline"]["median_ns"].get<double>(), 0);
    // One wave per row, coalesced, against one thread per row reading 128 floats apart.
    EXPECT_GT(t["speedup"].get<double>(), 1.5) << t.dump();
    EXPECT_NE(t["method"].dump().find("HIP on the NVIDIA platform"), std::string::npos) << t["method"].dump();
    std::cout << "softmax_wave.hip on " << hello()["devices"].dump() << ": median " << t["median_ns"].get<double>()
              << " ns, baseline " << t["baseline"]["median_ns"].get<double>() << " ns, speedup "
              << t["speedup"].get<double>() << "\n";
    RecordProperty("median_ns", std::to_string(t["median_ns"].get<double>()));
    RecordProperty("speedup", std::to_string(t["speedup"].get<double>()));
    if (r.contains("occupancy") && r["occupancy"].contains("kernels") && !r["occupancy"]["kernels"].empty()) {
        const auto& k = r["occupancy"]["kernels"][0];
        EXPECT_EQ(k["block"][0].get<int>(), 256) << k.dump();
        EXPECT_GT(k["blocks_per_sm"].get<int>(), 0) << k.dump();
    } else {
        ADD_FAILURE() << "no launch profile: " << r.value("occupancy", nlohmann::json()).dump();
    }
}

TEST(HipNvidiaGpu, WrongCandidateFailsItsChecks)
{
    HONE_NEED_GPU
    const nlohmann::json r = evaluate(request(candidate("softmax_wrong.hip")));
    EXPECT_EQ(failureKind(r), "wrong_result") << r.dump().substr(0, 2000);
}

TEST(HipNvidiaGpu, IllegalAddressIsARuntimeErrorAndTheGpuStaysUsable)
{
    HONE_NEED_GPU
    const nlohmann::json bad = evaluate(request(candidate("illegal_address.hip")));
    EXPECT_EQ(failureKind(bad), "runtime_error") << bad.dump().substr(0, 2000);
    EXPECT_NE(failureMessage(bad).find("hipErrorIllegalAddress"), std::string::npos) << failureMessage(bad);
    const nlohmann::json next = evaluate(request(candidate("softmax_wave.hip"), { "compile", "check" }));
    EXPECT_EQ(next.value("status", std::string()), "ok") << next.dump().substr(0, 2000);
}

TEST(HipNvidiaGpu, CalibratesCopyFmaAndMatrixCeilings)
{
    HONE_NEED_GPU
    backends::LocalExecutor exec(config(600));
    const nlohmann::json c = exec.ceilings("hip");
    std::cout << "HIP-on-NVIDIA ceilings: " << c.dump() << "\n";
    EXPECT_GT(c.value("peak_gbps", 0.0), 500.0) << c.dump();
    EXPECT_GT(c.value("peak_gflops", 0.0), 5000.0) << c.dump();
    EXPECT_GT(c.value("peak_tensor_gflops", 0.0), 50000.0) << c.dump();
}

// The bundled HIP seeds were written for wave64 (CDNA). On 32-wide warps a seed whose lane
// groups are wider than the warp cannot be right; this runs each at its start knobs and
// reports which pass as they are. Every one must build and reach a verdict (ok or
// wrong_result), never a worker or harness error.
TEST(HipNvidiaGpu, BundledHipSeedsReachAVerdictAsTheyAre)
{
    HONE_NEED_GPU
    const fs::path suite = core::findResource("problems/ads");
    ASSERT_FALSE(suite.empty()) << core::describeResourceSearch("problems/ads");
    backends::LocalExecutorConfig cfg = config();
    cfg.parallel = 4; // nvcc builds side by side; timing takes the GPU lock in turn
    backends::LocalExecutor exec(cfg);
    int submitted = 0;
    for (const auto& dir : fs::directory_iterator(suite)) {
        const core::ProblemSpec spec = core::loadProblem(dir.path());
        for (const core::Seed& seed : spec.seeds) {
            if (seed.lang != "hip")
                continue;
            const core::KnobSpace space = core::parseKnobSpace(seed.source, seed.fileName);
            nlohmann::json knobs = nlohmann::json::object();
            for (const auto& [k, v] : space.initial().value_or(core::KnobValues {}))
                knobs[k] = v;
            nlohmann::json req = core::protocol::makeMessage("eval");
            req["id"] = spec.name + "/" + seed.fileName;
            req["problem"] = core::resolveProblem(spec);
            req["candidate"] = { { "name", seed.fileName }, { "lang", "hip" }, { "source", seed.source },
                { "knobs", knobs }, { "flags", space.flags } };
            req["stages"] = { "compile", "check", "time" };
            req["config"] = { { "seeds", { 1, 2, 3 } }, { "samples", 10 }, { "warmup", 2 }, { "timing_shape", 0 } };
            exec.submit(core::EvalJob { req["id"], req });
            ++submitted;
        }
    }
    EXPECT_EQ(submitted, 9);
    for (int done = 0; done < submitted;) {
        auto d = exec.next(std::chrono::milliseconds(500));
        if (!d)
            continue;
        ++done;
        const std::string status = d->result.value("status", std::string());
        const std::string kind = failureKind(d->result);
        std::string line = "seed " + d->id + ": ";
        if (status == "ok")
            line += "passes, median " + std::to_string(d->result["timing"].value("median_ns", 0.0) / 1000.0) + " us";
        else
            line += kind + ": " + failureMessage(d->result).substr(0, 300);
        std::cout << line << "\n";
        RecordProperty(d->id, line);
        EXPECT_TRUE(status == "ok" || kind == "wrong_result") << line;
    }
}

int main(int argc, char** argv)
{
    ::setenv("HONE_HIP_PLATFORM", "nvidia", 1);
    ::testing::InitGoogleTest(&argc, argv);
    findOrMakeHeaders();
    return gtestExitCode(RUN_ALL_TESTS());
}
