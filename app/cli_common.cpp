#include "app/cli_common.h"

#include "app/exit_code.h"

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace hone::app {

std::filesystem::path defaultStorePath()
{
    if (const char* s = std::getenv("HONE_STORE"); s && *s)
        return s;
    return builtInStorePath();
}

std::filesystem::path builtInStorePath()
{
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
        return std::filesystem::path(x) / "hone" / "hone.db";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home ? home : ".") / ".local" / "share" / "hone" / "hone.db";
}

void requireExistingStore(const std::filesystem::path& path, const std::string& what)
{
    std::error_code ec;
    if (std::filesystem::exists(path, ec))
        return;
    throw CliError(ExitCode::Input,
        "no " + what + " at " + path.string() + ": the file does not exist. Check the path (--store, $HONE_STORE"
            + (what == "store" ? "" : ", --kb, $HONE_KB")
            + "); this command only reads what is stored"
            + (what == "store" ? "; a new store is made by 'hone run' or 'hone bench'"
                               : "; a new one is made by 'hone kb add' or 'hone kb import'"));
}

void prepareNewStore(const std::filesystem::path& path, bool createFolders, const std::string& what)
{
    std::error_code ec;
    const std::filesystem::path folder = path.parent_path();
    if (folder.empty() || std::filesystem::exists(path, ec) || std::filesystem::is_directory(folder, ec))
        return;
    if (createFolders || path == builtInStorePath()) {
        std::filesystem::create_directories(folder, ec);
        if (ec)
            throw CliError(ExitCode::Input,
                "cannot make the folder " + folder.string() + " of " + what + " " + path.string() + ": " + ec.message());
        return;
    }
    throw CliError(ExitCode::Input,
        "the folder " + folder.string() + " of " + what + " " + path.string()
            + " does not exist; check the path, or pass --create to make the missing folders");
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
