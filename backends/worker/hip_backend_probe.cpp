// The HIP backend's device probes: the launch profile (graph capture, occupancy per launch)
// and the calibrated ceilings. Split from hip_backend.cpp; needs an AMD GPU to run.
#include "hip_backend.h"

#include "cache_integrity.h"
#include "calibration.h"
#include "core/sha256.h"
#include "hip_ceilings.h"
#include "hip_code_object.h"

#include <dlfcn.h>

#include <algorithm>

namespace hone::backends {

nlohmann::json HipBackend::launchProfile(LoadedKernel& kernel, const hone_args& args)
{
    ensureStream();
    hip::Runtime& rt = *m_rt;
    synchronize();
    nlohmann::json out = { { "kernels", nlohmann::json::array() } };
    check(rt.hipStreamBeginCapture(m_stream, hipStreamCaptureModeRelaxed), "hipStreamBeginCapture");
    const int rc = kernel.run(args);
    hipGraph_t graph = nullptr;
    const hipError_t end = rt.hipStreamEndCapture(m_stream, &graph);
    if (end != hipSuccess || rc != 0 || !graph) {
        if (graph)
            (void)rt.hipGraphDestroy(graph);
        (void)rt.hipGetLastError();
        out["error"] = "hone_run could not be captured into a graph (" + m_rt->describe(end) + ")";
        return out;
    }
    size_t count = 0;
    (void)rt.hipGraphGetNodes(graph, nullptr, &count);
    std::vector<hipGraphNode_t> nodes(count);
    if (count)
        (void)rt.hipGraphGetNodes(graph, nodes.data(), &count);
    const auto limits = hip::archLimits(m_deviceArch);
    for (hipGraphNode_t node : nodes) {
        hipGraphNodeType type {};
        hipKernelNodeParams p {};
        if (rt.hipGraphNodeGetType(node, &type) != hipSuccess || type != hipGraphNodeTypeKernel
            || rt.hipGraphKernelNodeGetParams(node, &p) != hipSuccess)
            continue;
        hipFuncAttributes a {};
        (void)rt.hipFuncGetAttributes(&a, p.func);
        const int block = static_cast<int>(p.blockDim.x * p.blockDim.y * p.blockDim.z);
        const long long grid = static_cast<long long>(p.gridDim.x) * p.gridDim.y * p.gridDim.z;
        int blocksPerCu = 0;
        (void)rt.hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerCu, p.func, block, p.sharedMemBytes);
        // The runtime's count, with the limiter from the CDNA model over the same numbers.
        hip::KernelResources k;
        k.vgprs = a.numRegs;
        k.ldsBytes = static_cast<int>(a.sharedSizeBytes);
        k.maxFlatWorkgroupSize = a.maxThreadsPerBlock > 0 ? a.maxThreadsPerBlock : 1024;
        const hip::Occupancy model = limits ? hip::computeOccupancy(k, *limits, block, static_cast<int>(p.sharedMemBytes))
                                            : hip::Occupancy {};
        const int wavesPerBlock = (block + m_waveSize - 1) / m_waveSize;
        const double occupancy = std::min(1.0, blocksPerCu * wavesPerBlock / static_cast<double>(m_maxWavesPerCu));
        out["kernels"].push_back({ { "name", "kernel " + std::to_string(out["kernels"].size()) },
            { "grid", { p.gridDim.x, p.gridDim.y, p.gridDim.z } }, { "block", { p.blockDim.x, p.blockDim.y, p.blockDim.z } },
            { "dynamic_smem", p.sharedMemBytes }, { "static_smem", a.sharedSizeBytes }, { "registers", a.numRegs },
            { "local_bytes", a.localSizeBytes }, { "blocks_per_sm", blocksPerCu }, { "occupancy", occupancy },
            { "limiter", occupancy >= 0.999 ? "none" : limits ? model.limiter : "not modelled (HIP on NVIDIA)" },
            { "waves", m_cus > 0 && blocksPerCu > 0 ? static_cast<double>(grid) / (blocksPerCu * m_cus) : 0.0 },
            { "threads", grid * block } });
    }
    (void)rt.hipGraphDestroy(graph);
    const auto& ks = out["kernels"];
    if (!ks.empty()) {
        size_t best = 0;
        for (size_t i = 1; i < ks.size(); ++i)
            if (ks[i]["threads"].get<long long>() > ks[best]["threads"].get<long long>())
                best = i;
        out["theoretical"] = ks[best]["occupancy"];
        out["limiter"] = ks[best]["limiter"];
        out["main_kernel"] = ks[best]["name"];
    }
    return out;
}

core::Ceilings HipBackend::ceilings(bool force, bool* cached)
{
    if (cached)
        *cached = false;
    if (!available())
        throw std::runtime_error("no HIP ceilings: " + unavailableReason());
    const std::string key = core::sha256Hex(std::string(hip::kCeilingsSource) + "\n" + m_name + "\n" + m_uuid + "\n"
        + std::to_string(m_rt->runtimeVersion()) + "\n" + compilerVersion());
    return cachedCeilings(m_cacheDir / ("ceilings-hip-" + key + ".json"), force, cached, m_ceilings, [this] {
        auto lock = lockForTiming();
        CompileJob job;
        job.name = "hip_ceilings.hip";
        job.source = hip::kCeilingsSource;
        job.timeLimitSeconds = 300;
        const CompileOutput built = compile(job);
        if (!built.ok)
            throw std::runtime_error("cannot compile the HIP calibration kernels: " + built.firstError());
        ensureStream();
        std::string error;
        void* handle = openVerified(built.objectPath, built.objectSha256, error);
        auto fn = handle ? reinterpret_cast<int (*)(void*, double*)>(::dlsym(handle, "hone_hip_ceilings")) : nullptr;
        if (!fn)
            throw std::runtime_error("cannot load the HIP calibration kernels: " + (handle ? std::string("no hone_hip_ceilings") : error));
        double v[3] = { 0, 0, 0 };
        const int rc = fn(m_stream, v);
        synchronize();
        if (rc != 0)
            throw std::runtime_error("the HIP calibration kernels failed with status " + std::to_string(rc));
        core::Ceilings c;
        c.device = deviceName();
        c.peakGbps = v[0];
        c.peakGflops = v[1];
        c.peakTensorGflops = v[2];
        c.method = "copy: 1 GiB device-to-device float4 grid-stride, bytes read + written, median of 15; fma: f32 "
                   "FMA, 8 chains per thread, 16 blocks of 256 per CU, median of 9; matrix: "
            + std::string(m_nvidia ? "HIP on NVIDIA: WMMA bf16 16x16x16 in registers (a lower bound of Hopper's wgmma peak)"
                                   : "v_mfma_f32_32x32x8bf16_1k in registers")
            + ", median of 9; built with " + compilerVersion();
        return c;
    },
        &m_cacheWarnings);
}

} // namespace hone::backends
