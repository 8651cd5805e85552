#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hone::knowledge {

/// The four kinds of knowledge (DESIGN.md §7).
enum class Category { Correctness, Guidance, Hardware, Skill };
const char* categoryName(Category c);
std::optional<Category> parseCategory(std::string_view text);

/// Raised when a file cannot be ingested. The message starts with the file name and says
/// what to do about it.
class IngestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Raised for knowledge-base (database) failures; the message names the file.
class KbError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Where a document applies and where it came from. Tag values are lower-case; an empty list
/// (or "any") means "applies everywhere".
struct Tags {
    std::string platform = "any"; // cuda | hip | cpu | any
    std::vector<std::string> arch; // canonical: sm_90, gfx942, x86_64-avx2, ...
    std::vector<std::string> family; // op families: softmax, gemm, reduction, ...
    std::string source; // the public documents the facts come from
    std::string version; // of the source, or of the document
};

/// Canonical spelling of an architecture tag: "H100", "hopper", "sm90" -> "sm_90";
/// "MI300X", "cdna3" -> "gfx942"; "avx512" -> "x86_64-avx512". Unknown names are lower-cased.
std::string canonicalArch(std::string_view arch);

/// The document arch tags that apply to a device of `arch`: itself, its variants
/// (sm_90 <-> sm_90a) and, for x86, the narrower instruction sets it also runs.
std::vector<std::string> compatibleArchs(std::string_view arch);

/// cuda for sm_*, hip for gfx*, cpu for x86_64*/aarch64*, else "".
std::string platformOfArch(std::string_view arch);

/// Splits "a, b c" or "[a, b]" into lower-case items.
std::vector<std::string> splitTagList(std::string_view text);

/// One headed part of a source document, before chunking.
struct Section {
    std::string heading; // the heading path, "Shared memory > Bank conflicts"
    std::string text;
    int page = 0; // 1-based PDF page; 0 when the format has no pages
};

/// A parsed file (or a bundle entry, or a distilled skill), ready to be stored.
struct SourceDocument {
    std::string uid; // stable identity: front-matter `id`, else the file's stem
    std::string title;
    std::string format; // markdown | text | html | pdf | skill | bundle
    std::string origin; // the file it came from
    Category category = Category::Guidance;
    bool categorySet = false; // false: neither the file nor the caller named one
    Tags tags;
    std::vector<Section> sections;
};

/// A stored piece of a document: one heading's text, split when it is too long.
struct ChunkText {
    std::string heading;
    std::string body;
    int pageFirst = 0;
    int pageLast = 0;
};

struct ChunkOptions {
    size_t maxChars = 1600; // longer sections are split at paragraphs, then lines, then words
};

/// Chunks by heading: one chunk per non-empty section, long sections split into
/// "heading (part i/n)" pieces no longer than `maxChars`.
std::vector<ChunkText> chunkSections(const std::vector<Section>& sections, const ChunkOptions& options = {});

/// Caller-supplied tags and names; set fields override what the file says.
struct IngestOverrides {
    std::optional<Category> category;
    std::string platform;
    std::vector<std::string> arch;
    std::vector<std::string> family;
    std::string source;
    std::string version;
    std::string title;
    std::string uid;
};

/// The file extensions readDocument reads, lower case with the dot (".md", ..., ".pdf").
const std::vector<std::string>& documentExtensions();

/// A path as `hone kb add` and the workbench's curator import it: a file is itself; a folder
/// expands, recursively and sorted, to its files with a documentExtensions() extension (none:
/// an empty list, which callers report as "the folder holds no documents").
std::vector<std::string> expandDocumentPath(const std::string& path);

/// Reads one file by its extension: .md/.markdown (optional front-matter), .txt, .html/.htm
/// (tags stripped, headings kept) or .pdf (text through poppler-cpp, page per section).
/// Throws IngestError naming the file and the fix.
SourceDocument readDocument(const std::string& path, const IngestOverrides& overrides = {});

/// The parsers behind readDocument, on text already in memory. `name` is used in messages
/// and as the default title and uid.
SourceDocument parseMarkdown(const std::string& text, const std::string& name);
SourceDocument parsePlainText(const std::string& text, const std::string& name);
SourceDocument parseHtml(const std::string& text, const std::string& name);
/// The text stage of PDF ingestion: one section per page that has text, headed by its first
/// line when that reads as a heading. Throws IngestError when no page has text.
SourceDocument parsePdfText(const std::vector<std::string>& pages, const std::string& name);

/// True when poppler-cpp was found at build time.
bool pdfSupported();

/// Text of each page of a PDF, in order. Throws IngestError for an unreadable, corrupt or
/// encrypted file.
std::vector<std::string> readPdfPages(const std::string& path);

} // namespace hone::knowledge
