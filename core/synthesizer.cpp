#include "core/synthesizer.h"

namespace hone::core {

const char* memoryOperatorName(MemoryOperator op)
{
    switch (op) {
    case MemoryOperator::Inherit:
        return "inherit";
    case MemoryOperator::Compare:
        return "compare";
    case MemoryOperator::Combine:
        return "combine";
    case MemoryOperator::Restart:
        return "restart";
    }
    return "inherit";
}

std::optional<MemoryOperator> memoryOperatorFromName(std::string_view name)
{
    for (MemoryOperator op : { MemoryOperator::Inherit, MemoryOperator::Compare, MemoryOperator::Combine,
             MemoryOperator::Restart })
        if (name == memoryOperatorName(op))
            return op;
    return std::nullopt;
}

} // namespace hone::core
