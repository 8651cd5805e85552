// Markdown and plain-text parsing, and the file front door (readDocument) for every format.

#include "knowledge/document.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hone::knowledge {
namespace {

std::string trim(std::string_view s)
{
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

std::string lower(std::string s)
{
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> splitLines(const std::string& text)
{
    std::vector<std::string> lines;
    std::string line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

bool allOf(const std::string& line, char c)
{
    std::string t = trim(line);
    return t.size() >= 3 && std::all_of(t.begin(), t.end(), [c](char x) { return x == c; });
}

/// Builds sections from headed lines: keeps the heading path, the text under each heading,
/// and takes a leading level-1 heading as the title.
class SectionBuilder {
public:
    explicit SectionBuilder(SourceDocument& doc)
        : m_doc(doc)
    {
    }

    void heading(int level, std::string text)
    {
        text = trim(text);
        if (level == 1 && !m_sawText && !m_sawHeading && !m_titleFixed) {
            m_doc.title = text; // "# Title" on top names the document; it is not a section
            m_sawHeading = true;
            return;
        }
        flush();
        m_sawHeading = true;
        while (!m_path.empty() && m_path.back().first >= level)
            m_path.pop_back();
        m_path.emplace_back(level, text);
    }

    void line(const std::string& l)
    {
        if (!trim(l).empty())
            m_sawText = true;
        m_text += l;
        m_text += '\n';
    }

    /// Removes the last line added (a setext underline turns it into a heading).
    std::string takeLastLine()
    {
        if (m_text.empty())
            return {};
        size_t end = m_text.size() - 1; // the trailing '\n'
        size_t start = m_text.rfind('\n', end - 1);
        start = start == std::string::npos ? 0 : start + 1;
        std::string last = m_text.substr(start, end - start);
        m_text.erase(start);
        if (trim(m_text).empty() && m_path.empty() && m_doc.sections.empty())
            m_sawText = false;
        return last;
    }

    void fixTitle() { m_titleFixed = true; }

    void flush()
    {
        std::string body = trim(m_text);
        m_text.clear();
        if (body.empty())
            return;
        Section s;
        for (const auto& [level, text] : m_path)
            s.heading += (s.heading.empty() ? "" : " > ") + text;
        if (s.heading.empty())
            s.heading = m_doc.title;
        s.text = std::move(body);
        m_doc.sections.push_back(std::move(s));
    }

private:
    SourceDocument& m_doc;
    std::vector<std::pair<int, std::string>> m_path;
    std::string m_text;
    bool m_sawText = false;
    bool m_sawHeading = false;
    bool m_titleFixed = false;
};

/// ATX headings ("## Text"), setext headings (a line underlined with === or ---) and fenced
/// code blocks, whose lines are never headings.
void parseHeadedLines(const std::vector<std::string>& lines, size_t first, bool atx, SectionBuilder& b)
{
    bool inFence = false;
    std::string fence;
    int paragraphLines = 0;
    for (size_t i = first; i < lines.size(); ++i) {
        const std::string& l = lines[i];
        std::string t = trim(l);
        size_t indent = l.find_first_not_of(' ');
        if (atx && indent != std::string::npos && indent <= 3
            && (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0)) {
            if (!inFence) {
                inFence = true;
                fence = t.substr(0, 3);
            } else if (t.rfind(fence, 0) == 0) {
                inFence = false;
            }
            b.line(l);
            paragraphLines = 0;
            continue;
        }
        if (inFence) {
            b.line(l);
            continue;
        }
        if (atx && indent != std::string::npos && indent <= 3 && t[0] == '#') {
            size_t level = t.find_first_not_of('#');
            if (level <= 6 && (level == std::string::npos || t[level] == ' ' || t[level] == '\t')) {
                std::string text = level == std::string::npos ? std::string() : trim(t.substr(level));
                while (!text.empty() && text.back() == '#') // closing hashes
                    text.pop_back();
                b.heading(static_cast<int>(level == std::string::npos ? t.size() : level), trim(text));
                paragraphLines = 0;
                continue;
            }
        }
        if (paragraphLines == 1 && (allOf(l, '=') || allOf(l, '-'))) {
            b.heading(allOf(l, '=') ? 1 : 2, b.takeLastLine());
            paragraphLines = 0;
            continue;
        }
        b.line(l);
        paragraphLines = t.empty() ? 0 : paragraphLines + 1;
    }
    b.flush();
}

std::string stemOf(const std::string& name)
{
    return std::filesystem::path(name).stem().string();
}

/// Reads `key: value` lines between the opening and closing `---`; returns the index of the
/// first line after the front-matter.
size_t parseFrontMatter(const std::vector<std::string>& lines, SourceDocument& doc, const std::string& name)
{
    if (lines.empty() || trim(lines[0]) != "---")
        return 0;
    size_t close = 1;
    while (close < lines.size() && trim(lines[close]) != "---" && trim(lines[close]) != "...")
        ++close;
    if (close == lines.size())
        throw IngestError(name
            + ":1: the front-matter opened by '---' is never closed; add a line '---' after its last key");
    for (size_t i = 1; i < lines.size(); ++i) {
        std::string t = trim(lines[i]);
        std::string where = name + ":" + std::to_string(i + 1) + ": ";
        if (t == "---" || t == "...")
            return i + 1;
        if (t.empty() || t[0] == '#')
            continue;
        size_t colon = t.find(':');
        if (colon == std::string::npos)
            throw IngestError(
                where + "front-matter line '" + t + "' is not 'key: value'; write it as 'key: value'");
        std::string key = lower(trim(t.substr(0, colon)));
        std::string value = trim(t.substr(colon + 1));
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')
            && value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        if (key == "id") {
            doc.uid = value;
        } else if (key == "title") {
            doc.title = value;
        } else if (key == "category") {
            auto c = parseCategory(value);
            if (!c)
                throw IngestError(where + "category '" + value
                    + "' is not known; expected one of correctness, guidance, hardware, skill");
            doc.category = *c;
            doc.categorySet = true;
        } else if (key == "platform") {
            doc.tags.platform = lower(value);
        } else if (key == "arch") {
            doc.tags.arch = splitTagList(value);
        } else if (key == "family" || key == "families") {
            doc.tags.family = splitTagList(value);
        } else if (key == "source" || key == "sources") {
            doc.tags.source = value;
        } else if (key == "version") {
            doc.tags.version = value;
        } else {
            throw IngestError(where + "unknown front-matter key '" + key
                + "'; expected id, title, category, platform, arch, family, source or version");
        }
    }
    return lines.size(); // unreachable: the closing line was found above
}

/// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t invalidUtf8At(const std::string& s)
{
    size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > s.size())
            return i;
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
                return i;
        i += n;
    }
    return std::string::npos;
}

std::string readFile(const std::string& path)
{
    std::error_code ec;
    auto st = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(st))
        throw IngestError(path + ": no such file; check the path");
    if (std::filesystem::is_directory(st))
        throw IngestError(path + ": is a folder; pass the files in it instead (e.g. " + path + "/*.md)");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IngestError(path + ": cannot be read (" + std::strerror(errno) + "); check its permissions");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw IngestError(
            path + ": read failed (" + std::strerror(errno) + "); check the disk and try again");
    return ss.str();
}

void checkText(const std::string& path, const std::string& text, const std::string& format)
{
    if (size_t nul = text.find('\0'); nul != std::string::npos)
        throw IngestError(path + ": looks binary (NUL byte at offset " + std::to_string(nul) + "), not "
            + format + " text; check that the file is what its extension says");
    if (size_t bad = invalidUtf8At(text); bad != std::string::npos)
        throw IngestError(path + ": is not valid UTF-8 (first bad byte at offset " + std::to_string(bad)
            + "); convert it first, e.g. iconv -f latin1 -t utf-8 " + path + " > converted"
            + std::filesystem::path(path).extension().string());
}

} // namespace

