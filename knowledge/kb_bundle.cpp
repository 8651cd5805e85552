// Export and import of a curated base as one JSON file ("hone-kb-bundle").

#include "knowledge/knowledge_base.h"

#include "core/store.h"
#include "knowledge/skills.h"
#include "knowledge/sqlite_db.h"

namespace hone::knowledge {
namespace {

constexpr const char* kBundleFormat = "hone-kb-bundle";
constexpr int kBundleVersion = 1;

std::string need(const nlohmann::json& j, const char* key, const std::string& where)
{
    auto it = j.find(key);
    if (it == j.end() || !it->is_string())
        throw IngestError(where + ": field '" + key + "' is missing or not a string; re-export the bundle");
    return it->get<std::string>();
}

std::vector<std::string> stringList(const nlohmann::json& j, const char* key, const std::string& where)
{
    std::vector<std::string> out;
    auto it = j.find(key);
    if (it == j.end())
        return out;
    if (!it->is_array())
        throw IngestError(
            where + ": field '" + std::string(key) + "' must be a list of strings; re-export the bundle");
    for (const auto& v : *it) {
        if (!v.is_string())
            throw IngestError(
                where + ": field '" + std::string(key) + "' must hold strings only; re-export the bundle");
        out.push_back(v.get<std::string>());
    }
    return out;
}

} // namespace

nlohmann::json KnowledgeBase::exportBundle() const
{
    nlohmann::json docs = nlohmann::json::array();
    std::map<int64_t, std::string> skillOf;
    {
        db::Stmt s(m_db, "SELECT doc_id, data FROM kb_skills");
        while (s.step())
            skillOf[s.integer(0)] = s.text(1);
    }
    for (const auto& d : documents(false)) {
        nlohmann::json chunksJson = nlohmann::json::array();
        for (const auto& c : chunks(d.id))
            chunksJson.push_back({ { "heading", c.heading }, { "body", c.body },
                { "page_first", c.pageFirst }, { "page_last", c.pageLast } });
        nlohmann::json e = { { "uid", d.uid }, { "version", d.version }, { "title", d.title },
            { "category", categoryName(d.category) }, { "platform", d.tags.platform },
            { "arch", d.tags.arch }, { "family", d.tags.family }, { "source", d.tags.source },
            { "doc_version", d.tags.version }, { "format", d.format }, { "origin", d.origin },
            { "content_hash", d.contentHash }, { "chunks", chunksJson } };
        if (auto s = skillOf.find(d.id); s != skillOf.end())
            e["skill"] = nlohmann::json::parse(s->second);
        docs.push_back(std::move(e));
    }
    return { { "format", kBundleFormat }, { "version", kBundleVersion }, { "exported_at", core::nowIso() },
        { "kb_schema", kSchemaVersion }, { "documents", docs } };
}

std::vector<AddResult> KnowledgeBase::importBundle(const nlohmann::json& bundle, const std::string& name)
{
    if (!bundle.is_object() || bundle.value("format", std::string()) != kBundleFormat)
        throw IngestError(name + ": not a knowledge bundle (no \"format\": \"" + kBundleFormat
            + "\"); create bundles with 'hone kb export FILE'");
    int version = bundle.value("version", 0);
    if (version < 1 || version > kBundleVersion)
        throw IngestError(name + ": bundle version " + std::to_string(version)
            + " is not supported (this hone reads " + std::to_string(kBundleVersion)
            + "); export it again with this hone's version, or upgrade hone");
    auto docsIt = bundle.find("documents");
    if (docsIt == bundle.end() || !docsIt->is_array())
        throw IngestError(name + ": the bundle has no 'documents' list; re-export it");

    // Everything is parsed and checked before the first write.
    std::vector<std::pair<SourceDocument, std::string>> parsed;
    for (size_t i = 0; i < docsIt->size(); ++i) {
        const auto& e = (*docsIt)[i];
        std::string where = name + ": document " + std::to_string(i + 1);
        if (!e.is_object())
            throw IngestError(where + " is not an object; re-export the bundle");
        SourceDocument d;
        d.uid = need(e, "uid", where);
        where += " (" + d.uid + ")";
        d.title = need(e, "title", where);
        auto cat = parseCategory(need(e, "category", where));
        if (!cat)
            throw IngestError(where + ": unknown category '" + e["category"].get<std::string>()
                + "'; expected correctness, guidance, hardware or skill");
        d.category = *cat;
        d.categorySet = true;
        d.format = e.value("format", std::string("bundle"));
        d.origin = e.value("origin", std::string());
        d.tags.platform = e.value("platform", std::string("any"));
        d.tags.arch = stringList(e, "arch", where);
        d.tags.family = stringList(e, "family", where);
        d.tags.source = e.value("source", std::string());
        d.tags.version = e.value("doc_version", std::string());
        auto chunksIt = e.find("chunks");
        if (chunksIt == e.end() || !chunksIt->is_array() || chunksIt->empty())
            throw IngestError(where + ": no chunks; re-export the bundle");
        for (const auto& c : *chunksIt) {
            if (!c.is_object())
                throw IngestError(where + ": a chunk is not an object; re-export the bundle");
            d.sections.push_back(
                { need(c, "heading", where), need(c, "body", where), c.value("page_first", 0) });
        }
        std::string skill;
        if (auto s = e.find("skill"); s != e.end()) {
            if (!s->is_object())
                throw IngestError(where + ": 'skill' must be an object; re-export the bundle");
            skill = Skill::fromJson(*s).toJson().dump();
        }
        parsed.emplace_back(std::move(d), std::move(skill));
    }
    db::Transaction tx(m_db);
    std::vector<AddResult> out;
    for (const auto& [doc, skill] : parsed) {
        out.push_back(addLocked(doc, skill));
        if (auto hash = (*docsIt)[out.size() - 1].find("content_hash");
            hash != (*docsIt)[out.size() - 1].end()) {
            // A hash that no longer matches means the text was changed by hand or damaged.
            auto d = document("#" + std::to_string(out.back().docId));
            if (out.back().status != AddStatus::Duplicate && d && hash->is_string()
                && d->contentHash != hash->get<std::string>())
                throw IngestError(name + ": document " + std::to_string(out.size()) + " (" + doc.uid
                    + ") does not match its content_hash (edited or damaged); re-export it, or delete its "
                      "content_hash field if the edit was deliberate");
        }
    }
    tx.commit();
    return out;
}

} // namespace hone::knowledge
