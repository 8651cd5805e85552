#include "hip_code_object.h"

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace hone::backends::hip {
namespace {

constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr uint16_t kMachineAmdgpu = 224; // EM_AMDGPU

/// Little-endian reads with bounds checks: every offset in a code object is untrusted.
class Bytes {
public:
    Bytes(const std::string& data, std::string what)
        : m_data(data)
        , m_what(std::move(what))
    {
    }
    template <typename T>
    T read(uint64_t at) const
    {
        if (at > m_data.size() || m_data.size() - at < sizeof(T))
            throw CodeObjectError(m_what + " is truncated: a read of " + std::to_string(sizeof(T)) + " bytes at offset "
                + std::to_string(at) + " is past its end (" + std::to_string(m_data.size()) + " bytes)");
        T v {};
        std::memcpy(&v, m_data.data() + at, sizeof(T));
        return v;
    }
    std::string slice(uint64_t at, uint64_t size) const
    {
        if (at > m_data.size() || m_data.size() - at < size)
            throw CodeObjectError(m_what + " is truncated: " + std::to_string(size) + " bytes at offset "
                + std::to_string(at) + " are past its end (" + std::to_string(m_data.size()) + " bytes)");
        return m_data.substr(at, size);
    }
    size_t size() const { return m_data.size(); }

private:
    const std::string& m_data;
    std::string m_what;
};

struct Section {
    std::string name;
    uint32_t type = 0;
    uint64_t addr = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint32_t link = 0;
};

/// Section headers of a 64-bit little-endian ELF; `machine` gets e_machine.
std::vector<Section> readSections(const Bytes& b, const std::string& what, uint16_t* machine)
{
    if (b.size() < 64 || b.slice(0, 4) != "\x7f" "ELF")
        throw CodeObjectError(what + " is not an ELF file");
    if (b.read<uint8_t>(4) != 2 || b.read<uint8_t>(5) != 1)
        throw CodeObjectError(what + " is not a 64-bit little-endian ELF file");
    if (machine)
        *machine = b.read<uint16_t>(18);
    const uint64_t shoff = b.read<uint64_t>(0x28);
    const uint16_t shentsize = b.read<uint16_t>(0x3a);
    const uint16_t shnum = b.read<uint16_t>(0x3c);
    const uint16_t shstrndx = b.read<uint16_t>(0x3e);
    if (shnum == 0 || shentsize < 64 || shstrndx >= shnum)
        throw CodeObjectError(what + " has no usable section header table");
    std::vector<Section> out(shnum);
    for (uint16_t i = 0; i < shnum; ++i) {
        const uint64_t at = shoff + uint64_t(i) * shentsize;
        Section& s = out[i];
        s.name = std::to_string(b.read<uint32_t>(at)); // resolved below
        s.type = b.read<uint32_t>(at + 4);
        s.addr = b.read<uint64_t>(at + 16);
        s.offset = b.read<uint64_t>(at + 24);
        s.size = b.read<uint64_t>(at + 32);
        s.link = b.read<uint32_t>(at + 40);
    }
    const Section& names = out[shstrndx];
    const std::string table = b.slice(names.offset, names.size);
    for (auto& s : out) {
        const size_t at = std::stoul(s.name);
        s.name = at < table.size() ? std::string(table.c_str() + at) : std::string();
    }
    return out;
}

std::string demangle(const std::string& name)
{
    int status = 0;
    char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !out)
        return name;
    std::string s = out;
    std::free(out);
    return s;
}

std::string trim(std::string s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
    s = s.substr(i);
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
        s = s.substr(1, s.size() - 2);
    return s;
}

int toInt(const std::string& v)
{
    return static_cast<int>(std::strtol(v.c_str(), nullptr, 10));
}

int roundUp(int x, int granule)
{
    return granule > 0 ? (x + granule - 1) / granule * granule : x;
}

/// Waves per SIMD that `sgprs` scalar registers allow on GFX9 (LLVM's
/// GCNSubtarget::getOccupancyWithNumSGPRs for VI..GFX9: 800 SGPRs per SIMD, granule 16).
int wavesForSgprs(int sgprs)
{
    if (sgprs <= 80)
        return 10;
    if (sgprs <= 88)
        return 9;
    if (sgprs <= 100)
        return 8;
    return 7;
}

/// `program` itself when it has a '/', else the first executable of that name on PATH.
std::string onPath(const std::string& program)
{
    if (program.find('/') != std::string::npos)
        return ::access(program.c_str(), X_OK) == 0 ? program : std::string();
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return {};
}

} // namespace

