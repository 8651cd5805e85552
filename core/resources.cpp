#include "core/resources.h"

#include <algorithm>
#include <cstdlib>

namespace hone::core {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> candidateDirs()
{
    std::vector<fs::path> dirs;
    if (const char* r = std::getenv("HONE_RESOURCES"); r && *r)
        dirs.emplace_back(r);
    std::error_code ec;
    if (const fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
        dirs.push_back(exe.parent_path().parent_path() / "share" / "hone");
    if (const char* s = std::getenv("HONE_SOURCE_DIR"); s && *s)
        dirs.push_back(fs::path(s) / "resources");
    return dirs;
}

} // namespace

std::vector<fs::path> resourceDirs()
{
    std::vector<fs::path> dirs;
    for (const fs::path& d : candidateDirs()) {
        std::error_code ec;
        if (fs::is_directory(d, ec) && std::find(dirs.begin(), dirs.end(), d) == dirs.end())
            dirs.push_back(d);
    }
    return dirs;
}

fs::path findResource(const fs::path& relative)
{
    for (const fs::path& d : resourceDirs()) {
        std::error_code ec;
        if (fs::exists(d / relative, ec))
            return d / relative;
    }
    return {};
}

std::string describeResourceSearch(const fs::path& relative)
{
    std::string where;
    for (const fs::path& d : candidateDirs())
        where += (where.empty() ? "" : ", ") + (d / relative).string();
    return relative.string() + " not found; looked in " + (where.empty() ? std::string("nothing") : where)
        + " (set HONE_RESOURCES to Hone's resources folder: resources/ of the source tree or share/hone of "
          "an install)";
}

} // namespace hone::core
