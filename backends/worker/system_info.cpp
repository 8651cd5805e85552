#include "system_info.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace hone::backends {
namespace {

std::string trim(std::string s)
{
    auto notSpace = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
    s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
    return s;
}

/// The value of the first `key : value` line of /proc/cpuinfo whose key is one of `keys`.
std::string cpuInfoField(std::initializer_list<const char*> keys)
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string key = trim(line.substr(0, colon));
        for (const char* k : keys)
            if (key == k)
                return trim(line.substr(colon + 1));
    }
    return {};
}

/// "48K", "2048K", "32M" as in /sys/devices/system/cpu/cpu0/cache/index*/size.
size_t parseCacheSize(const std::string& text)
{
    size_t value = 0;
    size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
        value = value * 10 + static_cast<size_t>(text[i++] - '0');
    if (i < text.size()) {
        switch (std::toupper(static_cast<unsigned char>(text[i]))) {
        case 'K':
            value <<= 10;
            break;
        case 'M':
            value <<= 20;
            break;
        case 'G':
            value <<= 30;
            break;
        default:
            break;
        }
    }
    return value;
}

} // namespace

std::string cpuModelName()
{
    std::string name = cpuInfoField({ "model name", "Model Name", "cpu model", "Hardware", "uarch" });
    return name.empty() ? std::string("unknown CPU") : name;
}

std::string cpuFeatureFlags()
{
    return cpuInfoField({ "flags", "Features", "isa" });
}

unsigned cpuCores()
{
    return std::max(1u, std::thread::hardware_concurrency());
}

size_t lastLevelCacheBytes()
{
    size_t largest = 0;
    for (int index = 0; index < 16; ++index) {
        std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
        if (!in)
            continue;
        std::string text;
        in >> text;
        largest = std::max(largest, parseCacheSize(text));
    }
    return largest;
}

size_t availableMemoryBytes()
{
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("MemAvailable:", 0) == 0)
            return static_cast<size_t>(std::strtoull(line.c_str() + 13, nullptr, 10)) << 10; // in kB
    return 0;
}

std::string hostName()
{
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0)
        return "unknown";
    return buf;
}

} // namespace hone::backends