int KernelResources::allocatedVgprs(const std::string& arch) const
{
    const auto limits = archLimits(arch);
    const int granule = limits ? limits->vgprGranule : 8;
    if (descriptor)
        return (descriptor->granulatedVgprs + 1) * granule;
    // No descriptor: the metadata's count, which on gfx90a already spans both files.
    return roundUp(std::max(1, vgprs), granule);
}

std::optional<ArchLimits> archLimits(const std::string& arch)
{
    ArchLimits l;
    l.arch = arch;
    if (arch == "gfx90a") {
        l.family = "CDNA2";
    } else if (arch == "gfx940" || arch == "gfx941" || arch == "gfx942") {
        // MI300: the same per-CU resources as MI200 (512 unified VGPRs per lane, 8 waves per SIMD,
        // 64 KiB LDS); CDNA3 differs in the memory system (Infinity Cache) and the matrix cores.
        l.family = "CDNA3";
    } else {
        return std::nullopt;
    }
    return l;
}

Occupancy computeOccupancy(const KernelResources& k, const ArchLimits& limits, int blockThreads, int dynamicLdsBytes)
{
    Occupancy o;
    o.blockThreads = std::max(1, blockThreads);
    const int waveSize = k.wavefrontSize > 0 ? k.wavefrontSize : limits.waveSize;
    o.wavesPerWorkgroup = (o.blockThreads + waveSize - 1) / waveSize;
    if (o.blockThreads > k.maxFlatWorkgroupSize)
        o.error = "a block of " + std::to_string(o.blockThreads) + " threads exceeds the kernel's "
            + ".max_flat_workgroup_size of " + std::to_string(k.maxFlatWorkgroupSize) + " (launch bounds)";

    // Per-SIMD limits on resident waves, then workgroups per CU: a workgroup's waves are spread
    // over the CU's SIMDs, so it needs ceil(waves / SIMDs) slots on each.
    const int vgprAlloc = k.allocatedVgprs(limits.arch);
    const int byVgprs = std::min(limits.wavesPerSimd, limits.vgprsPerSimd / std::max(1, vgprAlloc));
    const int bySgprs = std::min(limits.wavesPerSimd, wavesForSgprs(k.sgprs));
    const int perSimdSlots = (o.wavesPerWorkgroup + limits.simdsPerCu - 1) / limits.simdsPerCu;
    auto workgroupsFromWaves = [&](int wavesPerSimd) {
        if (o.wavesPerWorkgroup <= limits.simdsPerCu)
            return wavesPerSimd * limits.simdsPerCu / o.wavesPerWorkgroup;
        return wavesPerSimd / perSimdSlots;
    };
    const int ldsBytes = k.ldsBytes + std::max(0, dynamicLdsBytes);
    const int ldsAlloc = roundUp(ldsBytes, limits.ldsGranule);
    struct Limit {
        const char* name;
        int workgroups;
    };
    std::vector<Limit> all = {
        { "waves per SIMD (hardware)", workgroupsFromWaves(limits.wavesPerSimd) },
        { limits.arch == "gfx90a" || limits.family == "CDNA3" ? "VGPRs (incl. AGPRs, unified file)" : "VGPRs",
            workgroupsFromWaves(byVgprs) },
        { "SGPRs", workgroupsFromWaves(bySgprs) },
        { "LDS", ldsAlloc > 0 ? limits.ldsBytesPerCu / ldsAlloc : 1 << 20 },
        // Single-wave workgroups need no barrier resource: only multi-wave ones use the slots.
        { "workgroup slots", o.wavesPerWorkgroup > 1 ? limits.workgroupsPerCu : 1 << 20 },
    };
    o.limits = nlohmann::json::object();
    for (const auto& l : all)
        o.limits[l.name] = l.workgroups >= (1 << 20) ? nlohmann::json(nullptr) : nlohmann::json(l.workgroups);
    const auto lim = std::min_element(all.begin(), all.end(), [](const Limit& a, const Limit& b) { return a.workgroups < b.workgroups; });
    o.workgroupsPerCu = std::max(0, lim->workgroups);
    const int maxWaves = limits.wavesPerSimd * limits.simdsPerCu;
    o.wavesPerCu = std::min(maxWaves, o.workgroupsPerCu * o.wavesPerWorkgroup);
    o.wavesPerSimd = static_cast<double>(o.wavesPerCu) / limits.simdsPerCu;
    o.occupancy = static_cast<double>(o.wavesPerCu) / maxWaves;
    o.limiter = o.occupancy >= 0.999 ? "none" : o.workgroupsPerCu == 0 ? std::string(lim->name) + " (does not fit)" : lim->name;
    return o;
}

