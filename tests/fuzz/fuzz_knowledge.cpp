// Knowledge ingestion after the bytes are read: the Markdown, plain-text and HTML parsers and
// the text stage of PDF ingestion (pages as poppler would give them; poppler itself is not
// fuzzed), then chunking. The first byte picks the format ('m' Markdown, 't' text, 'h' HTML,
// 'p' PDF pages separated by form feeds). Parsers may only throw IngestError; every chunk is
// non-empty and within the chunk limit.
#include "knowledge/document.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace hone::knowledge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    const char mode = static_cast<char>(data[0]);
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    SourceDocument doc;
    try {
        switch (mode) {
        case 'h':
            doc = parseHtml(text, "fuzz.html");
            break;
        case 't':
            doc = parsePlainText(text, "fuzz.txt");
            break;
        case 'p': {
            std::vector<std::string> pages(1);
            for (char c : text) {
                if (c == '\f')
                    pages.emplace_back();
                else
                    pages.back() += c;
            }
            doc = parsePdfText(pages, "fuzz.pdf");
            HONE_FUZZ_CHECK(!doc.sections.empty(), "a PDF document has a section");
            for (const Section& s : doc.sections)
                HONE_FUZZ_CHECK(s.page >= 1 && static_cast<size_t>(s.page) <= pages.size(),
                    "a PDF section names one of its pages");
            break;
        }
        default:
            doc = parseMarkdown(text, "fuzz.md");
            break;
        }
    } catch (const IngestError& e) {
        HONE_FUZZ_CHECK(e.what()[0] != '\0', "an IngestError says what is wrong");
        return 0;
    }
    HONE_FUZZ_CHECK(!doc.uid.empty(), "a document has an id");
    ChunkOptions options;
    options.maxChars = 64 + (size % 192); // the smallest limit chunkSections takes, and up
    for (const ChunkText& c : chunkSections(doc.sections, options)) {
        HONE_FUZZ_CHECK(!c.body.empty(), "a chunk has text");
        HONE_FUZZ_CHECK(c.body.size() <= options.maxChars, "a chunk is within the limit");
    }
    return 0;
}
