#pragma once

#include <string>

namespace CLI {
class App;
}

namespace hone::app {

/// Registers `hone replay SESSION... --policy P --seeds N`: runs selection policies against the
/// evaluations recorded in the store, with no device, and reports how many evaluations each
/// needed to reach the best recorded kernel and to come within 5% of it (docs/SEARCH.md).
/// `storePath` is read when the command runs, so it may be bound to the global --store option.
void addReplayCommand(CLI::App& app, const std::string& storePath);

} // namespace hone::app
