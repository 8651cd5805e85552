// The standalone check that `hone export` writes beside a candidate (test_candidate.cpp, or .cu
// with HONE_TEST_CUDA defined to 1): it loads the problem's reference and the candidate as two
// shared objects, draws the inputs as hone-worker draws them (hone/draws.h), on the check shapes
// and seeds of shapes.inc, and compares every output with the worker's rule
// |got - want| <= atol + rtol * |want| (backends/worker/checks.cpp). Nothing of Hone but
// hone/kernel.h and hone/draws.h. Embedded into hone by core/CMakeLists.txt.
#ifndef HONE_TEST_CUDA
#define HONE_TEST_CUDA 0
#endif
#include "hone/draws.h"
#include "hone/kernel.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#if HONE_TEST_CUDA
#include <cuda_runtime.h>
#endif

namespace {

enum Dist { kNormal, kUniform, kRandint, kOffsets };

struct TensorDef {
    std::string name;
    int dtype;
    std::vector<int64_t> shape;
    Dist dist;      // inputs: how values are drawn
    double a, b;    // normal: mean, std; uniform, randint: low, high; offsets: total
    bool sorted;
    double atol, rtol; // outputs: |got - want| <= atol + rtol * |want|
};

struct ShapeDef {
    std::string label;
    std::vector<TensorDef> inputs;
    std::vector<TensorDef> outputs;
    std::vector<std::pair<std::string, double>> params;
};

// The problem's check shapes, tolerances and seeds, written by `hone export` beside this file.
#include "shapes.inc"

using hone_draws::belowAt;
using hone_draws::normalAt;
using hone_draws::uniformAt;

size_t dtypeSize(int t)
{
    switch (t) {
    case HONE_F16:
    case HONE_BF16:
        return 2;
    case HONE_F64:
    case HONE_I64:
        return 8;
    case HONE_U8:
        return 1;
    default:
        return 4;
    }
}

bool isFloat(int t)
{
    return t == HONE_F32 || t == HONE_F16 || t == HONE_BF16 || t == HONE_F64;
}

template <typename T> T clampTo(double v)
{
    if (std::isnan(v))
        return 0;
    const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<T>::max());
    return static_cast<T>(std::min(std::max(v, lo), hi));
}

/// A 64-byte aligned host buffer, never null (as the worker allocates them).
struct Buffer {
    struct Free {
        void operator()(unsigned char* p) const { std::free(p); }
    };
    std::unique_ptr<unsigned char, Free> data;
    size_t numel = 0;
    size_t bytes = 0;
    int dtype = HONE_F32;

    Buffer(const TensorDef& t)
        : dtype(t.dtype)
    {
        numel = 1;
        for (int64_t d : t.shape)
            numel *= static_cast<size_t>(d);
        bytes = numel * dtypeSize(dtype);
        const size_t alloc = std::max<size_t>(64, (bytes + 63) / 64 * 64);
        data.reset(static_cast<unsigned char*>(std::aligned_alloc(64, alloc)));
        if (!data) {
            std::fprintf(stderr, "out of memory\n");
            std::exit(2);
        }
        std::memset(data.get(), 0, alloc);
    }
    Buffer(const Buffer& o)
        : Buffer(TensorDef{"", o.dtype, {static_cast<int64_t>(o.numel)}, kNormal, 0, 0, false, 0, 0})
    {
        std::memcpy(data.get(), o.data.get(), bytes);
    }

