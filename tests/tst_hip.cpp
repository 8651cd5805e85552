// The HIP backend on a host without an AMD GPU (this CI): compiles through real hone-worker
// processes for gfx90a (hipcc) and gfx942 (hipcc where it can, else the clang-19 route), the
// code-object analysis (registers, LDS, scratch, descriptor, occupancy, ISA) for every bundled
// HIP seed on both, one kernel per architecture checked against figures read by hand from
// llvm-readelf, malformed code objects, compile errors, the missing-toolchain message and the
// no-device refusal.
//
// GoogleTest like tst_cuda: AMD hosts have no Qt either.

#include "backends/local_executor.h"
#include "core/knobs.h"
#include "core/problem_spec.h"
#include "core/protocol.h"
#include "core/resources.h"
#include "hip_code_object.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

using namespace hone;
namespace fs = std::filesystem;
namespace hip = hone::backends::hip;

namespace {

/// The bundled problems, found as hone finds them (core/resources.h): no source path compiled in.
fs::path problemsDir()
{
    const fs::path p = hone::core::findResource("problems");
    if (p.empty())
        throw std::runtime_error(hone::core::describeResourceSearch("problems"));
    return p;
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
        std::string tmpl = (fs::temp_directory_path() / "tst_hip-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        return fs::path(tmpl);
    }();
    return dir;
}

backends::LocalExecutorConfig config()
{
    backends::LocalExecutorConfig cfg;
    const char* w = std::getenv("HONE_WORKER");
    cfg.workerPath = w ? w : "hone-worker";
    cfg.cacheDir = scratch() / "cache";
    cfg.limits.memoryMiB = 16384;
    cfg.limits.addressSpaceLimit = false;
    cfg.limits.stageSeconds = 300;
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

bool haveHipcc()
{
    return !hello().value("hipcc", std::string()).empty();
}

/// A request for `source` (named `name`) against `problem`'s reference.
nlohmann::json request(const fs::path& problem, const std::string& name, const std::string& source,
    const nlohmann::json& knobs, const std::string& arch, std::vector<std::string> stages = { "compile" })
{
    const core::ProblemSpec spec = core::loadProblem(problem);
    nlohmann::json req = core::protocol::makeMessage("eval");
    req["id"] = name + "@" + arch;
    req["problem"] = core::resolveProblem(spec);
    req["candidate"] = { { "name", name }, { "lang", "hip" }, { "source", source }, { "knobs", knobs }, { "flags", "" } };
    req["stages"] = stages;
    req["config"] = { { "seeds", { 1, 2, 3 } }, { "samples", 20 }, { "warmup", 2 }, { "timing_shape", 0 } };
    req["limits"] = { { "compile_s", 300 }, { "run_s", 60 } };
    req["hip_arch"] = arch;
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

std::string failureMessage(const nlohmann::json& r)
{
    return r.contains("failure") ? r["failure"].value("message", std::string()) : std::string();
}

fs::path softmaxSeed()
{
    return problemsDir() / "ads" / "softmax" / "seeds" / "wave64.hip";
}

/// The architectures every bundled seed is built for: CDNA2 and CDNA3 (MI300X). Debian 12's
/// hipcc (ROCm 5.2, clang 15) cannot build gfx942; the worker then builds it with clang-19
/// (docs/HIP.md), which scripts/install-deps installs. Without it the gfx942 compiles fail with
/// the worker's message, which says to run scripts/install-deps: no skip.
const std::vector<std::string>& archs()
{
    static const std::vector<std::string> a = { "gfx90a", "gfx942" };
    return a;
}

/// The figures of tests/data/hip/analysis_probe.hip for `arch`.
nlohmann::json analyzeProbe(const std::string& arch)
{
    const fs::path probe = dataDir() / "hip" / "analysis_probe.hip";
    return evaluate(request(problemsDir() / "ads" / "softmax", "analysis_probe.hip", readText(probe),
        nlohmann::json::object(), arch));
}

/// Sets an environment variable for the workers started in one scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value)
        : m_name(name)
    {
        if (const char* old = std::getenv(name))
            m_old = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv()
    {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

} // namespace

TEST(HipWorker, HelloSaysWhyThereIsNoAmdGpu)
{
    const nlohmann::json& h = hello();
    ASSERT_EQ(h.value("type", std::string()), "hello") << h.dump();
    if (h["backends"].value("hip", false))
        GTEST_SKIP() << "this host has an AMD GPU";
    const std::string why = h.value("hip_unavailable", std::string());
    EXPECT_FALSE(why.empty()) << h.dump();
    EXPECT_NE(why.find("no AMD GPU"), std::string::npos) << why;
    if (haveHipcc()) {
        EXPECT_FALSE(h.value("rocm", std::string()).empty()) << h.dump();
    }
}

TEST(HipWorker, RefusesADeviceEvaluationInOneLine)
{
    if (hello()["backends"].value("hip", false))
        GTEST_SKIP() << "this host has an AMD GPU";
    const nlohmann::json r = evaluate(request(softmaxSeed().parent_path().parent_path(), "wave64.hip",
        readText(softmaxSeed()), nlohmann::json::object(), "gfx90a", { "compile", "check", "time" }));
    EXPECT_EQ(r.value("status", std::string()), "failed") << r.dump();
    const std::string m = failureMessage(r);
    EXPECT_NE(m.find("cannot evaluate HIP candidates on this host"), std::string::npos) << m;
    EXPECT_NE(m.find("no AMD GPU"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(HipCompile, EveryBundledSeedCompilesForCdna2AndCdna3WithAnalysis)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc: " << hello().dump();
    // Every (seed, architecture) pair as one job, two workers at a time (the compiles dominate).
    std::map<std::string, std::string> archOf;
    std::vector<nlohmann::json> requests;
    int seeds = 0;
    for (const auto& problem : fs::directory_iterator(problemsDir() / "ads")) {
        for (const auto& file : fs::directory_iterator(problem.path() / "seeds")) {
            if (file.path().extension() != ".hip")
                continue;
            ++seeds;
            const std::string source = readText(file.path());
            const core::KnobSpace space = core::parseKnobSpace(source, file.path().string());
            nlohmann::json knobs = nlohmann::json::object();
            for (const auto& [k, v] : space.initial().value_or(core::KnobValues {}))
                knobs[k] = v;
            for (const std::string& arch : archs()) {
                requests.push_back(request(problem.path(), file.path().filename().string(), source, knobs, arch));
                requests.back()["id"] = problem.path().filename().string() + "/" + file.path().filename().string() + "@" + arch;
                archOf[requests.back()["id"]] = arch;
            }
        }
    }
    backends::LocalExecutorConfig cfg = config();
    cfg.parallel = 2;
    backends::LocalExecutor exec(cfg);
    for (const auto& req : requests)
        exec.submit(core::EvalJob { req["id"], req });
    for (size_t done = 0; done < requests.size();) {
        const std::optional<core::EvalDone> d = exec.next(std::chrono::milliseconds(200));
        if (!d)
            continue;
        ++done;
        const nlohmann::json& r = d->result;
        const std::string arch = archOf[d->id];
        SCOPED_TRACE(d->id);
        ASSERT_EQ(r.value("status", std::string()), "ok") << failureMessage(r);
        const auto& c = r["compile"];
        EXPECT_NE(c["command"].get<std::string>().find("--offload-arch=" + arch), std::string::npos);
        const auto& res = c["resources"];
        ASSERT_TRUE(res.is_array() && !res.empty()) << c.dump();
        for (const auto& k : res) {
            // A real code object for the architecture: its metadata's amdhsa.target says so.
            EXPECT_NE(k.value("target", std::string()).find("amdgcn-amd-amdhsa--" + arch), std::string::npos) << k.dump();
            EXPECT_GT(k["vgprs"].get<int>(), 0) << k.dump();
            EXPECT_GT(k["sgprs"].get<int>(), 0) << k.dump();
            EXPECT_GE(k["lds_bytes"].get<int>(), 0) << k.dump();
            EXPECT_EQ(k["wavefront_size"].get<int>(), 64) << k.dump();
            ASSERT_TRUE(k.contains("descriptor")) << k.dump();
            const auto& o = k["occupancy"];
            EXPECT_GT(o["occupancy"].get<double>(), 0.0) << k.dump();
            EXPECT_LE(o["occupancy"].get<double>(), 1.0) << k.dump();
            EXPECT_FALSE(o["limiter"].get<std::string>().empty()) << k.dump();
            EXPECT_EQ(o["family"].get<std::string>(), arch == "gfx90a" ? "CDNA2" : "CDNA3");
            // The figures, for the log of this test (docs/HIP.md quotes them).
            std::printf("  %-44s %-34.34s VGPR %3d AGPR %2d SGPR %3d LDS %6d scratch %4d | %d threads: %4.1f waves/SIMD, %s\n",
                d->id.c_str(), k["name"].get<std::string>().c_str(), k["vgprs"].get<int>(), k["agprs"].get<int>(),
                k["sgprs"].get<int>(), k["lds_bytes"].get<int>(), k["scratch_bytes"].get<int>(), o["block"].get<int>(),
                o["waves_per_simd"].get<double>(), o["limiter"].get<std::string>().c_str());
        }
        EXPECT_NE(c.value("isa", std::string()).find("s_endpgm"), std::string::npos);
    }
    EXPECT_EQ(seeds, 9) << "one HIP seed per ads problem";
    EXPECT_EQ(requests.size(), 18u);
}

// The figures of tests/data/hip/analysis_probe.hip for gfx90a, read by hand with Debian's
// hipcc 5.2 / clang 15.0.6:
//   hipcc -std=c++17 -O3 --offload-arch=gfx90a -shared -fPIC -o probe.so analysis_probe.hip
//   llvm-objcopy-15 --dump-section .hip_fatbin=fat.bin probe.so   (then cut the gfx90a entry of
//   the offload bundle out of fat.bin into probe.o), and
//   llvm-readelf-15 --notes probe.o:  .agpr_count: 4, .vgpr_count: 36, .sgpr_count: 14,
//     .group_segment_fixed_size: 4096, .private_segment_fixed_size: 272,
//     .max_flat_workgroup_size: 256, .wavefront_size: 64, spill counts 0;
//   llvm-readelf-15 -s probe.o: _Z5probePKfPfi.kd at 0x540 in .rodata;
//   llvm-objdump-15 -s -j .rodata probe.o: at 0x540 "00100000 10010000 14000000" (LDS 4096,
//     scratch 272, kernarg 20), at 0x56c rsrc3 = 0x7 (accum_offset (7+1)*4 = 32), at 0x570
//     rsrc1 = 0x00af0044 (granulated VGPRs 4 -> (4+1)*8 = 40 allocated, SGPR granule 1) and
//     rsrc2 = 0x91 (private segment on, 8 user SGPRs).
// Occupancy at its 256-thread launch bound: 40 VGPRs allow 512/40 = 12 > 8 waves per SIMD, so
// nothing limits: 8 workgroups of 4 waves per CU, 32 waves, occupancy 1.
TEST(HipAnalysis, MatchesFiguresReadByHandFromLlvmReadelf)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc";
    const nlohmann::json r = analyzeProbe("gfx90a");
    ASSERT_EQ(r.value("status", std::string()), "ok") << failureMessage(r);
    const auto& res = r["compile"]["resources"];
    ASSERT_EQ(res.size(), 1u) << res.dump();
    const auto& k = res[0];
    EXPECT_EQ(k["mangled"], "_Z5probePKfPfi");
    EXPECT_EQ(k["name"], "probe(float const*, float*, int)");
    // Fixed by the source whatever the compiler does with registers.
    EXPECT_EQ(k["lds_bytes"], 4096);
    EXPECT_EQ(k["max_flat_workgroup_size"], 256);
    EXPECT_EQ(k["descriptor"]["group_segment_bytes"], 4096);
    if (hello().value("hipcc", std::string()).find("clang version 15.0.6") == std::string::npos)
        GTEST_SKIP() << "register figures were read with clang 15.0.6; this hipcc is " << hello().value("hipcc", std::string());
    EXPECT_EQ(k["agprs"], 4);
    EXPECT_EQ(k["vgprs"], 36);
    EXPECT_EQ(k["sgprs"], 14);
    EXPECT_EQ(k["scratch_bytes"], 272);
    EXPECT_EQ(k["vgpr_spills"], 0);
    EXPECT_EQ(k["descriptor"]["private_segment_bytes"], 272);
    EXPECT_EQ(k["descriptor"]["kernarg_bytes"], 20);
    EXPECT_EQ(k["descriptor"]["compute_pgm_rsrc1"], 0x00af0044);
    EXPECT_EQ(k["descriptor"]["compute_pgm_rsrc2"], 0x91);
    EXPECT_EQ(k["descriptor"]["accum_offset"], 32);
    EXPECT_EQ(k["arch_vgprs"], 32);
    EXPECT_EQ(k["vgprs_allocated"], 40);
    EXPECT_EQ(k["descriptor"]["private_segment"], true);
    EXPECT_EQ(k["descriptor"]["user_sgprs"], 8);
    EXPECT_EQ(k["occupancy"]["waves_per_cu"], 32);
    EXPECT_EQ(k["occupancy"]["workgroups_per_cu"], 8);
    EXPECT_EQ(k["occupancy"]["limiter"], "none");
    EXPECT_NE(r["compile"].value("isa", std::string()).find("v_mfma_f32_4x4x1"), std::string::npos);
}

// The same probe for gfx942 (MI300X), which Debian's hipcc cannot build: the worker's clang-19
// route. Read by hand with Debian's clang 19.1.7 and llvm-19, the worker's command re-run:
//   clang++-19 -std=c++17 -O3 -shared -fPIC --offload-arch=gfx942 -mcode-object-version=4
//     --rocm-path=/usr --rocm-device-lib-path=<cache>/include/hip-devlibs-HASH
//     -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false
//     -I<cache>/include -o probe.so analysis_probe.hip -lamdhip64
//   llvm-objcopy-19 --dump-section .hip_fatbin=fat.bin probe.so
//   clang-offload-bundler-19 --unbundle --type=o --input=fat.bin
//     --targets=hipv4-amdgcn-amd-amdhsa--gfx942 --output=probe.o
//   llvm-readelf-19 -h probe.o: Machine EM_AMDGPU, Flags 0x54C "gfx942, xnack, sramecc"
//     (EF_AMDGPU_MACH_AMDGCN_GFX942 = 0x4c, xnack and sramecc "any");
//   llvm-readelf-19 --notes probe.o: amdhsa.target amdgcn-amd-amdhsa--gfx942, amdhsa.version
//     [1, 1] (code object v4), .agpr_count: 4, .vgpr_count: 36, .sgpr_count: 14,
//     .group_segment_fixed_size: 4096, .private_segment_fixed_size: 272,
//     .max_flat_workgroup_size: 256, .kernarg_segment_size: 20, .wavefront_size: 64, spills 0;
//   llvm-readelf-19 -s probe.o: _Z5probePKfPfi.kd at 0x5c0 in .rodata;
//   llvm-objdump-19 -s -j .rodata probe.o: at 0x5c0 "00100000 10010000 14000000" (LDS 4096,
//     scratch 272, kernarg 20), at 0x5ec rsrc3 = 0x7 (accum_offset 32), at 0x5f0
//     rsrc1 = 0x00af0044 (granulated VGPRs 4 -> 40 allocated) and rsrc2 = 0x85 (private
//     segment on, 2 user SGPRs: gfx94x has architected flat scratch, so only the kernarg
//     pointer is passed, where gfx90a passes 8), at 0x5f8 kernel_code_properties = 0x0008;
//   llvm-objdump-19 -d: the MFMA under gfx940's name v_mfma_f32_4x4x1_16b_f32, scratch through
//     scratch_store_dwordx4 (flat scratch), v_lshl_add_u64 (a gfx940 instruction).
// Occupancy as for gfx90a: 40 VGPRs allow 12 > 8 waves per SIMD; 8 workgroups, 32 waves per CU.
TEST(HipAnalysis, Gfx942MatchesFiguresReadByHandFromLlvmReadelf19)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc";
    const nlohmann::json r = analyzeProbe("gfx942");
    ASSERT_EQ(r.value("status", std::string()), "ok") << failureMessage(r);
    const auto& res = r["compile"]["resources"];
    ASSERT_EQ(res.size(), 1u) << res.dump();
    const auto& k = res[0];
    EXPECT_EQ(k["target"], "amdgcn-amd-amdhsa--gfx942");
    EXPECT_EQ(k["mangled"], "_Z5probePKfPfi");
    EXPECT_EQ(k["lds_bytes"], 4096);
    EXPECT_EQ(k["max_flat_workgroup_size"], 256);
    EXPECT_EQ(k["wavefront_size"], 64);
    EXPECT_EQ(k["occupancy"]["family"], "CDNA3");
    const std::string command = r["compile"].value("command", std::string());
    if (command.find("-mcode-object-version=4") == std::string::npos
        || hello().value("hip_clang", std::string()).find("clang version 19.1.7") == std::string::npos)
        GTEST_SKIP() << "register figures were read from Debian's clang 19.1.7 route; this compile was " << command
                     << " (hip_clang: " << hello().value("hip_clang", std::string()) << ")";
    EXPECT_EQ(k["agprs"], 4);
    EXPECT_EQ(k["vgprs"], 36);
    EXPECT_EQ(k["sgprs"], 14);
    EXPECT_EQ(k["scratch_bytes"], 272);
    EXPECT_EQ(k["kernarg_bytes"], 20);
    EXPECT_EQ(k["vgpr_spills"], 0);
    EXPECT_EQ(k["sgpr_spills"], 0);
    EXPECT_EQ(k["descriptor"]["group_segment_bytes"], 4096);
    EXPECT_EQ(k["descriptor"]["private_segment_bytes"], 272);
    EXPECT_EQ(k["descriptor"]["kernarg_bytes"], 20);
    EXPECT_EQ(k["descriptor"]["compute_pgm_rsrc1"], 0x00af0044);
    EXPECT_EQ(k["descriptor"]["compute_pgm_rsrc2"], 0x85);
    EXPECT_EQ(k["descriptor"]["compute_pgm_rsrc3"], 0x7);
    EXPECT_EQ(k["descriptor"]["kernel_code_properties"], 0x8);
    EXPECT_EQ(k["descriptor"]["accum_offset"], 32);
    EXPECT_EQ(k["descriptor"]["user_sgprs"], 2);
    EXPECT_EQ(k["descriptor"]["private_segment"], true);
    EXPECT_EQ(k["arch_vgprs"], 32);
    EXPECT_EQ(k["vgprs_allocated"], 40);
    EXPECT_EQ(k["occupancy"]["waves_per_cu"], 32);
    EXPECT_EQ(k["occupancy"]["workgroups_per_cu"], 8);
    EXPECT_EQ(k["occupancy"]["limiter"], "none");
    const std::string isa = r["compile"].value("isa", std::string());
    EXPECT_NE(isa.find("v_mfma_f32_4x4x1_16b_f32"), std::string::npos) << isa.substr(0, 2000);
    EXPECT_NE(isa.find("scratch_store_dwordx4"), std::string::npos);
}

TEST(HipAnalysis, OccupancyNamesTheLimiter)
{
    const auto cdna2 = hip::archLimits("gfx90a");
    ASSERT_TRUE(cdna2);
    hip::KernelResources k;
    k.vgprs = 128; // 128 allocated: 512 / 128 = 4 waves per SIMD
    k.sgprs = 30;
    const hip::Occupancy byVgprs = hip::computeOccupancy(k, *cdna2, 256);
    EXPECT_EQ(byVgprs.wavesPerCu, 16);
    EXPECT_DOUBLE_EQ(byVgprs.occupancy, 0.5);
    EXPECT_EQ(byVgprs.limiter, "VGPRs (incl. AGPRs, unified file)");
    k.vgprs = 32;
    k.ldsBytes = 40000; // one 256-thread workgroup's 4 waves per CU
    const hip::Occupancy byLds = hip::computeOccupancy(k, *cdna2, 256);
    EXPECT_EQ(byLds.workgroupsPerCu, 1);
    EXPECT_EQ(byLds.limiter, "LDS");
    k.ldsBytes = 0;
    k.sgprs = 104; // over 100 SGPRs: 7 waves per SIMD
    EXPECT_EQ(hip::computeOccupancy(k, *cdna2, 64).limiter, "SGPRs");
    EXPECT_EQ(hip::computeOccupancy(k, *cdna2, 2048).error.empty(), false); // beyond launch bounds
    EXPECT_FALSE(hip::archLimits("gfx1100"));
}

TEST(HipAnalysis, MalformedCodeObjectsFailWithAClearMessage)
{
    auto message = [](auto&& f) {
        try {
            f();
        } catch (const hip::CodeObjectError& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_NE(message([] { hip::extractCodeObject("not an elf at all", "gfx90a"); }).find("not an ELF file"),
        std::string::npos);
    std::vector<hip::KernelResources> none;
    EXPECT_NE(message([&] { hip::readKernelDescriptors(std::string("\x7f" "ELF\x02\x01", 6), none); }).find("not an ELF"),
        std::string::npos);
    EXPECT_NE(message([] { hip::parseMetadataNotes("Displaying notes found in: .note\n"); }).find("no AMDGPU metadata"),
        std::string::npos);
    // A real host object: the worker itself has no .hip_fatbin.
    const char* worker = std::getenv("HONE_WORKER");
    if (worker) {
        const std::string bytes = readText(worker);
        EXPECT_NE(message([&] { hip::extractCodeObject(bytes, "gfx90a"); }).find("no .hip_fatbin"), std::string::npos);
        std::vector<hip::KernelResources> ks(1);
        ks[0].symbol = "x";
        EXPECT_NE(message([&] { hip::readKernelDescriptors(bytes, ks); }).find("not AMDGPU"), std::string::npos);
        // Cut short inside the section headers: a truncation, named as such.
        EXPECT_NE(message([&] { hip::extractCodeObject(bytes.substr(0, 4096), "gfx90a"); }).find("truncated"),
            std::string::npos);
    }
}

TEST(HipCompile, CompileErrorNamesFileAndLine)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc";
    std::string src = readText(softmaxSeed());
    const size_t at = src.find("mx = groupMax<LANES>(mx);");
    ASSERT_NE(at, std::string::npos);
    src.replace(at, 25, "mx = groupMax<LANES>(undefined_name);");
    const int line = 1 + static_cast<int>(std::count(src.begin(), src.begin() + static_cast<long>(at), '\n'));
    for (const std::string& arch : archs()) {
        SCOPED_TRACE(arch);
        const nlohmann::json r = evaluate(request(softmaxSeed().parent_path().parent_path(), "wave64.hip", src,
            nlohmann::json::object(), arch));
        EXPECT_EQ(r["failure"].value("kind", std::string()), "compile_error") << r.dump();
        EXPECT_NE(failureMessage(r).find("wave64.hip:" + std::to_string(line)), std::string::npos) << failureMessage(r);
        EXPECT_NE(failureMessage(r).find("undefined_name"), std::string::npos) << failureMessage(r);
    }
}

// Where neither hipcc nor a clang can build gfx942, the compile fails with one message that says
// what to install; the clang is hidden from the worker by pointing HONE_HIP_CLANG nowhere.
TEST(HipCompile, WithoutAClangForGfx942TheFailureSaysWhatToInstall)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc";
    const ScopedEnv noClang("HONE_HIP_CLANG", "/nonexistent/clang++");
    const nlohmann::json r = evaluate(request(softmaxSeed().parent_path().parent_path(), "wave64.hip",
        readText(softmaxSeed()), nlohmann::json::object(), "gfx942"));
    if (r.value("status", std::string()) == "ok")
        GTEST_SKIP() << "this hipcc builds gfx942 itself: " << r["compile"].value("command", std::string());
    const std::string m = failureMessage(r);
    EXPECT_EQ(r["failure"].value("kind", std::string()), "worker_error") << r.dump();
    EXPECT_NE(m.find("cannot build gfx942"), std::string::npos) << m;
    EXPECT_NE(m.find("run scripts/install-deps"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    std::printf("  %s\n", m.c_str());
}

TEST(HipCompile, RefusesAnUnknownArchitectureAndForeignFlags)
{
    if (!haveHipcc())
        GTEST_SKIP() << "no hipcc";
    const nlohmann::json bad = evaluate(request(softmaxSeed().parent_path().parent_path(), "wave64.hip",
        readText(softmaxSeed()), nlohmann::json::object(), "gfx1100"));
    EXPECT_NE(failureMessage(bad).find("hip_arch 'gfx1100'"), std::string::npos) << bad.dump();
    nlohmann::json req = request(softmaxSeed().parent_path().parent_path(), "wave64.hip", readText(softmaxSeed()),
        nlohmann::json::object(), "gfx90a");
    req["candidate"]["flags"] = "-mllvm -amdgpu-something";
    const nlohmann::json r = evaluate(req);
    EXPECT_EQ(r["failure"].value("kind", std::string()), "bad_candidate") << r.dump();
    EXPECT_NE(failureMessage(r).find("-mllvm"), std::string::npos) << failureMessage(r);
}
