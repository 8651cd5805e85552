#pragma once

#include "core/dtype.h"
#include "core/eval_request.h"
#include "hone/draws.h"

#include <hone/kernel.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
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

/// Runs body(begin, end) over contiguous parts of [0, n), on up to 16 threads when
/// n >= serialBelow, else on the calling thread.
void parallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t serialBelow = size_t(1) << 20);

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

    /// Element `i` widened to double (f16/bf16 through the kernel.h helpers).
    double at(size_t i) const;
    /// True when element `i` still holds the poison bit pattern.
    bool isPoison(size_t i) const;
    /// Fills every element with the poison pattern of its dtype (a NaN with a payload for
    /// floats, 0xA5 bytes for integers).
    void poison();
    /// FNV-1a 64 over the bytes.
    uint64_t checksum() const;

    /// Draws the values from `desc().init` with a generator seeded by (seed, shape label,
    /// tensor index), so every worker produces the same inputs for the same request.
    void fill(uint64_t seed, const std::string& shapeLabel, size_t tensorIndex);

private:
    struct Free {
        void operator()(unsigned char* p) const;
    };
    TensorDesc m_desc;
    size_t m_numel = 0;
    size_t m_bytes = 0;
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