SourceDocument parsePdfText(const std::vector<std::string>& pages, const std::string& path)
{
    SourceDocument doc;
    doc.format = "pdf";
    doc.uid = stemOf(path);
    doc.title = doc.uid;
    for (size_t i = 0; i < pages.size(); ++i) {
        std::vector<std::string> lines = splitLines(pages[i]);
        // A short first line without end punctuation reads as the page's heading.
        size_t first = 0;
        while (first < lines.size() && trim(lines[first]).empty())
            ++first;
        Section s;
        s.page = static_cast<int>(i + 1);
        std::string head = first < lines.size() ? trim(lines[first]) : std::string();
        bool isHeading = !head.empty() && head.size() <= 80
            && std::string(".,;:").find(head.back()) == std::string::npos
            && std::any_of(head.begin(), head.end(), [](unsigned char c) { return std::isalpha(c); });
        s.heading
            = (isHeading ? head : "Page " + std::to_string(i + 1)) + " (page " + std::to_string(i + 1) + ")";
        for (size_t k = isHeading ? first + 1 : first; k < lines.size(); ++k)
            s.text += trim(lines[k]) + "\n";
        if (trim(s.text).empty() && isHeading)
            s.text = head; // a page holding one line keeps it
        s.text = trim(s.text);
        if (!s.text.empty())
            doc.sections.push_back(std::move(s));
    }
    if (doc.sections.empty())
        throw IngestError(path + ": no text found in its " + std::to_string(pages.size())
            + " page(s); a scanned PDF needs OCR first (e.g. ocrmypdf), then add the result");
    return doc;
}

