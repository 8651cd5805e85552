#include "knowledge/document.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace hone::knowledge {
namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string trim(std::string_view s)
{
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

/// Splits `text` into pieces of at most `limit` characters, cutting at the last paragraph
/// break before the limit, else the last line break, else the last space.
std::vector<std::string> splitText(const std::string& text, size_t limit)
{
    std::vector<std::string> parts;
    size_t pos = 0;
    while (pos < text.size()) {
        if (text.size() - pos <= limit) {
            parts.push_back(text.substr(pos));
            break;
        }
        size_t cut = std::string::npos;
        for (const char* sep : { "\n\n", "\n", " " }) {
            size_t at = text.rfind(sep, pos + limit - 1);
            // A cut in the first quarter would leave a sliver; try a weaker separator instead.
            if (at != std::string::npos && at > pos + limit / 4) {
                cut = at;
                break;
            }
        }
        if (cut == std::string::npos)
            cut = pos + limit;
        parts.push_back(text.substr(pos, cut - pos));
        pos = cut;
        while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
            ++pos;
    }
    for (auto& p : parts)
        p = trim(p);
    parts.erase(std::remove(parts.begin(), parts.end(), std::string()), parts.end());
    return parts;
}

} // namespace

const char* categoryName(Category c)
{
    switch (c) {
    case Category::Correctness:
        return "correctness";
    case Category::Guidance:
        return "guidance";
    case Category::Hardware:
        return "hardware";
    case Category::Skill:
        return "skill";
    }
    return "guidance";
}

std::optional<Category> parseCategory(std::string_view text)
{
    std::string t = lower(trim(text));
    for (Category c : { Category::Correctness, Category::Guidance, Category::Hardware, Category::Skill })
        if (t == categoryName(c))
            return c;
    return std::nullopt;
}

std::string canonicalArch(std::string_view arch)
{
    std::string a = lower(trim(arch));
    std::replace(a.begin(), a.end(), ' ', '-');
    if (a.empty() || a == "*" || a == "all" || a == "any")
        return "any";
    static const std::map<std::string, std::string> aliases = {
        { "hopper", "sm_90" },
        { "h100", "sm_90" },
        { "h200", "sm_90" },
        { "gh100", "sm_90" },
        { "h100-sxm", "sm_90" },
        { "ampere", "sm_80" },
        { "a100", "sm_80" },
        { "ada", "sm_89" },
        { "l4", "sm_89" },
        { "l40s", "sm_89" },
        { "blackwell", "sm_100" },
        { "b200", "sm_100" },
        { "mi300x", "gfx942" },
        { "mi300a", "gfx942" },
        { "mi300", "gfx942" },
        { "cdna3", "gfx942" },
        { "mi250x", "gfx90a" },
        { "mi250", "gfx90a" },
        { "mi210", "gfx90a" },
        { "cdna2", "gfx90a" },
        { "avx2", "x86_64-avx2" },
        { "x86-64-v3", "x86_64-avx2" },
        { "x86_64-v3", "x86_64-avx2" },
        { "haswell", "x86_64-avx2" },
        { "zen2", "x86_64-avx2" },
        { "zen3", "x86_64-avx2" },
        { "avx512", "x86_64-avx512" },
        { "avx-512", "x86_64-avx512" },
        { "x86-64-v4", "x86_64-avx512" },
        { "x86_64-v4", "x86_64-avx512" },
        { "skylake-avx512", "x86_64-avx512" },
        { "zen4", "x86_64-avx512" },
        { "x86-64-avx2", "x86_64-avx2" },
        { "x86-64-avx512", "x86_64-avx512" },
        { "x86-64", "x86_64" },
        { "amd64", "x86_64" },
        { "x64", "x86_64" },
    };
    if (auto it = aliases.find(a); it != aliases.end())
        return it->second;
    // sm90, sm_90a, compute_90 -> sm_90, sm_90a, sm_90
    for (std::string_view prefix : { "sm_", "sm", "compute_" }) {
        if (a.rfind(prefix, 0) == 0 && a.size() > prefix.size()
            && std::isdigit(static_cast<unsigned char>(a[prefix.size()])))
            return "sm_" + a.substr(prefix.size());
    }
    return a;
}

std::vector<std::string> compatibleArchs(std::string_view arch)
{
    std::string c = canonicalArch(arch);
    if (c == "any")
        return {};
    if (c.rfind("sm_", 0) == 0) {
        std::string base = c.back() == 'a' ? c.substr(0, c.size() - 1) : c;
        return { base, base + "a" };
    }
    // CDNA3's targets share their per-CU resources and ISA: a gfx942 (MI300X) document holds
    // for gfx940/gfx941 code, the targets older ROCm (Debian's 5.2) compiles for.
    if (c == "gfx940" || c == "gfx941" || c == "gfx942")
        return { "gfx940", "gfx941", "gfx942" };
    if (c == "x86_64-avx512")
        return { c, "x86_64-avx2", "x86_64" };
    if (c == "x86_64-avx2")
        return { c, "x86_64" };
    if (c == "x86_64") // the instruction set is unknown: every x86 document may apply
        return { c, "x86_64-avx2", "x86_64-avx512" };
    return { c };
}

std::string platformOfArch(std::string_view arch)
{
    std::string c = canonicalArch(arch);
    if (c.rfind("sm_", 0) == 0)
        return "cuda";
    if (c.rfind("gfx", 0) == 0)
        return "hip";
    if (c.rfind("x86_64", 0) == 0 || c.rfind("aarch64", 0) == 0)
        return "cpu";
    return "";
}

std::vector<std::string> splitTagList(std::string_view text)
{
    std::string t = trim(text);
    if (t.size() >= 2 && t.front() == '[' && t.back() == ']')
        t = t.substr(1, t.size() - 2);
    std::vector<std::string> out;
    std::string item;
    auto flush = [&] {
        std::string v = lower(trim(item));
        if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
            v = v.substr(1, v.size() - 2);
        if (!v.empty() && std::find(out.begin(), out.end(), v) == out.end())
            out.push_back(v);
        item.clear();
    };
    for (char c : t) {
        if (c == ',' || std::isspace(static_cast<unsigned char>(c)))
            flush();
        else
            item += c;
    }
    flush();
    return out;
}

std::vector<ChunkText> chunkSections(const std::vector<Section>& sections, const ChunkOptions& options)
{
    const size_t limit = std::max<size_t>(options.maxChars, 64);
    std::vector<ChunkText> chunks;
    for (const Section& s : sections) {
        std::string body = trim(s.text);
        if (body.empty())
            continue;
        std::vector<std::string> parts = splitText(body, limit);
        for (size_t i = 0; i < parts.size(); ++i) {
            ChunkText c;
            c.heading = s.heading;
            if (parts.size() > 1)
                c.heading += " (part " + std::to_string(i + 1) + "/" + std::to_string(parts.size()) + ")";
            c.body = std::move(parts[i]);
            c.pageFirst = c.pageLast = s.page;
            chunks.push_back(std::move(c));
        }
    }
    return chunks;
}

} // namespace hone::knowledge