    void set(size_t i, double v)
    {
        unsigned char* p = data.get() + i * dtypeSize(dtype);
        switch (dtype) {
        case HONE_F32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
        case HONE_F64: std::memcpy(p, &v, 8); break;
        case HONE_F16: { const uint16_t h = hone_f32_to_f16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
        case HONE_BF16: { const uint16_t h = hone_f32_to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
        case HONE_I32: { const int32_t x = clampTo<int32_t>(std::nearbyint(v)); std::memcpy(p, &x, 4); break; }
        case HONE_I64: { const int64_t x = clampTo<int64_t>(std::nearbyint(v)); std::memcpy(p, &x, 8); break; }
        case HONE_U8: *p = clampTo<uint8_t>(std::nearbyint(v)); break;
        }
    }
    double at(size_t i) const
    {
        const unsigned char* p = data.get() + i * dtypeSize(dtype);
        switch (dtype) {
        case HONE_F32: { float v; std::memcpy(&v, p, 4); return v; }
        case HONE_F64: { double v; std::memcpy(&v, p, 8); return v; }
        case HONE_F16: { uint16_t v; std::memcpy(&v, p, 2); return hone_f16_to_f32(v); }
        case HONE_BF16: { uint16_t v; std::memcpy(&v, p, 2); return hone_bf16_to_f32(v); }
        case HONE_I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
        case HONE_I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
        case HONE_U8: return *p;
        }
        return 0;
    }
    // NaN patterns no arithmetic produces, so an element never written is told from a NaN.
    static void poisonPattern(int dtype, unsigned char* out)
    {
        const uint32_t f32 = 0x7FC0DEADu;
        const uint64_t f64 = 0x7FF8DEADBEEFDEADull;
        const uint16_t half = dtype == HONE_F16 ? 0x7E01u : 0x7FC1u;
        if (dtype == HONE_F32)
            std::memcpy(out, &f32, 4);
        else if (dtype == HONE_F64)
            std::memcpy(out, &f64, 8);
        else if (dtype == HONE_F16 || dtype == HONE_BF16)
            std::memcpy(out, &half, 2);
        else
            std::memset(out, 0xA5, dtypeSize(dtype));
    }
    void poison()
    {
        unsigned char pattern[8];
        poisonPattern(dtype, pattern);
        const size_t size = dtypeSize(dtype);
        for (size_t i = 0; i < numel; ++i)
            std::memcpy(data.get() + i * size, pattern, size);
    }
    bool isPoison(size_t i) const
    {
        unsigned char pattern[8];
        poisonPattern(dtype, pattern);
        return std::memcmp(data.get() + i * dtypeSize(dtype), pattern, dtypeSize(dtype)) == 0;
    }
};

void fill(Buffer& buf, const TensorDef& t, uint64_t seed, const std::string& label, size_t index)
{
    const uint64_t key = hone_draws::streamKey(seed, label.data(), label.size(), index);
    const size_t n = buf.numel;
    if (t.dist == kOffsets) { // sorted, first 0, last `total`
        const std::vector<int64_t> cuts = hone_draws::offsetCuts(key, n, static_cast<int64_t>(t.a));
        for (size_t i = 0; i < n; ++i)
            buf.set(i, static_cast<double>(cuts[i]));
        return;
    }
    std::vector<double> values(n);
    for (size_t i = 0; i < n; ++i) {
        if (t.dist == kNormal) {
            values[i] = t.a + t.b * normalAt(key, i);
        } else if (t.dist == kUniform && isFloat(t.dtype)) {
            values[i] = t.a + (t.b - t.a) * uniformAt(key, i);
        } else if (t.dist == kUniform) { // integers: both ends included
            const int64_t lo = static_cast<int64_t>(std::ceil(t.a));
            const int64_t span = static_cast<int64_t>(std::floor(t.b)) - lo + 1;
            values[i] = static_cast<double>(lo + belowAt(key, i, span));
        } else { // randint: high exclusive
            const int64_t lo = static_cast<int64_t>(t.a);
            values[i] = static_cast<double>(lo + belowAt(key, i, static_cast<int64_t>(t.b) - lo));
        }
    }
    if (t.sorted)
        std::sort(values.begin(), values.end());
    for (size_t i = 0; i < n; ++i)
        buf.set(i, values[i]);
}

typedef int (*RunFn)(const hone_args*);

RunFn load(const char* path)
{
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
        std::exit(2);
    }
    RunFn fn = reinterpret_cast<RunFn>(dlsym(handle, "hone_run"));
    if (!fn) {
        std::fprintf(stderr, "%s does not export hone_run (extern \"C\" int hone_run(const hone_args*))\n", path);
        std::exit(2);
    }
    return fn;
}

/// Calls `fn` over the given data pointers; returns its return code.
int call(RunFn fn, const ShapeDef& s, const std::vector<void*>& in, const std::vector<void*>& out, void* stream,
    void* workspace, size_t workspaceBytes)
{
    std::vector<hone_param> params;
    for (const auto& p : s.params)
        params.push_back({p.first.c_str(), p.second});
    auto tensors = [](const std::vector<TensorDef>& defs, const std::vector<void*>& ptrs) {
        std::vector<hone_tensor> ts;
        for (size_t i = 0; i < defs.size(); ++i) {
            hone_tensor t;
            std::memset(&t, 0, sizeof t);
            t.name = defs[i].name.c_str();
            t.data = ptrs[i];
            t.dtype = defs[i].dtype;
            t.rank = static_cast<int32_t>(defs[i].shape.size());
            int64_t stride = 1;
            for (int32_t d = t.rank - 1; d >= 0; --d) {
                t.shape[d] = defs[i].shape[static_cast<size_t>(d)];
                t.strides[d] = stride;
                stride *= t.shape[d];
            }
            ts.push_back(t);
        }
        return ts;
    };
    const std::vector<hone_tensor> ins = tensors(s.inputs, in);
    const std::vector<hone_tensor> outs = tensors(s.outputs, out);
    hone_args a;
    std::memset(&a, 0, sizeof a);
    a.abi_version = HONE_ABI_VERSION;
    a.num_inputs = static_cast<int32_t>(ins.size());
    a.num_outputs = static_cast<int32_t>(outs.size());
    a.num_params = static_cast<int32_t>(params.size());
    a.inputs = ins.data();
    a.outputs = outs.data();
    a.params = params.data();
    a.stream = stream;
    a.workspace = workspace;
    a.workspace_bytes = workspaceBytes;
    return fn(&a);
}

#if HONE_TEST_CUDA
void cudaCheck(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        std::fprintf(stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString(e));
        std::exit(2);
    }
}
#endif

