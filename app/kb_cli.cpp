// `hone kb ...`: curate the knowledge base (add, search, list, show, rm, export, import) and
// work with skills (learn from a session, replay a session with and without the skill prior).

#include "app/kb_cli.h"

#include "app/cli_common.h"
#include "app/cli_errors.h"

#include "core/store.h"
#include "knowledge/corpus.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/replay.h"
#include "knowledge/skills.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

namespace hone::app {
namespace {

namespace kb = hone::knowledge;

struct KbOptions {
    std::string kbPath;
    // add
    std::vector<std::string> files;
    std::string category, platform, arch, family, source, version, title, id;
    // search
    std::vector<std::string> query;
    int k = 5;
    std::string bound, evidence, compileError;
    std::vector<std::string> categories;
    bool json = false;
    // list, show, rm
    bool all = false;
    bool history = false;
    std::vector<std::string> uids;
    std::string uid;
    // export, import
    std::string file;
    // learn, replay
    int64_t session = 0;
    double minGain = 1.10;
    int seeds = 20;
    int budget = 60;
    std::string from, save;
};

std::filesystem::path kbPathOf(const KbOptions& o, const std::string& storePath)
{
    return o.kbPath.empty() ? std::filesystem::path(storePath) : std::filesystem::path(o.kbPath);
}

std::vector<kb::Category> parseCategories(const std::vector<std::string>& names)
{
    std::vector<kb::Category> out;
    for (const auto& n : names) {
        auto c = kb::parseCategory(n);
        if (!c)
            throw CliError(ExitCode::Usage,
                "--category '" + n + "': expected correctness, guidance, hardware or skill");
        out.push_back(*c);
    }
    return out;
}

std::string join(const std::vector<std::string>& v, const char* sep = ",")
{
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : sep) + s;
    return out;
}

std::string pages(int first, int last)
{
    if (first <= 0)
        return {};
    return first == last ? "p. " + std::to_string(first)
                         : "pp. " + std::to_string(first) + "-" + std::to_string(last);
}

/// Files to ingest: folders expand (recursively, sorted) to the files of a supported format.
std::vector<std::string> expandFiles(const std::vector<std::string>& args)
{
    std::vector<std::string> out;
    for (const auto& a : args) {
        const std::vector<std::string> found = knowledge::expandDocumentPath(a);
        if (found.empty())
            throw CliError(ExitCode::Input,
                a + ": the folder holds no .md, .txt, .html or .pdf files; check the path");
        out.insert(out.end(), found.begin(), found.end());
    }
    return out;
}

int cmdAdd(const KbOptions& o, const std::string& store)
{
    std::vector<std::string> files = expandFiles(o.files);
    if (files.size() > 1 && (!o.title.empty() || !o.id.empty()))
        throw CliError(ExitCode::Usage,
            "--title and --id name one document; add the files one at a time to use them");
    kb::IngestOverrides ov;
    if (!o.category.empty()) {
        ov.category = kb::parseCategory(o.category);
        if (!ov.category)
            throw CliError(ExitCode::Usage,
                "--category '" + o.category + "': expected correctness, guidance, hardware or skill");
    }
    ov.platform = o.platform;
    ov.arch = kb::splitTagList(o.arch);
    ov.family = kb::splitTagList(o.family);
    ov.source = o.source;
    ov.version = o.version;
    ov.title = o.title;
    ov.uid = o.id;
    // Every file is read and parsed before the base is touched: one bad file adds nothing.
    std::vector<kb::SourceDocument> docs;
    std::vector<std::string> errors;
    for (const auto& f : files) {
        try {
            docs.push_back(kb::readDocument(f, ov));
        } catch (const kb::IngestError& e) {
            errors.push_back(e.what());
        }
    }
    if (!errors.empty()) {
        for (size_t i = 0; i + 1 < errors.size(); ++i)
            std::fprintf(stderr, "hone: error: %s\n", errors[i].c_str());
        throw CliError(ExitCode::Input,
            errors.back() + "\nnothing was added: fix the file(s) above or leave them out");
    }
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto results = base.addAll(docs);
    int counts[4] = { 0, 0, 0, 0 };
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        ++counts[static_cast<int>(r.status)];
        switch (r.status) {
        case kb::AddStatus::Added:
        case kb::AddStatus::Updated:
            std::printf("%-9s %s v%d (%d chunks) from %s\n", kb::addStatusName(r.status), r.uid.c_str(),
                r.version, r.chunks, files[i].c_str());
            break;
        case kb::AddStatus::Unchanged:
            std::printf("unchanged %s v%d from %s\n", r.uid.c_str(), r.version, files[i].c_str());
            break;
        case kb::AddStatus::Duplicate:
            std::printf(
                "skipped   %s from %s: same text as %s\n", r.uid.c_str(), files[i].c_str(), r.note.c_str());
            break;
        }
    }
    std::printf("%d added, %d updated, %d unchanged, %d duplicates; %d chunks live in %s\n", counts[0],
        counts[1], counts[2], counts[3], base.liveChunkCount(), base.path().string().c_str());
    return 0;
}

