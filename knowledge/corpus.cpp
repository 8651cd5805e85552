#include "knowledge/corpus.h"

#include "core/resources.h"
#include "knowledge/document.h"

#include <algorithm>
#include <cstdlib>

namespace hone::knowledge {

namespace fs = std::filesystem;

fs::path bundledCorpusDir()
{
    return core::findResource("knowledge");
}

std::vector<SourceDocument> readCorpus(const fs::path& dir)
{
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".md")
            files.push_back(e.path());
    if (files.empty())
        throw IngestError(dir.string() + ": no .md documents here; set HONE_RESOURCES to Hone's resources folder");
    std::sort(files.begin(), files.end());
    std::vector<SourceDocument> docs;
    docs.reserve(files.size());
    for (const auto& f : files)
        docs.push_back(readDocument(f.string()));
    return docs;
}

std::vector<AddResult> importCorpus(KnowledgeBase& kb, const fs::path& dir)
{
    return kb.addAll(readCorpus(dir));
}

} // namespace hone::knowledge