std::string extractCodeObject(const std::string& sharedObject, const std::string& arch)
{
    const Bytes host(sharedObject, "the shared object");
    const std::vector<Section> sections = readSections(host, "the shared object", nullptr);
    const auto fat = std::find_if(sections.begin(), sections.end(), [](const Section& s) { return s.name == ".hip_fatbin"; });
    if (fat == sections.end())
        throw CodeObjectError("the shared object has no .hip_fatbin section: it holds no HIP device code (was it built "
                              "with hipcc from a .hip source?)");
    const std::string bundle = host.slice(fat->offset, fat->size);
    const Bytes b(bundle, "the offload bundle in .hip_fatbin");
    if (bundle.compare(0, sizeof kBundleMagic - 1, kBundleMagic) != 0)
        throw CodeObjectError(bundle.compare(0, 4, "CCOB") == 0
                ? "the offload bundle is compressed (CCOB); build without --offload-compress"
                : "the .hip_fatbin section does not start with a clang offload bundle header");
    const uint64_t count = b.read<uint64_t>(24);
    if (count > 1024)
        throw CodeObjectError("the offload bundle claims " + std::to_string(count) + " entries");
    uint64_t at = 32;
    std::string found;
    for (uint64_t i = 0; i < count; ++i) {
        const uint64_t offset = b.read<uint64_t>(at);
        const uint64_t size = b.read<uint64_t>(at + 8);
        const uint64_t idLen = b.read<uint64_t>(at + 16);
        const std::string id = b.slice(at + 24, idLen);
        at += 24 + idLen;
        // "hipv4-amdgcn-amd-amdhsa--gfx90a" or "...--gfx90a:sramecc+:xnack-".
        const size_t dashes = id.rfind("--");
        if (id.rfind("hip", 0) != 0 || dashes == std::string::npos)
            continue;
        const std::string target = id.substr(dashes + 2);
        found += (found.empty() ? "" : ", ") + target;
        if (target.substr(0, target.find(':')) == arch)
            return b.slice(offset, size);
    }
    throw CodeObjectError("the offload bundle holds no code object for " + arch
        + (found.empty() ? std::string(" (it holds none at all)") : " (it holds " + found + ")"));
}