int cmdSearch(const KbOptions& o, const std::string& store)
{
    kb::KnowledgeBase base(kbPathOf(o, store));
    std::string text = join(o.query, " ");
    bool fromSignals
        = !o.family.empty() || !o.bound.empty() || !o.evidence.empty() || !o.compileError.empty();
    kb::QueryPlan plan;
    if (fromSignals) {
        kb::RetrievalSignals s;
        s.family = o.family;
        s.arch = o.arch;
        s.platform = o.platform;
        s.bound = o.bound;
        s.evidence = o.evidence;
        s.compileError = o.compileError;
        if (!text.empty())
            s.hints.push_back(text);
        s.categories = parseCategories(o.categories);
        plan = kb::planQuery(s);
    } else {
        if (text.empty())
            throw CliError(ExitCode::Usage,
                "kb search: give a QUERY, or signals such as --family softmax --bound memory");
        kb::SearchFilter f;
        f.arch = o.arch;
        f.platform = o.platform.empty() ? kb::platformOfArch(o.arch) : o.platform;
        f.categories = parseCategories(o.categories);
        plan = kb::planText(text, f);
    }
    auto hits = base.run(plan, o.k);
    if (o.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& h : hits)
            out.push_back(
                { { "chunk", h.chunkId }, { "uid", h.uid }, { "title", h.title }, { "heading", h.heading },
                    { "category", kb::categoryName(h.category) }, { "page_first", h.pageFirst },
                    { "page_last", h.pageLast }, { "score", h.score }, { "bm25", h.bm25 },
                    { "matched", h.matchedTerms }, { "reason", h.reason }, { "snippet", h.snippet } });
        std::cout << nlohmann::json({ { "query", plan.describe() }, { "hits", out } }).dump(2) << "\n";
        return 0;
    }
    std::printf("query  %s\n", plan.describe().c_str());
    if (hits.empty())
        std::printf("no matches in %s\n", base.path().string().c_str());
    for (size_t i = 0; i < hits.size(); ++i) {
        const auto& h = hits[i];
        std::string pg = pages(h.pageFirst, h.pageLast);
        std::printf("%2zu  %6.2f  %s > %s  [%s]%s%s\n", i + 1, h.score, h.uid.c_str(), h.heading.c_str(),
            kb::categoryName(h.category), pg.empty() ? "" : "  ", pg.c_str());
        std::printf("            %s\n            %s\n", h.reason.c_str(), h.snippet.c_str());
    }
    return hits.empty() ? 1 : 0;
}

int cmdList(const KbOptions& o, const std::string& store)
{
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto cats = parseCategories(o.categories);
    auto docs = base.documents(o.all);
    std::erase_if(docs, [&](const kb::DocumentInfo& d) {
        return !cats.empty() && std::find(cats.begin(), cats.end(), d.category) == cats.end();
    });
    if (o.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& d : docs)
            out.push_back({ { "id", d.id }, { "uid", d.uid }, { "version", d.version }, { "title", d.title },
                { "category", kb::categoryName(d.category) }, { "platform", d.tags.platform },
                { "arch", d.tags.arch }, { "family", d.tags.family }, { "chunks", d.chunks },
                { "live", d.live() } });
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    if (docs.empty())
        std::printf("no documents in %s; add some with 'hone kb add FILES --category C'\n",
            base.path().string().c_str());
    for (const auto& d : docs)
        std::printf("%-34s v%-2d %-11s %-5s %-22s %-30s %3d chunks%s  %s\n", d.uid.c_str(), d.version,
            kb::categoryName(d.category), d.tags.platform.c_str(), join(d.tags.arch).c_str(),
            join(d.tags.family).c_str(), d.chunks, d.live() ? "" : " (removed)", d.title.c_str());
    return 0;
}

