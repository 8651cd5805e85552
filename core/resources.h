#pragma once

#include <filesystem>
#include <string>
#include <vector>

/// Where Hone's resource files are: the bundled problems, bench scripts, knowledge corpus, the
/// kernel ABI header. One lookup for every binary and test, so that an installed package, a
/// copied bundle and a build tree find them alike, with no source path compiled in.
namespace hone::core {

/// The resources folders to try, in order, each listed once and only if it exists:
/// 1. `$HONE_RESOURCES` (an explicit choice wins);
/// 2. `share/hone` beside the folder of the running executable (`<exe>/../share/hone`): an
///    install (/usr/bin/hone → /usr/share/hone), a bundle, or a build tree, where CMake links
///    `build/X/share/hone` to the source tree's `resources/`;
/// 3. `$HONE_SOURCE_DIR/resources` (set by the tests).
std::vector<std::filesystem::path> resourceDirs();

/// The first resources folder that holds `relative`, joined with it; empty when none does.
std::filesystem::path findResource(const std::filesystem::path& relative);

/// "…; looked in A, B (set HONE_RESOURCES to Hone's resources folder)": for error messages.
std::string describeResourceSearch(const std::filesystem::path& relative);

} // namespace hone::core
