#pragma once

#include "core/eval_result.h"

#include <string>
#include <vector>

namespace hone::core {

class Store;

/// Compares the hashes of the worker's cache entries that `r` reports (`cache.entries`) with
/// those `store` recorded for the same keys on the same machine, recording new ones. Each
/// difference becomes a warning in `r.cache` and a sentence in its evidence, and is returned.
/// The worker checks its cache against its own manifest, which a hand able to rewrite the cache
/// can rewrite too; the store keeps the first hash it saw (docs/THREAT_MODEL.md).
std::vector<std::string> flagCacheChanges(Store& store, protocol::EvalResult& r);

} // namespace hone::core
