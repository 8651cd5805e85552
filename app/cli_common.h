#pragma once

#include <filesystem>
#include <string>

namespace hone::app {

/// $HONE_STORE, else $XDG_DATA_HOME/hone/hone.db, else ~/.local/share/hone/hone.db.
std::filesystem::path defaultStorePath();

/// hone-worker next to this executable, else "hone-worker" from PATH.
std::string defaultWorkerPath();

/// "1.23 ms", "845 us", "12.0 s".
std::string formatNs(double ns);

} // namespace hone::app
