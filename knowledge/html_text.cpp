// HTML to sections: tags stripped, h1..h6 kept as the heading path, entities decoded, script
// and style content dropped. A forgiving scanner, not a validating parser: documentation pages
// are rarely well-formed.

#include "knowledge/document.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>

namespace hone::knowledge {
namespace {

std::string lower(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
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

void appendUtf8(std::string& out, uint32_t cp)
{
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// Decodes the entity starting at text[i] == '&'; appends it and returns the index after it,
/// or appends '&' and returns i + 1 when it is not an entity.
size_t decodeEntity(const std::string& text, size_t i, std::string& out)
{
    static const std::map<std::string, uint32_t> named = { { "amp", '&' }, { "lt", '<' }, { "gt", '>' },
        { "quot", '"' }, { "apos", '\'' }, { "nbsp", ' ' }, { "ndash", 0x2013 }, { "mdash", 0x2014 },
        { "hellip", 0x2026 }, { "times", 0xD7 }, { "divide", 0xF7 }, { "le", 0x2264 }, { "ge", 0x2265 },
        { "ne", 0x2260 }, { "asymp", 0x2248 }, { "micro", 0xB5 }, { "copy", 0xA9 }, { "reg", 0xAE },
        { "deg", 0xB0 }, { "plusmn", 0xB1 }, { "lsquo", 0x2018 }, { "rsquo", 0x2019 }, { "ldquo", 0x201C },
        { "rdquo", 0x201D }, { "bull", 0x2022 }, { "middot", 0xB7 }, { "rarr", 0x2192 }, { "larr", 0x2190 },
        { "trade", 0x2122 }, { "shy", 0xAD } };
    size_t semi = text.find(';', i + 1);
    if (semi == std::string::npos || semi - i > 10) {
        out += '&';
        return i + 1;
    }
    std::string name = text.substr(i + 1, semi - i - 1);
    if (name.size() >= 2 && name[0] == '#') {
        bool hex = name[1] == 'x' || name[1] == 'X';
        std::string digits = name.substr(hex ? 2 : 1);
        bool ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [hex](unsigned char c) {
            return hex ? std::isxdigit(c) != 0 : std::isdigit(c) != 0;
        });
        if (ok) {
            appendUtf8(out, static_cast<uint32_t>(std::stoul(digits, nullptr, hex ? 16 : 10)));
            return semi + 1;
        }
    } else if (auto it = named.find(name); it != named.end()) {
        appendUtf8(out, it->second);
        return semi + 1;
    }
    out += '&';
    return i + 1;
}

bool isBlockTag(const std::string& t)
{
    static const char* blocks[] = { "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article",
        "pre", "blockquote", "dt", "dd", "dl", "hr", "header", "footer", "nav", "main", "aside", "figure",
        "figcaption", "caption", "tbody", "thead", "body", "html", "form", "details", "summary" };
    return std::find_if(std::begin(blocks), std::end(blocks), [&](const char* b) { return t == b; })
        != std::end(blocks);
}

struct Tag {
    std::string name; // lower case
    bool closing = false;
    size_t end = 0; // index after '>'
};

/// Reads the tag that starts at text[i] == '<'; nullopt when '<' does not open a tag.
std::optional<Tag> readTag(const std::string& text, size_t i)
{
    size_t j = i + 1;
    Tag t;
    if (j < text.size() && text[j] == '/') {
        t.closing = true;
        ++j;
    }
    size_t nameStart = j;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '-'))
        ++j;
    if (j == nameStart)
        return std::nullopt;
    t.name = lower(text.substr(nameStart, j - nameStart));
    char quote = 0;
    while (j < text.size()) {
        char c = text[j];
        if (quote) {
            if (c == quote)
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '>') {
            break;
        }
        ++j;
    }
    t.end = j < text.size() ? j + 1 : text.size();
    return t;
}

} // namespace

