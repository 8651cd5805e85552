#pragma once

#include "knowledge/knowledge_base.h"

#include <filesystem>
#include <vector>

namespace hone::knowledge {

/// The corpus Hone ships (resources/knowledge: correctness rules, hardware notes, guidance) and
/// the import a fresh knowledge base is offered (`hone kb init`, the workbench's curator).

/// The bundled corpus folder, `knowledge` of the resources folder that core::findResource finds
/// ($HONE_RESOURCES, share/hone beside the binary, the source tree); empty when none has it.
std::filesystem::path bundledCorpusDir();

/// The corpus's documents (every .md file of `dir`, sorted by name). Throws IngestError
/// naming the file when one cannot be read, and when the folder holds none.
std::vector<SourceDocument> readCorpus(const std::filesystem::path& dir);

/// Adds the corpus to `kb` (all or nothing, like addAll): new documents are added, changed ones
/// updated, the rest left as they are. One result per file, in readCorpus's order.
std::vector<AddResult> importCorpus(KnowledgeBase& kb, const std::filesystem::path& dir);

} // namespace hone::knowledge