std::vector<KernelResources> parseMetadataNotes(const std::string& notes, std::string* target)
{
    if (notes.find("AMDGPU Metadata") == std::string::npos && notes.find("amdhsa.kernels") == std::string::npos)
        throw CodeObjectError("llvm-readelf found no AMDGPU metadata note (NT_AMDGPU_METADATA) in the code object");
    std::vector<KernelResources> out;
    std::istringstream in(notes);
    std::string line;
    bool inKernels = false;
    std::string listKey; // a key at kernel level whose value is a list on the following lines
    std::vector<int> listValues;
    auto closeList = [&] {
        if (listKey == ".reqd_workgroup_size" && !out.empty() && !listValues.empty()) {
            int n = 1;
            for (int v : listValues)
                n *= std::max(1, v);
            out.back().reqdWorkgroupSize = n;
        }
        listKey.clear();
        listValues.clear();
    };
    while (std::getline(in, line)) {
        const size_t indent = line.find_first_not_of(' ');
        if (indent == std::string::npos)
            continue;
        if (indent == 0) {
            closeList();
            inKernels = line.rfind("amdhsa.kernels:", 0) == 0;
            if (target && line.rfind("amdhsa.target:", 0) == 0)
                *target = trim(line.substr(14));
            continue;
        }
        if (!inKernels)
            continue;
        std::string body = line.substr(indent);
        size_t keyIndent = indent;
        if (indent == 2 && body.rfind("- ", 0) == 0) {
            closeList();
            out.emplace_back();
            body = body.substr(2);
            keyIndent = 4;
        }
        if (keyIndent != 4 || out.empty()) {
            if (!listKey.empty() && body.rfind("- ", 0) == 0)
                listValues.push_back(toInt(trim(body.substr(2))));
            continue;
        }
        closeList();
        const size_t colon = body.find(':');
        if (colon == std::string::npos || body[0] != '.')
            continue;
        const std::string key = body.substr(0, colon);
        const std::string value = trim(body.substr(colon + 1));
        KernelResources& k = out.back();
        if (value.empty())
            listKey = key;
        else if (key == ".name")
            k.symbol = value;
        else if (key == ".vgpr_count")
            k.vgprs = toInt(value);
        else if (key == ".agpr_count")
            k.agprs = toInt(value);
        else if (key == ".sgpr_count")
            k.sgprs = toInt(value);
        else if (key == ".vgpr_spill_count")
            k.vgprSpills = toInt(value);
        else if (key == ".sgpr_spill_count")
            k.sgprSpills = toInt(value);
        else if (key == ".group_segment_fixed_size")
            k.ldsBytes = toInt(value);
        else if (key == ".private_segment_fixed_size")
            k.scratchBytes = toInt(value);
        else if (key == ".uses_dynamic_stack")
            k.dynamicStack = value == "true";
        else if (key == ".wavefront_size")
            k.wavefrontSize = toInt(value);
        else if (key == ".max_flat_workgroup_size")
            k.maxFlatWorkgroupSize = toInt(value);
        else if (key == ".kernarg_segment_size")
            k.kernargBytes = toInt(value);
    }
    closeList();
    out.erase(std::remove_if(out.begin(), out.end(), [](const KernelResources& k) { return k.symbol.empty(); }), out.end());
    for (auto& k : out)
        k.name = demangle(k.symbol);
    return out;
}

void readKernelDescriptors(const std::string& codeObject, std::vector<KernelResources>& kernels)
{
    const Bytes b(codeObject, "the code object");
    uint16_t machine = 0;
    const std::vector<Section> sections = readSections(b, "the code object", &machine);
    if (machine != kMachineAmdgpu)
        throw CodeObjectError("the code object is an ELF file for machine " + std::to_string(machine)
            + ", not AMDGPU (" + std::to_string(kMachineAmdgpu) + ")");
    // .symtab when present (not stripped), else .dynsym: both list the NAME.kd objects.
    const Section* symtab = nullptr;
    for (const char* want : { ".symtab", ".dynsym" })
        for (const auto& s : sections)
            if (!symtab && s.name == want)
                symtab = &s;
    if (!symtab || symtab->link >= sections.size())
        throw CodeObjectError("the code object has no symbol table, so its kernel descriptors cannot be found");
    const std::string strtab = b.slice(sections[symtab->link].offset, sections[symtab->link].size);
    for (uint64_t at = symtab->offset; at + 24 <= symtab->offset + symtab->size; at += 24) {
        const uint32_t nameAt = b.read<uint32_t>(at);
        const uint16_t shndx = b.read<uint16_t>(at + 6);
        const uint64_t value = b.read<uint64_t>(at + 8);
        if (nameAt >= strtab.size() || shndx == 0 || shndx >= sections.size())
            continue;
        const std::string name = strtab.c_str() + nameAt;
        if (name.size() < 4 || name.compare(name.size() - 3, 3, ".kd") != 0)
            continue;
        const std::string symbol = name.substr(0, name.size() - 3);
        auto k = std::find_if(kernels.begin(), kernels.end(), [&](const KernelResources& r) { return r.symbol == symbol; });
        if (k == kernels.end())
            continue;
        const Section& s = sections[shndx];
        if (value < s.addr || value - s.addr + 64 > s.size)
            throw CodeObjectError("the kernel descriptor " + name + " lies outside its section " + s.name);
        const uint64_t off = s.offset + (value - s.addr);
        KernelDescriptor d;
        d.groupSegmentBytes = b.read<uint32_t>(off);
        d.privateSegmentBytes = b.read<uint32_t>(off + 4);
        d.kernargBytes = b.read<uint32_t>(off + 8);
        d.rsrc3 = b.read<uint32_t>(off + 44);
        d.rsrc1 = b.read<uint32_t>(off + 48);
        d.rsrc2 = b.read<uint32_t>(off + 52);
        d.properties = b.read<uint16_t>(off + 56);
        d.granulatedVgprs = static_cast<int>(d.rsrc1 & 0x3f);
        d.granulatedSgprs = static_cast<int>((d.rsrc1 >> 6) & 0xf);
        d.privateSegment = (d.rsrc2 & 1) != 0;
        d.userSgprs = static_cast<int>((d.rsrc2 >> 1) & 0x1f);
        d.accumOffset = static_cast<int>((d.rsrc3 & 0x3f) + 1) * 4;
        d.wave32 = (d.properties & (1u << 10)) != 0;
        k->descriptor = d;
    }
}

