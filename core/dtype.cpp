#include "core/dtype.h"

namespace hone::core {
namespace {

struct Row {
    DType type;
    std::string_view name;
    const char* enumName;
    size_t size;
    bool isFloat;
};

constexpr Row kRows[] = {
    { HONE_F32, "f32", "HONE_F32", 4, true },
    { HONE_F16, "f16", "HONE_F16", 2, true },
    { HONE_BF16, "bf16", "HONE_BF16", 2, true },
    { HONE_F64, "f64", "HONE_F64", 8, true },
    { HONE_I32, "i32", "HONE_I32", 4, false },
    { HONE_I64, "i64", "HONE_I64", 8, false },
    { HONE_U8, "u8", "HONE_U8", 1, false },
};

const Row* rowOf(DType t)
{
    for (const auto& r : kRows)
        if (r.type == t)
            return &r;
    return nullptr;
}

} // namespace

std::optional<DType> dtypeFromName(std::string_view name)
{
    for (const auto& r : kRows)
        if (r.name == name)
            return r.type;
    return std::nullopt;
}

const char* dtypeName(DType t)
{
    const Row* r = rowOf(t);
    return r ? r->name.data() : "?";
}

const char* dtypeEnumName(DType t)
{
    const Row* r = rowOf(t);
    return r ? r->enumName : "?";
}

bool isFloat(DType t)
{
    const Row* r = rowOf(t);
    return r && r->isFloat;
}

size_t dtypeSize(DType t)
{
    const Row* r = rowOf(t);
    return r ? r->size : 0;
}

} // namespace hone::core