int cmdShow(const KbOptions& o, const std::string& store)
{
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto d = base.document(o.uid);
    if (!d) {
        auto h = base.history(o.uid);
        if (h.empty())
            throw CliError(ExitCode::Input, "no document '" + o.uid + "' in " + base.path().string()
                + "; list them with 'hone kb list --all'");
        d = h.back(); // removed: show its last version
    }
    std::printf("%s v%d  #%lld  %s%s\n", d->uid.c_str(), d->version, static_cast<long long>(d->id),
        d->title.c_str(), d->live() ? "" : "  (removed)");
    std::printf("category %s  platform %s  arch %s  family %s\n", kb::categoryName(d->category),
        d->tags.platform.c_str(), d->tags.arch.empty() ? "any" : join(d->tags.arch).c_str(),
        d->tags.family.empty() ? "any" : join(d->tags.family).c_str());
    std::printf("source %s  version %s  format %s  from %s  added %s\n",
        d->tags.source.empty() ? "-" : d->tags.source.c_str(),
        d->tags.version.empty() ? "-" : d->tags.version.c_str(), d->format.c_str(), d->origin.c_str(),
        d->createdAt.c_str());
    if (o.history) {
        for (const auto& v : base.history(d->uid))
            std::printf("  v%-2d #%-5lld %s  %s%s\n", v.version, static_cast<long long>(v.id),
                v.createdAt.c_str(), v.removedAt.empty() ? "live" : "retired ", v.removedAt.c_str());
    }
    for (const auto& c : base.chunks(d->id)) {
        kb::ChunkStats st = base.chunkStats(c.id);
        std::string pg = pages(c.pageFirst, c.pageLast);
        std::printf("\n## %s  (chunk %lld%s%s; used %d, beat parent %d of %d)\n%s\n", c.heading.c_str(),
            static_cast<long long>(c.id), pg.empty() ? "" : ", ", pg.c_str(), st.uses, st.wins, st.decided,
            c.body.c_str());
    }
    return 0;
}

int cmdRemove(const KbOptions& o, const std::string& store)
{
    kb::KnowledgeBase base(kbPathOf(o, store));
    int missing = 0;
    for (const auto& u : o.uids) {
        if (base.remove(u)) {
            std::printf(
                "removed %s (its history is kept; 'hone kb show %s --history')\n", u.c_str(), u.c_str());
        } else {
            std::fprintf(
                stderr, "hone: error: no live document '%s'; list them with 'hone kb list'\n", u.c_str());
            ++missing;
        }
    }
    return toInt(missing ? ExitCode::Input : ExitCode::Ok);
}

int cmdExport(const KbOptions& o, const std::string& store)
{
    kb::KnowledgeBase base(kbPathOf(o, store));
    nlohmann::json bundle = base.exportBundle();
    std::string tmp = o.file + ".tmp";
    {
        std::ofstream out(tmp);
        if (!out)
            throw CliError(ExitCode::Input, o.file + ": cannot be written; check the folder and its permissions");
        out << bundle.dump(1) << "\n";
        if (!out)
            throw CliError(ExitCode::Environment, o.file + ": write failed; check the free space");
    }
    std::filesystem::rename(tmp, o.file);
    std::printf("exported %zu documents to %s\n", bundle["documents"].size(), o.file.c_str());
    return 0;
}