/// Compares one output; returns an empty string when it passes, else why not.
std::string compare(const TensorDef& t, const Buffer& got, const Buffer& want, double* maxAbs)
{
    size_t bad = 0, first = 0;
    std::string kind;
    double firstGot = 0, firstWant = 0;
    for (size_t i = 0; i < got.numel; ++i) {
        const double w = want.at(i);
        const double g = got.at(i);
        bool ok = true;
        std::string why;
        if (got.isPoison(i) && !want.isPoison(i)) {
            ok = false;
            why = "never written";
        } else if (!std::isfinite(g) && std::isfinite(w)) {
            ok = false;
            why = "NaN or Inf where the reference is finite";
        } else if (!std::isfinite(w)) {
            ok = (std::isnan(w) && std::isnan(g)) || g == w;
            why = "not the reference's NaN/Inf";
        } else {
            const double diff = std::fabs(g - w);
            *maxAbs = std::max(*maxAbs, diff);
            ok = diff <= t.atol + t.rtol * std::fabs(w);
            why = "out of tolerance";
        }
        if (!ok && bad++ == 0) {
            first = i;
            kind = why;
            firstGot = g;
            firstWant = w;
        }
    }
    if (bad == 0)
        return {};
    char buf[512];
    std::snprintf(buf, sizeof buf, "output '%s': %zu of %zu elements wrong (first at index %zu, %s: got %.9g, want %.9g; atol %g, rtol %g)",
        t.name.c_str(), bad, got.numel, first, kind.c_str(), firstGot, firstWant, t.atol, t.rtol);
    return buf;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s REFERENCE.so CANDIDATE.so\n", argv[0]);
        return 2;
    }
    const RunFn reference = load(argv[1]);
    const RunFn candidate = load(argv[2]);
    void* stream = nullptr;
    void* workspace = nullptr;
    size_t workspaceBytes = 0;
