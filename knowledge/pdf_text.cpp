// PDF text through poppler-cpp, page by page. Without poppler the build still succeeds and a
// PDF gets an error that says how to enable it.

#include "knowledge/document.h"

#ifdef HONE_HAVE_POPPLER
#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-page.h>

#include <memory>
#include <mutex>
#endif

#include <filesystem>
#include <fstream>

namespace hone::knowledge {

#ifdef HONE_HAVE_POPPLER
namespace {

// poppler reports parse problems through one global hook; keep its last words for our message
// instead of letting it print to stderr.
std::mutex g_popplerMutex;
std::string g_popplerLast;

void popplerMessage(const std::string& msg, void*)
{
    g_popplerLast = msg;
}

} // namespace

bool pdfSupported()
{
    return true;
}

std::vector<std::string> readPdfPages(const std::string& path)
{
    {
        std::ifstream probe(path, std::ios::binary);
        if (!probe)
            throw IngestError(path + ": cannot be read; check the path and its permissions");
        char magic[5] = {};
        probe.read(magic, 5);
        if (std::string(magic, 5) != "%PDF-")
            throw IngestError(path
                + ": is not a PDF (it does not start with %PDF-); check the file, or give it the "
                  "extension of its real format");
    }
    std::lock_guard<std::mutex> lock(g_popplerMutex);
    g_popplerLast.clear();
    poppler::set_debug_error_function(popplerMessage, nullptr);
    std::unique_ptr<poppler::document> doc(poppler::document::load_from_file(path));
    if (!doc)
        throw IngestError(path + ": poppler cannot parse this PDF"
            + (g_popplerLast.empty() ? "" : " (" + g_popplerLast + ")")
            + "; it is probably truncated or corrupt: re-download or re-export it, or convert it to text "
              "(pdftotext) and add the .txt");
    if (doc->is_locked())
        throw IngestError(
            path + ": the PDF is encrypted; save an unlocked copy (e.g. qpdf --decrypt) and add that");
    std::vector<std::string> pages;
    for (int i = 0; i < doc->pages(); ++i) {
        std::unique_ptr<poppler::page> page(doc->create_page(i));
        if (!page)
            throw IngestError(path + ": page " + std::to_string(i + 1)
                + " cannot be read; the PDF is damaged: re-export it, or convert it to text (pdftotext)");
        poppler::byte_array utf8 = page->text(poppler::rectf(), poppler::page::raw_order_layout).to_utf8();
        pages.emplace_back(utf8.begin(), utf8.end());
    }
    if (pages.empty())
        throw IngestError(path + ": the PDF has no pages; check that the export finished");
    return pages;
}

#else

bool pdfSupported()
{
    return false;
}

std::vector<std::string> readPdfPages(const std::string& path)
{
    throw IngestError(path
        + ": this hone was built without PDF support; install libpoppler-cpp-dev and rebuild, "
          "or convert the PDF to text (pdftotext) and add the .txt");
}

#endif

} // namespace hone::knowledge