int cmdImport(const KbOptions& o, const std::string& store)
{
    std::ifstream in(o.file);
    if (!in)
        throw CliError(ExitCode::Input, o.file + ": cannot be read; check the path");
    nlohmann::json bundle;
    try {
        bundle = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw CliError(ExitCode::Input, o.file + ": not valid JSON (" + std::string(e.what())
            + "); the bundle is damaged: export it again");
    }
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto results = base.importBundle(bundle, o.file);
    int counts[4] = { 0, 0, 0, 0 };
    for (const auto& r : results)
        ++counts[static_cast<int>(r.status)];
    std::printf("imported %s: %d added, %d updated, %d unchanged, %d duplicates\n", o.file.c_str(), counts[0],
        counts[1], counts[2], counts[3]);
    return 0;
}

int cmdLearn(const KbOptions& o, const std::string& store)
{
    core::Store st(store);
    kb::SessionDump dump = kb::loadSession(st, o.session);
    kb::DistillOptions opt;
    opt.minGain = o.minGain;
    opt.arch = o.arch;
    std::string why;
    auto skill = kb::distillSkill(dump, opt, &why);
    if (!skill) {
        std::printf("no skill: %s\n", why.c_str());
        return toInt(ExitCode::Failed);
    }
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto r = base.addSkill(*skill);
    std::printf("%s skill %s v%d: %s on %s, %.2fx (%s-bound -> %s-bound), best %s [%s]\n",
        kb::addStatusName(r.status), r.uid.c_str(), r.version, skill->family.c_str(), skill->arch.c_str(),
        skill->gain, skill->boundBefore.c_str(), skill->boundAfter.c_str(), skill->bestSource.c_str(),
        core::knobsToString(skill->bestKnobs).c_str());
    return 0;
}

int cmdReplay(const KbOptions& o, const std::string& store)
{
    kb::SessionDump dump;
    if (!o.from.empty()) {
        std::ifstream in(o.from);
        if (!in)
            throw CliError(ExitCode::Input, o.from + ": cannot be read; check the path");
        dump = kb::SessionDump::fromJson(nlohmann::json::parse(in, nullptr, false), o.from);
    } else {
        core::Store st(store);
        dump = kb::loadSession(st, o.session);
    }
    if (!o.save.empty()) {
        std::ofstream(o.save) << dump.toJson().dump(1) << "\n";
        std::printf("saved session %lld (%zu evaluations) to %s\n", static_cast<long long>(dump.session),
            dump.evaluations.size(), o.save.c_str());
    }
    std::string arch = o.arch.empty() ? kb::sessionArch(dump) : o.arch;
    kb::KnowledgeBase base(kbPathOf(o, store));
    auto skills = base.skills(dump.family, arch);
    if (skills.empty())
        throw std::runtime_error("no skill for family " + dump.family + " on " + arch + " in "
            + base.path().string() + "; distil one first with 'hone kb learn SESSION'");
    kb::NearestReplayTable table(dump);
    std::map<std::string, core::KnobPrior> priors;
    for (const auto& s : table.seeds())
        if (!s.space.empty())
            priors[s.source] = kb::skillPrior(skills, s.space);
    std::vector<uint64_t> seeds;
    for (int i = 0; i < o.seeds; ++i)
        seeds.push_back(static_cast<uint64_t>(1000 + i));
    kb::ReplayStudy st = kb::replayStudy(table, priors, seeds, o.budget);
    std::printf(
        "replay of session %lld (%s, %zu recorded evaluations, best %.2fx) with %zu skill(s), budget %d\n",
        static_cast<long long>(dump.session), dump.problem.c_str(), table.size(), table.bestSpeedup(),
        skills.size(), o.budget);
    std::printf("evaluations to within 5%% of the best, per search seed (%d = not reached):\n", o.budget + 1);
    std::printf("  seed     without  with\n");
    for (size_t i = 0; i < seeds.size(); ++i)
        std::printf(
            "  %-8llu %7d  %4d\n", static_cast<unsigned long long>(seeds[i]), st.without[i], st.with[i]);
    std::printf("median   without prior %.1f (reached %d/%zu)   with skill prior %.1f (reached %d/%zu)\n",
        st.medianWithout, st.reachedWithout, seeds.size(), st.medianWith, st.reachedWith, seeds.size());
    return 0;
}

