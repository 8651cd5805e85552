#pragma once

// Theoretical occupancy of a CUDA kernel, by the rules of the CUDA occupancy calculator
// (cuda_occupancy.h): registers are allocated per warp in units of 256 within each of the SM's
// sub-partitions, shared memory per block in units of 128 bytes plus a reserved kilobyte (sm_80+),
// and warps, blocks, registers and shared memory each cap the resident blocks. Pure C++: the
// workbench plots it, and a test checks it against the driver's numbers in a worker result.

#include "core/eval_result.h"

#include <optional>
#include <string>
#include <string_view>

namespace hone::views {

/// What one SM of a device can hold. The presets are the published limits of each architecture.
struct DeviceLimits {
    std::string arch;                   // "sm_90"
    std::string description;            // "Hopper (H100, H200)"
    int warpSize = 32;
    int maxThreadsPerBlock = 1024;
    int maxThreadsPerSm = 2048;
    int maxBlocksPerSm = 32;
    int maxWarpsPerSm = 64;
    int registersPerSm = 65536;
    int registersPerBlock = 65536;
    int registerAllocationUnit = 256;   // a warp's registers are rounded up to this many
    int registerSubPartitions = 4;      // registers go to warps within each quarter of the SM
    int maxRegistersPerThread = 255;
    long long sharedPerSm = 228 * 1024;
    long long sharedPerBlock = 227 * 1024;      // the opt-in maximum of one block
    long long reservedSharedPerBlock = 1024;    // the driver's own, per block (sm_80+)
    int sharedAllocationUnit = 128;

    static DeviceLimits sm90();
    static DeviceLimits sm89();
    static DeviceLimits sm80();
    /// The preset for "sm_90", "sm_90a", "90" or "9.0"; nullopt for an architecture without one.
    static std::optional<DeviceLimits> forArch(std::string_view arch);
    /// The preset for a worker result's device: the "(sm_XY, N SMs)" of `environment.device`, or
    /// failing that a known GPU name in it (H100, A100, L4...). nullopt for a CPU result or an
    /// unknown GPU.
    static std::optional<DeviceLimits> fromResult(const core::protocol::EvalResult& result);
};

/// A kernel's launch as the occupancy rules see it.
struct KernelResources {
    int blockSize = 0;                  // threads per block
    int registers = 0;                  // per thread
    long long staticShared = 0;         // bytes per block
    long long dynamicShared = 0;        // bytes per block
};

/// What keeps the next block off the SM.
enum class OccupancyLimiter { None, Warps, Blocks, Registers, SharedMemory };

/// The occupancy of one launch, and what each resource alone would allow.
struct OccupancyResult {
    int blocksPerSm = 0;
    int warpsPerBlock = 0;
    int activeWarps = 0;
    double occupancy = 0;               // activeWarps / maxWarpsPerSm, 0..1
    OccupancyLimiter limiter = OccupancyLimiter::None;
    int blocksByWarps = 0;              // warp (thread) slots alone
    int blocksByBlocks = 0;             // the blocks-per-SM limit alone
    int blocksByRegisters = 0;          // registers alone
    int blocksBySharedMemory = 0;       // shared memory alone
    long long sharedPerBlockAllocated = 0;
    int registersPerWarpAllocated = 0;
    std::string error;                  // why no block fits at all; empty when one does

    bool launchable() const { return blocksPerSm > 0; }
};

/// The occupancy of `k` on `d`. A launch that cannot run (too many threads, registers or bytes of
/// shared memory per block) gives zero blocks and says why in `error`.
OccupancyResult computeOccupancy(const DeviceLimits& d, const KernelResources& k);

/// The occupancy `blocks` resident blocks of `blockSize` threads give, capped at 1.
double occupancyOf(const DeviceLimits& d, int blockSize, int blocks);

/// The worker's names: "none", "block size (threads per SM)", "blocks per SM", "registers",
/// "shared memory".
std::string limiterName(OccupancyLimiter l);

/// The launch the workbench shows for a CUDA result: `occupancy.kernels[]` entry named by
/// `occupancy.main_kernel` (block size, registers, shared memory as launched, and what the driver
/// reported), or else the kernel of `compile.resources` with the most registers (no block size).
struct KernelLaunch {
    std::string name;
    KernelResources resources;
    bool hasBlock = false;              // false: from compile.resources, block size unknown
    int reportedBlocksPerSm = -1;       // the driver's cuOccupancy... answer, -1 when absent
    double reportedOccupancy = -1;
    std::string reportedLimiter;
};
std::optional<KernelLaunch> mainKernelLaunch(const core::protocol::EvalResult& result);

/// True when a worker result came from a CUDA device (`environment.backend` or the device name).
bool isCudaResult(const core::protocol::EvalResult& result);

} // namespace hone::views
