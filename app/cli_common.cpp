#include "app/cli_common.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace hone::app {

std::filesystem::path defaultStorePath()
{
    if (const char* s = std::getenv("HONE_STORE"); s && *s)
        return s;
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
        return std::filesystem::path(x) / "hone" / "hone.db";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : ".") / ".local" / "share" / "hone" / "hone.db";
}

std::string defaultWorkerPath()
{
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto sibling = self.parent_path() / "hone-worker";
        if (std::filesystem::exists(sibling, ec))
            return sibling.string();
    }
    return "hone-worker";
}

std::string formatNs(double ns)
{
    char buf[64];
    if (ns >= 1e9)
        std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    else if (ns >= 1e6)
        std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3)
        std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    return buf;
}

} // namespace hone::app
