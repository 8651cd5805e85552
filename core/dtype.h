#pragma once

#include "resources/include/hone/kernel.h"

#include <cstddef>
#include <optional>
#include <string_view>

namespace hone::core {

/// The element type of a tensor: the candidate ABI's `hone_dtype` (resources/include/hone/kernel.h),
/// the one enum that the problem spec, the worker, the exports and the prompt use.
using DType = hone_dtype;

/// "f32", "bf16", ... ; nullopt for an unknown name.
std::optional<DType> dtypeFromName(std::string_view name);
/// "f32", "bf16", ...; "?" for a value outside the enum.
const char* dtypeName(DType t);
/// The enumerator's name in C ("HONE_BF16"), for generated code.
const char* dtypeEnumName(DType t);
bool isFloat(DType t);
/// Bytes per element; 0 for a value outside the enum.
size_t dtypeSize(DType t);

} // namespace hone::core