SourceDocument parseMarkdown(const std::string& text, const std::string& name)
{
    SourceDocument doc;
    doc.format = "markdown";
    doc.origin = name;
    std::vector<std::string> lines = splitLines(text);
    size_t first = parseFrontMatter(lines, doc, name);
    if (doc.uid.empty())
        doc.uid = stemOf(name);
    SectionBuilder b(doc);
    if (!doc.title.empty())
        b.fixTitle();
    else
        doc.title = stemOf(name);
    parseHeadedLines(lines, first, true, b);
    return doc;
}

SourceDocument parsePlainText(const std::string& text, const std::string& name)
{
    SourceDocument doc;
    doc.format = "text";
    doc.origin = name;
    doc.uid = stemOf(name);
    doc.title = doc.uid;
    SectionBuilder b(doc);
    // Only underlined (setext) headings: a '#' in plain text is as likely a comment.
    parseHeadedLines(splitLines(text), 0, false, b);
    return doc;
}

const std::vector<std::string>& documentExtensions()
{
    static const std::vector<std::string> exts = { ".md", ".markdown", ".txt", ".text", ".html", ".htm", ".pdf" };
    return exts;
}

std::vector<std::string> expandDocumentPath(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec))
        return { path };
    const auto& exts = documentExtensions();
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
        const std::string ext = lower(e.path().extension().string());
        if (e.is_regular_file() && std::find(exts.begin(), exts.end(), ext) != exts.end())
            found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    return found;
}

SourceDocument readDocument(const std::string& path, const IngestOverrides& o)
{
    std::string ext = lower(std::filesystem::path(path).extension().string());
    SourceDocument doc;
    if (ext == ".pdf") {
        if (!std::filesystem::exists(path))
            throw IngestError(path + ": no such file; check the path");
        doc = parsePdfText(readPdfPages(path), path);
    } else if (ext == ".md" || ext == ".markdown" || ext == ".txt" || ext == ".text" || ext == ".html"
        || ext == ".htm") {
        std::string text = readFile(path);
        if (text.rfind("\xEF\xBB\xBF", 0) == 0) // byte-order mark
            text.erase(0, 3);
        bool html = ext == ".html" || ext == ".htm";
        bool md = ext == ".md" || ext == ".markdown";
        checkText(path, text, html ? "HTML" : md ? "Markdown" : "plain");
        doc = html ? parseHtml(text, path) : md ? parseMarkdown(text, path) : parsePlainText(text, path);
    } else {
        throw IngestError(path + ": unknown format '" + ext
            + "'; expected .md, .markdown, .txt, .html, .htm or .pdf (convert the file to one of these)");
    }
    doc.origin = path;
    if (o.category) {
        doc.category = *o.category;
        doc.categorySet = true;
    }
    if (!o.platform.empty())
        doc.tags.platform = lower(o.platform);
    if (!o.arch.empty())
        doc.tags.arch = o.arch;
    if (!o.family.empty())
        doc.tags.family = o.family;
    if (!o.source.empty())
        doc.tags.source = o.source;
    if (!o.version.empty())
        doc.tags.version = o.version;
    if (!o.title.empty())
        doc.title = o.title;
    if (!o.uid.empty())
        doc.uid = o.uid;
    if (!doc.categorySet)
        throw IngestError(path
            + ": no category; pass --category correctness|guidance|hardware|skill, or add 'category:' to its "
              "front-matter");
    if (doc.sections.empty())
        throw IngestError(path + ": no text found; add some text, or check that this is the file you meant");
    return doc;
}

} // namespace hone::knowledge
