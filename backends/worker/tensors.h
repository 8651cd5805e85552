#pragma once

#include "core/dtype.h"
#include "core/eval_request.h"
#include "hone/draws.h"

#include <hone/kernel.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

/// Host tensors of the worker: deterministic inputs, poisoned outputs, checksums.
namespace hone::backends {

/// A request the worker cannot act on (missing or ill-typed field); the message names it.
using core::protocol::RequestError;

/// The one dtype table (core/dtype.h); a name it does not know throws RequestError.
hone_dtype dtypeFromName(const std::string& name);
using core::dtypeName;
using core::dtypeSize;
using core::isFloat;

/// How many threads the worker's host loops (input draws, hashes, checksums, comparisons) use:
/// `$HONE_WORKER_THREADS` when set to a positive number, else the hardware's threads, at most 16
/// (several workers may share the host: docs/ARCHITECTURE.md).
size_t hostThreads();

/// Runs body(begin, end) over contiguous parts of [0, n): on `threads` threads (at most n) when
/// that is not 0, else on hostThreads() when n >= serialBelow and on the calling thread below.
void parallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t serialBelow = size_t(1) << 20,
    size_t threads = 0);

/// One input or output of a resolved shape (core/eval_request.h, docs/FORMATS.md).
using core::protocol::TensorDesc;
using core::protocol::parseTensors;

/// The poison patterns of outputs (HostTensor::poison): NaNs with a payload for floats, 0xA5
/// bytes for integers. The judge's device fill uses the same (cuda_judge.cpp; the kernels'
/// own copy in resources/calibration/cuda_judge.cu is checked against them by tst_cuda_judge).
inline constexpr uint32_t kPoisonF32 = 0x7FC0DEADu;
inline constexpr uint64_t kPoisonF64 = 0x7FF8DEADBEEFDEADull;
inline constexpr uint16_t kPoisonF16 = 0x7E01u;
inline constexpr uint16_t kPoisonBF16 = 0x7FC1u;
inline constexpr unsigned char kPoisonByte = 0xA5;

/// A 64-byte aligned host buffer holding one tensor.
class HostTensor {
public:
    explicit HostTensor(TensorDesc desc); // throws std::bad_alloc
    HostTensor(const HostTensor& other);
    HostTensor& operator=(const HostTensor&) = delete;
    HostTensor(HostTensor&&) noexcept = default;
    HostTensor& operator=(HostTensor&&) noexcept = default;

    const TensorDesc& desc() const { return m_desc; }
    size_t numel() const { return m_numel; }
    size_t bytes() const { return m_bytes; }
    void* data() { return m_data.get(); }
    const void* data() const { return m_data.get(); }

    /// Element `i` widened to double (f16/bf16 through the kernel.h helpers). Inline: the
    /// comparison with the reference calls it for every element of gigabyte outputs.
    double at(size_t i) const
    {
        const unsigned char* p = m_data.get() + i * m_elementSize;
        switch (m_desc.dtype) {
        case HONE_F32:
            return load<float>(p);
        case HONE_F64:
            return load<double>(p);
        case HONE_F16:
            return hone_f16_to_f32(load<uint16_t>(p));
        case HONE_BF16:
            return hone_bf16_to_f32(load<uint16_t>(p));
        case HONE_I32:
            return load<int32_t>(p);
        case HONE_I64:
            return static_cast<double>(load<int64_t>(p));
        case HONE_U8:
            return *p;
        }
        return 0;
    }
    /// True when element `i` still holds the poison bit pattern.
    bool isPoison(size_t i) const
    {
        const unsigned char* p = m_data.get() + i * m_elementSize;
        switch (m_desc.dtype) {
        case HONE_F32:
            return load<uint32_t>(p) == kPoisonF32;
        case HONE_F64:
            return load<uint64_t>(p) == kPoisonF64;
        case HONE_F16:
            return load<uint16_t>(p) == kPoisonF16;
        case HONE_BF16:
            return load<uint16_t>(p) == kPoisonBF16;
        case HONE_I32:
            return load<uint32_t>(p) == 0xA5A5A5A5u;
        case HONE_I64:
            return load<uint64_t>(p) == 0xA5A5A5A5A5A5A5A5ull;
        case HONE_U8:
            return *p == kPoisonByte;
        }
        return false;
    }
    /// Fills every element with the poison pattern of its dtype (a NaN with a payload for
    /// floats, 0xA5 bytes for integers).
    void poison();
    /// FNV-1a 64 over the bytes.
    uint64_t checksum() const;

    /// Draws the values from `desc().init` with a generator seeded by (seed, shape label,
    /// tensor index), so every worker produces the same inputs for the same request. Element i
    /// depends only on the stream and i: the bytes are the same on any number of `threads`
    /// (0: hostThreads() for tensors of a million elements or more, else the calling thread).
    void fill(uint64_t seed, const std::string& shapeLabel, size_t tensorIndex, size_t threads = 0);

private:
    struct Free {
        void operator()(unsigned char* p) const;
    };
    template <typename T> static T load(const unsigned char* p)
    {
        T v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    TensorDesc m_desc;
    size_t m_numel = 0;
    size_t m_bytes = 0;
    size_t m_elementSize = 0;
    std::unique_ptr<unsigned char[], Free> m_data;
};

/// xoshiro256** seeded through splitmix64.
class Rng {
public:
    explicit Rng(uint64_t seed);
    uint64_t next();
    double uniform01(); // [0, 1)
    double normal(); // Box-Muller, standard normal
    int64_t below(int64_t n); // [0, n), unbiased

private:
    hone_draws::Xoshiro256 m_gen;
    bool m_haveSpare = false;
    double m_spare = 0;
};

} // namespace hone::backends