#if HONE_TEST_CUDA
    cudaStream_t s;
    cudaCheck(cudaStreamCreate(&s), "cudaStreamCreate");
    stream = s;
    workspaceBytes = size_t(64) << 20;
    cudaCheck(cudaMalloc(&workspace, workspaceBytes), "cudaMalloc(workspace)");
#endif
    int checks = 0, failures = 0;
    for (const ShapeDef& shape : kShapes) {
        for (uint64_t seed : kSeeds) {
            ++checks;
            std::vector<Buffer> inputs, want, got;
            for (size_t i = 0; i < shape.inputs.size(); ++i) {
                inputs.emplace_back(shape.inputs[i]);
                fill(inputs.back(), shape.inputs[i], seed, shape.label, i);
            }
            for (const auto& t : shape.outputs) {
                want.emplace_back(t);
                want.back().poison();
                got.emplace_back(t);
                got.back().poison();
            }
            std::vector<Buffer> before(inputs);
            std::vector<void*> in, wantPtr;
            for (auto& b : inputs)
                in.push_back(b.data.get());
            for (auto& b : want)
                wantPtr.push_back(b.data.get());
            if (int rc = call(reference, shape, in, wantPtr, nullptr, nullptr, 0)) {
                std::printf("ERROR %s seed %llu: the reference returned %d\n", shape.label.c_str(),
                    static_cast<unsigned long long>(seed), rc);
                ++failures;
                continue;
            }
            int rc = 0;
#if HONE_TEST_CUDA
            std::vector<void*> dIn, dOut;
            for (auto& b : inputs) {
                void* p = nullptr;
                cudaCheck(cudaMalloc(&p, std::max<size_t>(b.bytes, 256)), "cudaMalloc(input)");
                cudaCheck(cudaMemcpy(p, b.data.get(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(input)");
                dIn.push_back(p);
            }
            for (auto& b : got) {
                void* p = nullptr;
                cudaCheck(cudaMalloc(&p, std::max<size_t>(b.bytes, 256)), "cudaMalloc(output)");
                cudaCheck(cudaMemcpy(p, b.data.get(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(output)");
                dOut.push_back(p);
            }
            rc = call(candidate, shape, dIn, dOut, stream, workspace, workspaceBytes);
            cudaCheck(cudaStreamSynchronize(s), "the candidate's kernels");
            cudaCheck(cudaDeviceSynchronize(), "the candidate's kernels");
            for (size_t i = 0; i < got.size(); ++i)
                cudaCheck(cudaMemcpy(got[i].data.get(), dOut[i], got[i].bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(output)");
            for (size_t i = 0; i < inputs.size(); ++i)
                cudaCheck(cudaMemcpy(inputs[i].data.get(), dIn[i], inputs[i].bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(input)");
            for (void* p : dIn)
                cudaFree(p);
            for (void* p : dOut)
                cudaFree(p);
#else
            std::vector<void*> gotPtr;
            for (auto& b : got)
                gotPtr.push_back(b.data.get());
            rc = call(candidate, shape, in, gotPtr, stream, workspace, workspaceBytes);
#endif
            std::string why;
            if (rc != 0)
                why = "hone_run returned " + std::to_string(rc);
            for (size_t i = 0; why.empty() && i < inputs.size(); ++i)
                if (std::memcmp(inputs[i].data.get(), before[i].data.get(), inputs[i].bytes) != 0)
                    why = "input '" + shape.inputs[i].name + "' was modified; inputs are read-only";
            double maxAbs = 0;
            for (size_t o = 0; why.empty() && o < got.size(); ++o)
                why = compare(shape.outputs[o], got[o], want[o], &maxAbs);
            if (why.empty()) {
                std::printf("ok   %s seed %llu (max abs err %.3g)\n", shape.label.c_str(),
                    static_cast<unsigned long long>(seed), maxAbs);
            } else {
                std::printf("FAIL %s seed %llu: %s\n", shape.label.c_str(), static_cast<unsigned long long>(seed), why.c_str());
                ++failures;
            }
        }
    }
    std::printf("%s: %d of %d checks passed\n", kProblem, checks - failures, checks);
    return failures ? 1 : 0;
}
