#pragma once

#include <string>

namespace CLI {
class App;
}

namespace hone::app {

/// Registers `hone kb ...` (add, search, list, show, rm, export, import, learn, replay) on
/// `app`. The commands run from their own callbacks; `storePath` is read when they run, so it
/// may be bound to the global --store option. The knowledge base defaults to the store's file
/// (`--kb PATH` or $HONE_KB choose another). Reading commands refuse a missing file; add and
/// import make it, and the missing folders above it only with `createFolders` (--create).
void addKbCommands(CLI::App& app, const std::string& storePath, const bool& createFolders);

} // namespace hone::app
