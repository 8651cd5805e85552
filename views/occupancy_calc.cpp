#include "views/occupancy_calc.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <regex>

namespace hone::views {

namespace {

long long roundUp(long long v, long long unit)
{
    return unit > 0 ? (v + unit - 1) / unit * unit : v;
}

long long divUp(long long a, long long b)
{
    return b > 0 ? (a + b - 1) / b : 0;
}

std::string kib(long long bytes)
{
    if (bytes % 1024 == 0)
        return std::to_string(bytes / 1024) + " KiB";
    return std::to_string(bytes) + " bytes";
}

bool containsWord(const std::string& haystack, const std::string& word)
{
    for (size_t at = haystack.find(word); at != std::string::npos; at = haystack.find(word, at + 1)) {
        const bool startOk = at == 0 || !std::isalnum(static_cast<unsigned char>(haystack[at - 1]));
        const size_t end = at + word.size();
        const bool endOk = end >= haystack.size() || !std::isalnum(static_cast<unsigned char>(haystack[end]));
        if (startOk && endOk)
            return true;
    }
    return false;
}

} // namespace

DeviceLimits DeviceLimits::sm90()
{
    DeviceLimits d;
    d.arch = "sm_90";
    d.description = "Hopper (H100, H200)";
    return d; // the defaults are Hopper's
}

DeviceLimits DeviceLimits::sm89()
{
    DeviceLimits d;
    d.arch = "sm_89";
    d.description = "Ada (L4, L40, RTX 40)";
    d.maxThreadsPerSm = 1536;
    d.maxBlocksPerSm = 24;
    d.maxWarpsPerSm = 48;
    d.sharedPerSm = 100 * 1024;
    d.sharedPerBlock = 99 * 1024;
    return d;
}

DeviceLimits DeviceLimits::sm80()
{
    DeviceLimits d;
    d.arch = "sm_80";
    d.description = "Ampere (A100, A30)";
    d.sharedPerSm = 164 * 1024;
    d.sharedPerBlock = 163 * 1024;
    return d;
}

std::optional<DeviceLimits> DeviceLimits::forArch(std::string_view arch)
{
    std::string digits;
    for (char c : arch)
        if (std::isdigit(static_cast<unsigned char>(c)))
            digits += c;
    if (digits == "90")
        return sm90();
    if (digits == "89")
        return sm89();
    if (digits == "80")
        return sm80();
    return std::nullopt;
}

std::optional<DeviceLimits> DeviceLimits::fromResult(const core::protocol::EvalResult& result)
{
    if (!isCudaResult(result))
        return std::nullopt;
    const std::string device = result.device();
    // The worker names its GPU "cuda: NAME (sm_90, 132 SMs)".
    static const std::regex archRe(R"(\bsm_(\d+)[a-z]?\b)");
    std::smatch m;
    if (std::regex_search(device, m, archRe))
        return forArch(m[1].str());
    for (const char* name : { "H100", "H200", "H800", "GH200", "H20" })
        if (containsWord(device, name))
            return sm90();
    for (const char* name : { "A100", "A800", "A30" })
        if (containsWord(device, name))
            return sm80();
    for (const char* name : { "L4", "L40", "L40S", "Ada", "RTX 4090", "RTX 4080" })
        if (containsWord(device, name))
            return sm89();
    return std::nullopt;
}

OccupancyResult computeOccupancy(const DeviceLimits& d, const KernelResources& k)
{
    OccupancyResult r;
    const int maxWarps = std::min(d.maxWarpsPerSm, d.maxThreadsPerSm / std::max(1, d.warpSize));
    if (k.blockSize <= 0) {
        r.error = "the block has no threads";
        return r;
    }
    r.warpsPerBlock = static_cast<int>(divUp(k.blockSize, d.warpSize));

    // Warp slots.
    if (k.blockSize > d.maxThreadsPerBlock) {
        r.error = "a block of " + std::to_string(k.blockSize) + " threads exceeds the limit of "
            + std::to_string(d.maxThreadsPerBlock) + " on " + d.arch;
    } else {
        r.blocksByWarps = maxWarps / r.warpsPerBlock;
    }
    r.blocksByBlocks = d.maxBlocksPerSm;

    // Registers: per warp in allocation units, warps placed in each sub-partition. The hardware
    // check assumes the block's warps spread evenly over all sub-partitions.
    const long long regsPerWarp = roundUp(static_cast<long long>(k.registers) * d.warpSize, d.registerAllocationUnit);
    r.registersPerWarpAllocated = static_cast<int>(regsPerWarp);
    const long long regsPerBlock = regsPerWarp * r.warpsPerBlock;
    const long long regsAssumed = regsPerWarp * roundUp(r.warpsPerBlock, d.registerSubPartitions);
    if (k.registers > d.maxRegistersPerThread) {
        r.error = std::to_string(k.registers) + " registers per thread exceed the limit of "
            + std::to_string(d.maxRegistersPerThread);
    } else if (regsPerBlock > d.registersPerBlock || regsAssumed > d.registersPerBlock) {
        r.error = "too many resources requested for launch: " + std::to_string(k.registers) + " registers x "
            + std::to_string(k.blockSize) + " threads need more than the " + std::to_string(d.registersPerBlock)
            + " registers a block may have";
    } else if (regsPerWarp == 0) {
        r.blocksByRegisters = INT_MAX;
    } else {
        const long long perSubPartition = (d.registersPerSm / d.registerSubPartitions) / regsPerWarp;
        r.blocksByRegisters = static_cast<int>(perSubPartition * d.registerSubPartitions / r.warpsPerBlock);
    }

    // Shared memory: static + dynamic + the driver's reserve, in allocation units.
    const long long wanted = k.staticShared + k.dynamicShared;
    r.sharedPerBlockAllocated = roundUp(wanted + d.reservedSharedPerBlock, d.sharedAllocationUnit);
    if (wanted > d.sharedPerBlock) {
        if (r.error.empty())
            r.error = kib(wanted) + " of shared memory per block exceed the " + kib(d.sharedPerBlock) + " limit of "
                + d.arch;
    } else {
        r.blocksBySharedMemory = r.sharedPerBlockAllocated > 0
            ? static_cast<int>(std::min<long long>(INT_MAX, d.sharedPerSm / r.sharedPerBlockAllocated))
            : INT_MAX;
    }

    if (!r.error.empty()) {
        r.blocksPerSm = 0;
        r.limiter = OccupancyLimiter::None;
        return r;
    }
    r.blocksPerSm = std::min({ r.blocksByWarps, r.blocksByBlocks, r.blocksByRegisters, r.blocksBySharedMemory });
    r.activeWarps = r.blocksPerSm * r.warpsPerBlock;
    r.occupancy = std::min(1.0, static_cast<double>(r.activeWarps) / maxWarps);
    // Ties go to the first of warps, blocks, registers, shared memory, as the worker reports them.
    if (r.occupancy >= 0.999)
        r.limiter = OccupancyLimiter::None;
    else if (r.blocksPerSm == r.blocksByWarps)
        r.limiter = OccupancyLimiter::Warps;
    else if (r.blocksPerSm == r.blocksByBlocks)
        r.limiter = OccupancyLimiter::Blocks;
    else if (r.blocksPerSm == r.blocksByRegisters)
        r.limiter = OccupancyLimiter::Registers;
    else
        r.limiter = OccupancyLimiter::SharedMemory;
    return r;
}

double occupancyOf(const DeviceLimits& d, int blockSize, int blocks)
{
    const int maxWarps = std::min(d.maxWarpsPerSm, d.maxThreadsPerSm / std::max(1, d.warpSize));
    if (blocks <= 0 || blockSize <= 0 || maxWarps <= 0)
        return 0;
    const long long warps = static_cast<long long>(blocks) * divUp(blockSize, d.warpSize);
    return std::min(1.0, static_cast<double>(warps) / maxWarps);
}

std::string limiterName(OccupancyLimiter l)
{
    switch (l) {
    case OccupancyLimiter::None:
        return "none";
    case OccupancyLimiter::Warps:
        return "block size (threads per SM)";
    case OccupancyLimiter::Blocks:
        return "blocks per SM";
    case OccupancyLimiter::Registers:
        return "registers";
    case OccupancyLimiter::SharedMemory:
        return "shared memory";
    }
    return "none";
}

bool isCudaResult(const core::protocol::EvalResult& result)
{
    const std::string backend = result.backend();
    if (!backend.empty())
        return backend == "cuda";
    const std::string device = result.device();
    if (device.rfind("cuda:", 0) == 0)
        return true;
    if (device.rfind("cpu:", 0) == 0)
        return false;
    return result.occupancy || (result.compile && (!result.compile->resources.empty() || result.compile->resourcesError));
}

std::optional<KernelLaunch> mainKernelLaunch(const core::protocol::EvalResult& result)
{
    if (result.occupancy && !result.occupancy->kernels.empty()) {
        const auto& occ = *result.occupancy;
        const core::protocol::LaunchOccupancy* pick = nullptr;
        long long mostThreads = -1;
        for (const auto& k : occ.kernels) {
            if (!occ.mainKernel.empty() && k.name == occ.mainKernel) {
                pick = &k;
                break;
            }
            const long long threads = k.threads.value_or(0);
            if (threads > mostThreads) {
                mostThreads = threads;
                pick = &k;
            }
        }
        const auto& k = *pick;
        KernelLaunch l;
        l.name = k.name;
        long long block = 1;
        if (!k.block.empty()) {
            for (int64_t v : k.block)
                block *= std::max<long long>(1, v);
            l.hasBlock = true;
        } else if (const auto it = k.extra.find("block"); it != k.extra.end() && it->is_number()) {
            block = it->get<long long>(); // an older worker wrote one number
            l.hasBlock = true;
        }
        l.resources.blockSize = static_cast<int>(block);
        l.resources.registers = static_cast<int>(k.registers.value_or(0));
        l.resources.staticShared = k.staticSmem.value_or(0);
        l.resources.dynamicShared = k.dynamicSmem.value_or(0);
        l.reportedBlocksPerSm = static_cast<int>(k.blocksPerSm.value_or(-1));
        l.reportedOccupancy = k.occupancy.value_or(-1.0);
        l.reportedLimiter = k.limiter;
        return l;
    }
    // No launch was captured (the run failed before timing, or an older worker): the compiler's
    // numbers, of the kernel that needs the most registers.
    if (!result.compile || result.compile->resources.empty())
        return std::nullopt;
    const core::protocol::KernelResources* pick = nullptr;
    for (const auto& k : result.compile->resources)
        if (!pick || k.registers.value_or(0) > pick->registers.value_or(0))
            pick = &k;
    KernelLaunch l;
    l.name = pick->name;
    l.resources.registers = static_cast<int>(pick->registers.value_or(0));
    l.resources.staticShared = pick->smemStatic.value_or(0);
    return l;
}

} // namespace hone::views
