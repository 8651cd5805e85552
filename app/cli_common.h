#pragma once

#include <filesystem>
#include <string>

namespace hone::app {

/// $HONE_STORE, else $XDG_DATA_HOME/hone/hone.db, else ~/.local/share/hone/hone.db.
std::filesystem::path defaultStorePath();

/// $XDG_DATA_HOME/hone/hone.db, else ~/.local/share/hone/hone.db: the one store location whose
/// missing folders Hone makes by itself.
std::filesystem::path builtInStorePath();

/// For commands that read what earlier commands stored (show, export, resume, replay, kb
/// search, ...): throws CliError (ExitCode::Input) naming `path` and the fix when no file is
/// there, before anything opens it, so a mistyped --store leaves no empty database behind.
/// `what` names the file in the message ("store", "knowledge base").
void requireExistingStore(const std::filesystem::path& path, const std::string& what = "store");

/// For commands that start something new (run, bench, kb add, kb import): the file may be
/// made, but a missing folder above it only at the built-in location or with `createFolders`
/// (--create); otherwise throws CliError (ExitCode::Input) naming the folder.
void prepareNewStore(const std::filesystem::path& path, bool createFolders, const std::string& what = "store");

/// hone-worker next to this executable, else "hone-worker" from PATH.
std::string defaultWorkerPath();

/// "1.23 ms", "845 us", "12.0 s".
std::string formatNs(double ns);

} // namespace hone::app