/// `hone kb init`: the bundled corpus into the knowledge base (what the workbench offers a
/// fresh store); running it again adds only what changed.
int cmdInit(const KbOptions& o, const std::string& store)
{
    const std::filesystem::path dir = kb::bundledCorpusDir();
    if (dir.empty())
        throw CliError(ExitCode::Environment,
            "the bundled knowledge corpus (resources/knowledge) was not found; set HONE_RESOURCES to Hone's "
            "resources folder");
    std::vector<kb::SourceDocument> docs;
    try {
        docs = kb::readCorpus(dir);
    } catch (const kb::IngestError& e) {
        throw CliError(ExitCode::Input, e.what());
    }
    kb::KnowledgeBase base(kbPathOf(o, store));
    const auto results = base.addAll(docs);
    int counts[4] = { 0, 0, 0, 0 };
    for (const auto& r : results)
        ++counts[static_cast<int>(r.status)];
    std::printf("knowledge base %s: %d added, %d updated, %d unchanged, %d duplicates from %s (%d documents now)\n",
        base.path().string().c_str(), counts[0], counts[1], counts[2], counts[3], dir.string().c_str(),
        static_cast<int>(base.documents().size()));
    return 0;
}

/// What a command needs of the files: a reading command refuses a missing file rather than
/// leave an empty database at a mistyped path.
enum class Access {
    ReadsKb,           // search, list, show, rm, export
    MakesKb,           // add, import
    ReadsStoreMakesKb, // learn
    ReadsStoreAndKb,   // replay (the session from --from instead of the store when given)
};

void checkAccess(Access access, const KbOptions& o, const std::string& store, bool createFolders)
{
    const std::filesystem::path kbPath = kbPathOf(o, store);
    const std::string what = "knowledge base";
    switch (access) {
    case Access::ReadsKb:
        requireExistingStore(kbPath, what);
        break;
    case Access::MakesKb:
        prepareNewStore(kbPath, createFolders, what);
        break;
    case Access::ReadsStoreMakesKb:
        requireExistingStore(store);
        prepareNewStore(kbPath, createFolders, what);
        break;
    case Access::ReadsStoreAndKb:
        if (o.from.empty())
            requireExistingStore(store);
        requireExistingStore(kbPath, what);
        break;
    }
}

/// CLI11 runs these callbacks inside parse(): errors leave as CLI::RuntimeError with our exit
/// code (app/exit_code.h), after the message is printed in hone's own format.
std::function<void()> guarded(std::function<int(const KbOptions&, const std::string&)> fn,
    std::shared_ptr<KbOptions> o, const std::string& store, const bool& createFolders, Access access)
{
    const std::string* storePath = &store; // bound to --store, filled in by the time this runs
    const bool* create = &createFolders;   // bound to --create
    return [fn = std::move(fn), o, storePath, create, access] {
        int rc = 0;
        try {
            checkAccess(access, *o, *storePath, *create);
            rc = fn(*o, *storePath);
        } catch (const std::exception& e) {
            rc = reportError(e);
        }
        std::fflush(stdout);
        if (rc != 0)
            throw CLI::RuntimeError(rc);
    };
}

} // namespace

