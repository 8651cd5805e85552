#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

/// Static analysis of AMDGPU code objects (docs/HIP.md): the device ELF is taken out of a
/// hipcc-built shared object's offload bundle, its AMDGPU metadata note is read through
/// `llvm-readelf --notes` (msgpack rendered as YAML), its kernel descriptors are decoded from the
/// ELF itself, and occupancy for CDNA2/CDNA3 is computed from those numbers and a block size.
/// No Qt, no LLVM libraries: plain C++ over bytes and tool output.
namespace hone::backends::hip {

/// A code object (or the shared object around it) that cannot be read; the message says what
/// is wrong with which part.
class CodeObjectError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The 64-byte kernel descriptor (`NAME.kd`), decoded (AMDGPUUsage, "Kernel Descriptor").
struct KernelDescriptor {
    uint32_t groupSegmentBytes = 0;
    uint32_t privateSegmentBytes = 0;
    uint32_t kernargBytes = 0;
    uint32_t rsrc1 = 0;
    uint32_t rsrc2 = 0;
    uint32_t rsrc3 = 0;
    uint16_t properties = 0;
    int granulatedVgprs = 0; // rsrc1[5:0]
    int granulatedSgprs = 0; // rsrc1[9:6]
    int userSgprs = 0; // rsrc2[5:1]
    bool privateSegment = false; // rsrc2[0]: scratch enabled
    int accumOffset = 0; // gfx90a/gfx94x: first AGPR in the unified file, (rsrc3[5:0] + 1) * 4
    bool wave32 = false; // kernel_code_properties bit 10
};

/// One kernel's resources, from the metadata and its descriptor.
struct KernelResources {
    std::string name; // demangled where possible
    std::string symbol; // the mangled name
    int vgprs = 0; // .vgpr_count: architectural VGPRs (on gfx90a the metadata counts both files)
    int agprs = 0; // .agpr_count
    int sgprs = 0; // .sgpr_count (includes VCC, flat scratch, XNACK)
    int vgprSpills = 0;
    int sgprSpills = 0;
    int ldsBytes = 0; // .group_segment_fixed_size (static LDS)
    int scratchBytes = 0; // .private_segment_fixed_size per work-item
    bool dynamicStack = false;
    int wavefrontSize = 64;
    int maxFlatWorkgroupSize = 1024;
    int reqdWorkgroupSize = 0; // product of .reqd_workgroup_size, 0 when not set
    int kernargBytes = 0;
    std::optional<KernelDescriptor> descriptor;

    /// VGPRs allocated per wave in the unified file: from the descriptor's granule when present.
    int allocatedVgprs(const std::string& arch) const;
};

/// What a CDNA compute unit offers (per-SIMD register files, LDS, wave slots).
struct ArchLimits {
    std::string arch; // gfx90a, gfx940, gfx941, gfx942
    std::string family; // CDNA2, CDNA3
    int simdsPerCu = 4;
    int wavesPerSimd = 8;
    int vgprsPerSimd = 512; // unified VGPR+AGPR file per lane (wave64)
    int vgprGranule = 8;
    int ldsBytesPerCu = 65536;
    int ldsGranule = 512;
    int workgroupsPerCu = 16;
    int waveSize = 64;
};

/// Limits for a gfx target; nullopt for architectures Hone has no table for.
std::optional<ArchLimits> archLimits(const std::string& arch);

/// Theoretical occupancy of one kernel at one block size.
struct Occupancy {
    int blockThreads = 0;
    int wavesPerWorkgroup = 0;
    int workgroupsPerCu = 0;
    int wavesPerCu = 0;
    double wavesPerSimd = 0;
    double occupancy = 0; // active waves / the CU's wave slots
    std::string limiter; // "none" at full occupancy
    nlohmann::json limits; // workgroups per CU allowed by each resource
    std::string error; // the block cannot launch at all (exceeds .max_flat_workgroup_size)
};

Occupancy computeOccupancy(const KernelResources& k, const ArchLimits& limits, int blockThreads, int dynamicLdsBytes = 0);

/// The device code object for `arch` inside a hipcc-built shared object (its .hip_fatbin
/// section, a clang offload bundle). Throws CodeObjectError naming what is missing.
std::string extractCodeObject(const std::string& sharedObject, const std::string& arch);

/// Kernels from `llvm-readelf --notes` output (the AMDGPU metadata YAML). Throws
/// CodeObjectError when the output holds no AMDGPU metadata.
std::vector<KernelResources> parseMetadataNotes(const std::string& readelfNotes, std::string* target = nullptr);

/// Decodes each kernel's `.kd` symbol from the code object's bytes into `kernels`. Throws
/// CodeObjectError for bytes that are not a 64-bit little-endian AMDGPU ELF.
void readKernelDescriptors(const std::string& codeObject, std::vector<KernelResources>& kernels);

/// Compile-tab JSON for one kernel: the keys of the CUDA path where they mean the same
/// (name, mangled, registers, smem_static, stack_bytes), the AMD ones, and occupancy at `block`.
nlohmann::json toJson(const KernelResources& k, const std::string& arch, int blockThreads);

/// The tools the analysis runs: `$HONE_LLVM_READELF` / `$HONE_LLVM_OBJDUMP`, else the one in
/// `preferredDir` (the bin folder of the LLVM that built the code object, which knows its
/// target), else ROCm's own (/opt/rocm/llvm/bin), else llvm-readelf-15 / llvm-objdump-15 and the
/// unversioned names. Empty when none is found.
std::string findLlvmTool(const std::string& tool, const std::string& preferredDir = {});

/// The kernels' block size for occupancy: `.reqd_workgroup_size` when set, else
/// `.max_flat_workgroup_size` (`__launch_bounds__`), which is what the compiler allocated for.
int assumedBlockThreads(const KernelResources& k);

} // namespace hone::backends::hip