int assumedBlockThreads(const KernelResources& k)
{
    return k.reqdWorkgroupSize > 0 ? k.reqdWorkgroupSize : std::max(1, k.maxFlatWorkgroupSize);
}

nlohmann::json toJson(const KernelResources& k, const std::string& arch, int blockThreads)
{
    nlohmann::json j = { { "name", k.name }, { "mangled", k.symbol }, { "registers", k.vgprs }, { "vgprs", k.vgprs },
        { "agprs", k.agprs }, { "sgprs", k.sgprs }, { "vgprs_allocated", k.allocatedVgprs(arch) },
        { "smem_static", k.ldsBytes }, { "lds_bytes", k.ldsBytes }, { "stack_bytes", k.scratchBytes },
        { "scratch_bytes", k.scratchBytes }, { "dynamic_stack", k.dynamicStack }, { "vgpr_spills", k.vgprSpills },
        { "sgpr_spills", k.sgprSpills }, { "wavefront_size", k.wavefrontSize },
        { "max_flat_workgroup_size", k.maxFlatWorkgroupSize }, { "kernarg_bytes", k.kernargBytes } };
    if (k.reqdWorkgroupSize > 0)
        j["reqd_workgroup_size"] = k.reqdWorkgroupSize;
    if (k.descriptor) {
        const KernelDescriptor& d = *k.descriptor;
        j["descriptor"] = { { "group_segment_bytes", d.groupSegmentBytes },
            { "private_segment_bytes", d.privateSegmentBytes }, { "kernarg_bytes", d.kernargBytes },
            { "compute_pgm_rsrc1", d.rsrc1 }, { "compute_pgm_rsrc2", d.rsrc2 }, { "compute_pgm_rsrc3", d.rsrc3 },
            { "kernel_code_properties", d.properties }, { "granulated_vgprs", d.granulatedVgprs },
            { "granulated_sgprs", d.granulatedSgprs }, { "user_sgprs", d.userSgprs },
            { "private_segment", d.privateSegment }, { "accum_offset", d.accumOffset }, { "wave32", d.wave32 } };
        if (k.agprs > 0)
            j["arch_vgprs"] = d.accumOffset;
    }
    if (const auto limits = archLimits(arch)) {
        const Occupancy o = computeOccupancy(k, *limits, blockThreads);
        j["occupancy"] = { { "arch", arch }, { "family", limits->family }, { "block", o.blockThreads },
            { "block_from", k.reqdWorkgroupSize > 0 ? "reqd_workgroup_size" : "max_flat_workgroup_size" },
            { "waves_per_workgroup", o.wavesPerWorkgroup }, { "workgroups_per_cu", o.workgroupsPerCu },
            { "waves_per_cu", o.wavesPerCu }, { "waves_per_simd", o.wavesPerSimd }, { "occupancy", o.occupancy },
            { "limiter", o.limiter }, { "limits", o.limits } };
        if (!o.error.empty())
            j["occupancy"]["error"] = o.error;
    }
    return j;
}

std::string findLlvmTool(const std::string& tool, const std::string& preferredDir)
{
    std::string env = "HONE_" + tool;
    for (char& c : env)
        c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (const char* e = std::getenv(env.c_str()); e && *e)
        return onPath(e);
    if (const std::string own = preferredDir.empty() ? std::string() : preferredDir + "/" + tool;
        !own.empty() && ::access(own.c_str(), X_OK) == 0)
        return own;
    const std::string rocm = "/opt/rocm/llvm/bin/" + tool;
    if (::access(rocm.c_str(), X_OK) == 0)
        return rocm;
    for (const std::string& name : { tool + "-15", tool, tool + "-16", tool + "-17", tool + "-18" })
        if (std::string p = onPath(name); !p.empty())
            return p;
    return {};
}

} // namespace hone::backends::hip