void addKbCommands(CLI::App& app, const std::string& storePath, const bool& createFolders)
{
    auto o = std::make_shared<KbOptions>();
    auto* kbApp = app.add_subcommand("kb", "curate the knowledge base: documents, retrieval, skills");
    kbApp->require_subcommand(1);
    kbApp->fallthrough();
    kbApp->add_option("--kb", o->kbPath, "knowledge base file (default: the store's file)")
        ->envname("HONE_KB");

    const char* categoryHelp = "correctness | guidance | hardware | skill";
    auto* add = kbApp->add_subcommand(
        "add", "add or update documents (.md, .txt, .html, .pdf, or folders of them)");
    add->add_option("files", o->files, "files or folders")->required();
    add->add_option("--category", o->category, categoryHelp);
    add->add_option("--platform", o->platform, "cuda | hip | cpu | any");
    add->add_option("--arch", o->arch, "arch tags, comma-separated (sm_90, gfx942, x86_64-avx2, ...)");
    add->add_option("--family", o->family, "op family tags, comma-separated (softmax, gemm, ...)");
    add->add_option("--source", o->source, "where the facts come from");
    add->add_option("--version", o->version, "version of the source");
    add->add_option("--title", o->title, "title (one file only)");
    add->add_option("--id", o->id, "document id (one file only; default: the file name)");
    add->callback(guarded(cmdAdd, o, storePath, createFolders, Access::MakesKb));

    auto* search = kbApp->add_subcommand("search", "retrieve chunks by words and/or runtime signals");
    search->add_option("query", o->query, "words (with signals: treated as hints)");
    search->add_option("-k,--top", o->k, "number of hits")->check(CLI::Range(1, 100));
    search->add_option("--family", o->family, "op family (softmax, gemm, ...)");
    search->add_option("--arch", o->arch, "target arch (sm_90, gfx942, x86_64-avx2, ...)");
    search->add_option("--platform", o->platform, "cuda | hip | cpu");
    search->add_option("--bound", o->bound, "diagnosis: memory | compute | latency | occupancy");
    search->add_option("--evidence", o->evidence, "diagnosis evidence text");
    search->add_option("--compile-error", o->compileError, "compiler output");
    search->add_option("--category", o->categories, categoryHelp + std::string(" (repeatable)"));
    search->add_flag("--json", o->json, "print hits as JSON");
    search->callback(guarded(cmdSearch, o, storePath, createFolders, Access::ReadsKb));

    auto* list = kbApp->add_subcommand("list", "list documents");
    list->add_flag("--all", o->all, "include retired versions");
    list->add_option("--category", o->categories, categoryHelp + std::string(" (repeatable)"));
    list->add_flag("--json", o->json, "print as JSON");
    list->callback(guarded(cmdList, o, storePath, createFolders, Access::ReadsKb));

    auto* show = kbApp->add_subcommand("show", "print a document's tags, chunks and hit statistics");
    show->add_option("document", o->uid, "document id, or #N for a stored version")->required();
    show->add_flag("--history", o->history, "list every version");
    show->callback(guarded(cmdShow, o, storePath, createFolders, Access::ReadsKb));

    auto* rm = kbApp->add_subcommand("rm", "retire documents (their history and hits are kept)");
    rm->add_option("documents", o->uids, "document ids")->required();
    rm->callback(guarded(cmdRemove, o, storePath, createFolders, Access::ReadsKb));

    auto* exp = kbApp->add_subcommand("export", "write the live documents to a bundle (JSON)");
    exp->add_option("file", o->file, "bundle file")->required();
    exp->callback(guarded(cmdExport, o, storePath, createFolders, Access::ReadsKb));

    auto* imp = kbApp->add_subcommand("import", "add a bundle's documents (all or nothing)");
    imp->add_option("file", o->file, "bundle file")->required();
    imp->callback(guarded(cmdImport, o, storePath, createFolders, Access::MakesKb));

    auto* init = kbApp->add_subcommand("init", "import the bundled corpus (resources/knowledge) into the base");
    init->callback(guarded(cmdInit, o, storePath, createFolders, Access::MakesKb));

    auto* learn = kbApp->add_subcommand("learn", "distil a skill from a session that beat its baseline");
    learn->add_option("session", o->session, "session id")->required();
    learn->add_option("--arch", o->arch, "arch of the session (default: from its device)");
    learn->add_option("--min-gain", o->minGain, "speedup over the baseline a skill needs")
        ->check(CLI::Range(1.0, 1e6));
    learn->callback(guarded(cmdLearn, o, storePath, createFolders, Access::ReadsStoreMakesKb));

    auto* replay = kbApp->add_subcommand(
        "replay", "re-run a recorded session's knob search offline, with and without the skill prior");
    replay->add_option("session", o->session, "session id in the store");
    replay->add_option("--from", o->from, "a saved session dump instead of the store");
    replay->add_option("--save", o->save, "write the session dump (JSON) to this file");
    replay->add_option("--arch", o->arch, "arch of the session (default: from its device)");
    replay->add_option("--seeds", o->seeds, "search seeds to compare")->check(CLI::Range(1, 10000));
    replay->add_option("--budget", o->budget, "evaluations per replayed search")
        ->check(CLI::Range(2, 100000));
    replay->callback(guarded(cmdReplay, o, storePath, createFolders, Access::ReadsStoreAndKb));
}

} // namespace hone::app