SourceDocument parseHtml(const std::string& text, const std::string& name)
{
    SourceDocument doc;
    doc.format = "html";
    doc.origin = name;
    doc.uid = std::filesystem::path(name).stem().string();

    std::vector<std::pair<int, std::string>> path;
    std::string body, headingText, title, firstH1;
    int headingLevel = 0; // > 0 while inside <hN>
    bool inTitle = false;
    int preDepth = 0;
    bool sawHeading = false, sawText = false;
    std::vector<Section> sections;

    auto flush = [&] {
        // Collapse runs of blank lines and trailing spaces left by the tag stripping.
        std::string cleaned, line;
        int blank = 0;
        for (size_t k = 0; k <= body.size(); ++k) {
            if (k == body.size() || body[k] == '\n') {
                std::string t = trim(line);
                if (t.empty()) {
                    ++blank;
                } else {
                    if (!cleaned.empty())
                        cleaned += blank > 0 ? "\n\n" : "\n";
                    std::replace(t.begin(), t.end(), '\x01', ' ');
                    cleaned += t;
                    blank = 0;
                }
                line.clear();
            } else {
                line += body[k];
            }
        }
        body.clear();
        if (cleaned.empty())
            return;
        Section s;
        for (const auto& [level, h] : path)
            s.heading += (s.heading.empty() ? "" : " > ") + h;
        s.text = std::move(cleaned);
        sections.push_back(std::move(s));
    };
    auto put = [&](const std::string& piece) {
        std::string& target = inTitle ? title : headingLevel > 0 ? headingText : body;
        if (!inTitle && headingLevel == 0 && !trim(piece).empty())
            sawText = true;
        if (preDepth == 0) {
            target += piece;
            return;
        }
        // Inside <pre> spaces are content: park them as \x01 so that line trimming keeps them.
        for (char c : piece)
            target += c == ' ' ? '\x01' : c;
    };

    size_t i = 0;
    while (i < text.size()) {
        char c = text[i];
        if (c == '<') {
            if (text.compare(i, 4, "<!--") == 0) {
                size_t e = text.find("-->", i + 4);
                i = e == std::string::npos ? text.size() : e + 3;
                continue;
            }
            if (text.compare(i, 2, "<!") == 0 || text.compare(i, 2, "<?") == 0) {
                size_t e = text.find('>', i);
                i = e == std::string::npos ? text.size() : e + 1;
                continue;
            }
            auto tag = readTag(text, i);
            if (!tag) {
                put("<");
                ++i;
                continue;
            }
            i = tag->end;
            const std::string& t = tag->name;
            if (!tag->closing
                && (t == "script" || t == "style" || t == "noscript" || t == "template" || t == "svg")) {
                // Raw content: skip to the matching close tag.
                std::string lowered = lower(text.substr(i));
                size_t e = lowered.find("</" + t);
                i = e == std::string::npos ? text.size() : i + e;
                continue;
            }
            if (t == "title") {
                inTitle = !tag->closing;
                continue;
            }
            if (t.size() == 2 && t[0] == 'h' && t[1] >= '1' && t[1] <= '6') {
                int level = t[1] - '0';
                if (!tag->closing) {
                    headingLevel = level;
                    headingText.clear();
                } else if (headingLevel > 0) {
                    std::string h = trim(headingText);
                    headingLevel = 0;
                    std::string collapsed;
                    for (char hc : h)
                        if (!(std::isspace(static_cast<unsigned char>(hc)) && !collapsed.empty()
                                && collapsed.back() == ' '))
                            collapsed += std::isspace(static_cast<unsigned char>(hc)) ? ' ' : hc;
                    if (collapsed.empty())
                        continue;
                    if (level == 1 && !sawHeading && !sawText && firstH1.empty()) {
                        firstH1 = collapsed; // the page's own name, like a Markdown "# Title"
                        sawHeading = true;
                        continue;
                    }
                    flush();
                    sawHeading = true;
                    while (!path.empty() && path.back().first >= level)
                        path.pop_back();
                    path.emplace_back(level, collapsed);
                }
                continue;
            }
            if (t == "pre")
                preDepth = std::max(0, preDepth + (tag->closing ? -1 : 1));
            if (t == "li" && !tag->closing)
                put("\n- ");
            else if (t == "p" || t == "pre" || t == "table" || t == "blockquote")
                put("\n\n");
            else if (t == "td" || t == "th")
                put(" ");
            else if (isBlockTag(t))
                put("\n");
            continue;
        }
        if (c == '&') {
            std::string decoded;
            i = decodeEntity(text, i, decoded);
            put(decoded);
            continue;
        }
        if (preDepth == 0 && std::isspace(static_cast<unsigned char>(c))) {
            // Whitespace outside <pre> is one space; line structure comes from the tags.
            std::string& target = inTitle ? title : headingLevel > 0 ? headingText : body;
            if (!target.empty() && target.back() != ' ' && target.back() != '\n')
                target += ' ';
            ++i;
            continue;
        }
        put(std::string(1, c));
        ++i;
    }
    flush();
    doc.title = !trim(title).empty() ? trim(title) : !firstH1.empty() ? firstH1 : doc.uid;
    for (auto& s : sections)
        if (s.heading.empty())
            s.heading = doc.title;
    doc.sections = std::move(sections);
    return doc;
}

} // namespace hone::knowledge
