#include "core/cache_hashes.h"

#include "core/store.h"

namespace hone::core {

std::vector<std::string> flagCacheChanges(Store& store, protocol::EvalResult& r)
{
    std::vector<std::string> flagged;
    if (!r.cache)
        return flagged;
    std::string machine = r.device();
    if (r.environment && r.environment->extra.contains("host") && r.environment->extra["host"].is_string())
        machine = r.environment->extra["host"].get<std::string>() + " " + machine;
    for (const auto& entry : r.cache->entries) {
        const auto before = store.recordCacheHash(machine, entry.kind, entry.key, entry.sha256);
        if (!before)
            continue;
        const std::string text = "cache entry " + entry.kind + " " + entry.key + " has sha256 " + entry.sha256
            + ", but the store recorded " + *before + " for it on this machine: the worker's cache was rebuilt "
            + "or rewritten since";
        r.cache->warnings.push_back(text);
        if (r.diagnosis)
            r.diagnosis->evidence += (r.diagnosis->evidence.empty() ? "" : ". ") + text;
        flagged.push_back(text);
    }
    return flagged;
}

} // namespace hone::core
