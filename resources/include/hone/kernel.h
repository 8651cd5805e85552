/* Hone candidate ABI, version 1.
 *
 * A candidate (and a problem's reference) is one translation unit that exports
 *
 *     extern "C" int hone_run(const hone_args* args);
 *
 * returning 0 on success. The harness owns every buffer: inputs are read-only, outputs are
 * pre-filled with a poison pattern and every element must be written. On the CPU the pointers
 * are host memory; on a GPU they are device memory and `stream` is the stream to launch on.
 *
 * Tunable parameters are declared in comments and compiled in as -D definitions:
 *     // hone:knob BLOCK = 64 | 128 | 256
 *     // hone:require BLOCK % 32 == 0
 *     // hone:flags -ffast-math
 * Plain C so that C++, CUDA and HIP sources can all include it. */
#ifndef HONE_KERNEL_H
#define HONE_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HONE_ABI_VERSION 1
#define HONE_MAX_RANK 8

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hone_dtype {
    HONE_F32 = 0,
    HONE_F16 = 1,
    HONE_BF16 = 2,
    HONE_F64 = 3,
    HONE_I32 = 4,
    HONE_I64 = 5,
    HONE_U8 = 6
} hone_dtype;

typedef struct hone_tensor {
    const char* name;
    void* data;                        /* host or device pointer, see above */
    int32_t dtype;                     /* hone_dtype */
    int32_t rank;
    int64_t shape[HONE_MAX_RANK];
    int64_t strides[HONE_MAX_RANK];    /* in elements; contiguous row-major in ABI v1 */
} hone_tensor;

typedef struct hone_param {
    const char* name;
    double value;
} hone_param;

typedef struct hone_args {
    int32_t abi_version;               /* HONE_ABI_VERSION */
    int32_t num_inputs;
    int32_t num_outputs;
    int32_t num_params;
    const hone_tensor* inputs;
    const hone_tensor* outputs;        /* the struct is const, the data it points to is not */
    const hone_param* params;          /* scalar params and the shape symbols of this call */
    void* stream;                      /* cudaStream_t / hipStream_t; NULL on the CPU */
    void* workspace;                   /* scratch owned by the harness, may be NULL */
    size_t workspace_bytes;
} hone_args;

/* Returns the named scalar (a problem param or a shape symbol such as "M"), or `fallback`. */
static inline double hone_param_or(const hone_args* a, const char* name, double fallback)
{
    for (int32_t i = 0; i < a->num_params; ++i)
        if (strcmp(a->params[i].name, name) == 0)
            return a->params[i].value;
    return fallback;
}

static inline int64_t hone_numel(const hone_tensor* t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; ++i)
        n *= t->shape[i];
    return n;
}

/* bf16 and f16 helpers for host code (reference implementations, CPU candidates). */
static inline float hone_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t hone_f32_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu))
        return (uint16_t)((bits >> 16) | 0x40); /* keep NaN a NaN */
    bits += 0x7fffu + ((bits >> 16) & 1u);      /* round to nearest even */
    return (uint16_t)(bits >> 16);
}

static inline float hone_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ffu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t hone_f32_to_f16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t sign = (bits >> 16) & 0x8000u;
    int32_t exp = (int32_t)((bits >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            ++half;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        ++half; /* may carry into the exponent, which is the right rounding */
    return (uint16_t)half;
}

/* The entry point every candidate and reference defines. */
int hone_run(const hone_args* args);

#ifdef __cplusplus
}
#endif

#endif /* HONE_KERNEL_H */
