// Skills: distilled from a session that beat its baseline, written back into the knowledge
// base, and turned into knob priors for the next session on the same family and arch.

#include "knowledge/skills.h"

#include "core/problem_spec.h"
#include "core/eval_result.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "knowledge/sqlite_db.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

namespace hone::knowledge {
namespace {

nlohmann::json knobsJson(const core::KnobValues& k)
{
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : k)
        j[name] = value;
    return j;
}

core::KnobValues knobsFrom(const nlohmann::json& j)
{
    core::KnobValues k;
    if (!j.is_object())
        return k;
    for (auto it = j.begin(); it != j.end(); ++it)
        k[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    return k;
}

std::string fmt(const char* f, double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string localCpuFlags()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("flags", 0) == 0)
            return line;
    return {};
}

} // namespace

const SessionDump::Source* SessionDump::source(const std::string& name) const
{
    for (const auto& s : sources)
        if (s.name == name)
            return &s;
    return nullptr;
}

const SessionDump::Evaluation* SessionDump::evaluation(int64_t n) const
{
    for (const auto& e : evaluations)
        if (e.node == n)
            return &e;
    return nullptr;
}

const SessionDump::Node* SessionDump::node(int64_t id) const
{
    for (const auto& n : nodes)
        if (n.id == id)
            return &n;
    return nullptr;
}

nlohmann::json SessionDump::toJson() const
{
    nlohmann::json j = { { "format", "hone-session-dump" }, { "version", 1 }, { "session", session },
        { "problem", problem }, { "family", family }, { "target", target }, { "device", device },
        { "cpu_flags", cpuFlags } };
    j["sources"] = nlohmann::json::array();
    for (const auto& s : sources)
        j["sources"].push_back({ { "name", s.name }, { "hash", s.hash }, { "text", s.text } });
    j["nodes"] = nlohmann::json::array();
    for (const auto& n : nodes)
        j["nodes"].push_back({ { "id", n.id }, { "parent", n.parent }, { "seq", n.seq },
            { "source", n.source }, { "knobs", knobsJson(n.knobs) }, { "origin", n.origin } });
    j["evaluations"] = nlohmann::json::array();
    for (const auto& e : evaluations)
        j["evaluations"].push_back(
            { { "node", e.node }, { "ok", e.ok }, { "speedup", e.speedup }, { "median_ns", e.medianNs },
                { "bound", e.bound }, { "evidence", e.evidence }, { "failure_kind", e.failureKind } });
    return j;
}

SessionDump SessionDump::fromJson(const nlohmann::json& j, const std::string& name)
{
    if (!j.is_object() || j.value("format", std::string()) != "hone-session-dump")
        throw std::runtime_error(name
            + ": not a session dump (\"format\": \"hone-session-dump\" missing); write one "
              "with 'hone kb replay SESSION --save FILE'");
    try {
        SessionDump d;
        d.session = j.at("session").get<int64_t>();
        d.problem = j.at("problem").get<std::string>();
        d.family = j.value("family", d.problem);
        d.target = j.value("target", std::string("cpu"));
        d.device = j.value("device", std::string());
        d.cpuFlags = j.value("cpu_flags", std::string());
        for (const auto& s : j.at("sources"))
            d.sources.push_back({ s.at("name").get<std::string>(), s.value("hash", std::string()),
                s.at("text").get<std::string>() });
        for (const auto& n : j.at("nodes"))
            d.nodes.push_back({ n.at("id").get<int64_t>(), n.at("parent").get<int64_t>(),
                n.value("seq", int64_t(0)), n.value("source", std::string()),
                knobsFrom(n.value("knobs", nlohmann::json::object())), n.value("origin", std::string()) });
        for (const auto& e : j.at("evaluations"))
            d.evaluations.push_back({ e.at("node").get<int64_t>(), e.at("ok").get<bool>(),
                e.value("speedup", 0.0), e.value("median_ns", 0.0), e.value("bound", std::string()),
                e.value("evidence", std::string()), e.value("failure_kind", std::string()) });
        return d;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(name + ": malformed session dump (" + e.what()
            + "); re-create it with 'hone kb "
              "replay SESSION --save FILE'");
    }
}

SessionDump loadSession(const core::Store& store, int64_t session)
{
    auto rec = store.session(session);
    if (!rec)
        throw std::runtime_error("no session " + std::to_string(session) + " in store "
            + store.path().string() + "; list sessions with 'hone show'");
    SessionDump d;
    d.session = session;
    d.problem = rec->problemName;
    d.family = rec->problemName;
    try {
        d.family = core::loadProblem(rec->problemDir).family;
    } catch (const std::exception&) {
        // The problem folder moved: its name stands in for the family.
    }
    d.target = rec->target;
    std::set<std::string> seen;
    for (const auto& n : store.nodes(session)) {
        SessionDump::Node node;
        node.id = n.id;
        node.parent = n.parentId;
        node.seq = n.seq;
        node.origin = n.origin;
        node.knobs = knobsFrom(n.knobs);
        if (!n.sourceHash.empty()) {
            auto src = store.source(n.sourceHash);
            node.source = src ? src->name : n.sourceHash.substr(0, 12);
            if (src && seen.insert(n.sourceHash).second)
                d.sources.push_back({ src->name, src->hash, src->text });
        }
        d.nodes.push_back(std::move(node));
    }
    std::sort(d.nodes.begin(), d.nodes.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
    for (const auto& e : store.evaluations(session)) {
        SessionDump::Evaluation ev;
        ev.node = e.nodeId;
        ev.ok = e.status == "ok";
        ev.speedup = e.speedup;
        ev.medianNs = e.medianNs;
        ev.bound = e.bound;
        ev.failureKind = e.failureKind;
        const auto result = e.evalResult();
        ev.evidence = result.evidence();
        if (d.device.empty())
            d.device = e.device;
        // The worker's CPU features, not this host's: a remote worker's arch names its skill.
        if (d.cpuFlags.empty() && result.environment && result.environment->cpuFlags)
            d.cpuFlags = *result.environment->cpuFlags;
        d.evaluations.push_back(std::move(ev));
    }
    return d;
}

std::string sessionArch(const SessionDump& s)
{
    std::string device = s.device;
    std::transform(
        device.begin(), device.end(), device.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* gpu : { "h100", "h200", "mi300", "a100", "l40s", "b200" })
        if (device.find(gpu) != std::string::npos)
            return canonicalArch(gpu);
    if (s.target == "cpu" || device.rfind("cpu", 0) == 0) {
        // The worker does not report its flags yet; the local CPU stands in (same host).
        std::string flags = " " + (s.cpuFlags.empty() ? localCpuFlags() : s.cpuFlags) + " ";
        if (flags.find(" avx512f ") != std::string::npos)
            return "x86_64-avx512";
        if (flags.find(" avx2 ") != std::string::npos)
            return "x86_64-avx2";
        return "x86_64";
    }
    return canonicalArch(s.target);
}

RetrievalSignals retrievalSignals(const core::KnowledgeQuery& q)
{
    RetrievalSignals s;
    s.family = q.family;
    SessionDump where;
    where.device = q.device;
    where.target = q.target;
    s.arch = sessionArch(where);
    s.platform = q.target;
    s.bound = q.bound;
    if (q.failureKind == "compile_error")
        s.compileError = q.failureMessage;
    else if (!q.failureMessage.empty())
        s.evidence = q.failureKind + ": " + q.failureMessage;
    return s;
}

std::optional<Skill> distillSkill(const SessionDump& s, const DistillOptions& o, std::string* why)
{
    auto fail = [&](const std::string& w) -> std::optional<Skill> {
        if (why)
            *why = w;
        return std::nullopt;
    };
    const SessionDump::Node* baseline = nullptr;
    for (const auto& n : s.nodes)
        if (n.origin == "seed" && (!baseline || n.seq < baseline->seq))
            baseline = &n; // the engine evaluates the baseline seed first
    if (!baseline)
        return fail("session " + std::to_string(s.session) + " has no seed nodes");
    const SessionDump::Evaluation* baseEval = s.evaluation(baseline->id);
    if (!baseEval || !baseEval->ok)
        return fail(
            "the baseline of session " + std::to_string(s.session) + " was not evaluated successfully");
    std::vector<const SessionDump::Evaluation*> ok;
    for (const auto& e : s.evaluations)
        if (e.ok)
            ok.push_back(&e);
    std::stable_sort(
        ok.begin(), ok.end(), [](const auto* a, const auto* b) { return a->speedup > b->speedup; });
    const SessionDump::Evaluation* best = ok.front();
    double gain = baseEval->speedup > 0 ? best->speedup / baseEval->speedup : best->speedup;
    if (gain < o.minGain)
        return fail("session " + std::to_string(s.session) + " reached " + fmt("%.2f", gain)
            + "x over its baseline; a " + "skill needs " + fmt("%.2f", o.minGain) + "x");

    Skill k;
    k.problem = s.problem;
    k.family = s.family;
    k.arch = o.arch.empty() ? sessionArch(s) : canonicalArch(o.arch);
    k.platform = platformOfArch(k.arch).empty() ? s.target : platformOfArch(k.arch);
    k.session = s.session;
    k.device = s.device;
    k.baselineSource = baseline->source;
    k.boundBefore = baseEval->bound;
    k.evidenceBefore = baseEval->evidence;
    k.boundAfter = best->bound;
    k.evidenceAfter = best->evidence;
    k.gain = gain;
    k.evaluations = static_cast<int>(s.evaluations.size());
    const SessionDump::Node* bestNode = s.node(best->node);
    k.bestSource = bestNode ? bestNode->source : std::string();
    k.bestKnobs = bestNode ? bestNode->knobs : core::KnobValues {};
    for (const auto& n : s.nodes)
        if (n.origin == "seed" && bestNode && n.source == bestNode->source)
            k.seedKnobs = n.knobs;
    std::set<std::pair<std::string, core::KnobValues>> distinct;
    for (const auto* e : ok) {
        if (static_cast<int>(k.winners.size()) >= o.winners)
            break;
        const SessionDump::Node* n = s.node(e->node);
        if (!n || !distinct.insert({ n->source, n->knobs }).second)
            continue;
        double g = baseEval->speedup > 0 ? e->speedup / baseEval->speedup : e->speedup;
        k.winners.push_back({ n->source, n->knobs, g });
    }
    return k;
}

nlohmann::json Skill::toJson() const
{
    nlohmann::json w = nlohmann::json::array();
    for (const auto& c : winners)
        w.push_back({ { "source", c.source }, { "knobs", knobsJson(c.knobs) }, { "speedup", c.speedup } });
    return { { "problem", problem }, { "family", family }, { "arch", arch }, { "platform", platform },
        { "session", session }, { "device", device }, { "baseline_source", baselineSource },
        { "bound_before", boundBefore }, { "evidence_before", evidenceBefore }, { "bound_after", boundAfter },
        { "evidence_after", evidenceAfter }, { "best_source", bestSource },
        { "seed_knobs", knobsJson(seedKnobs) }, { "best_knobs", knobsJson(bestKnobs) }, { "gain", gain },
        { "evaluations", evaluations }, { "winners", w } };
}

Skill Skill::fromJson(const nlohmann::json& j)
{
    Skill k;
    k.problem = j.value("problem", std::string());
    k.family = j.value("family", std::string());
    k.arch = j.value("arch", std::string());
    k.platform = j.value("platform", std::string());
    k.session = j.value("session", int64_t(0));
    k.device = j.value("device", std::string());
    k.baselineSource = j.value("baseline_source", std::string());
    k.boundBefore = j.value("bound_before", std::string());
    k.evidenceBefore = j.value("evidence_before", std::string());
    k.boundAfter = j.value("bound_after", std::string());
    k.evidenceAfter = j.value("evidence_after", std::string());
    k.bestSource = j.value("best_source", std::string());
    k.seedKnobs = knobsFrom(j.value("seed_knobs", nlohmann::json::object()));
    k.bestKnobs = knobsFrom(j.value("best_knobs", nlohmann::json::object()));
    k.gain = j.value("gain", 1.0);
    k.evaluations = j.value("evaluations", 0);
    for (const auto& w : j.value("winners", nlohmann::json::array()))
        k.winners.push_back({ w.value("source", std::string()),
            knobsFrom(w.value("knobs", nlohmann::json::object())), w.value("speedup", 0.0) });
    return k;
}

SourceDocument Skill::toDocument() const
{
    SourceDocument d;
    d.format = "skill";
    d.category = Category::Skill;
    d.categorySet = true;
    d.uid = "skill-" + problem + "-" + arch + "-s" + std::to_string(session);
    d.origin = "session " + std::to_string(session);
    d.title = "Skill: " + family + " on " + arch + ", " + fmt("%.2f", gain) + "x over " + baselineSource;
    d.tags.platform = platform;
    d.tags.arch = { arch };
    d.tags.family = { family };
    d.tags.source = "hone session " + std::to_string(session) + (device.empty() ? "" : " on " + device);
    d.tags.version = std::to_string(session);

    std::string outcome = "Problem " + problem + " (family " + family + ") on "
        + (device.empty() ? arch : device) + ": the best candidate, " + bestSource + " ["
        + core::knobsToString(bestKnobs) + "], ran " + fmt("%.2f", gain) + "x faster than the baseline "
        + baselineSource + " after " + std::to_string(evaluations) + " evaluations in session "
        + std::to_string(session) + ".";
    std::string bottleneck
        = "Before: " + (boundBefore.empty() ? std::string("unclassified") : boundBefore + "-bound")
        + (evidenceBefore.empty() ? "" : " (" + evidenceBefore + ")")
        + ".\nAfter: " + (boundAfter.empty() ? std::string("unclassified") : boundAfter + "-bound")
        + (evidenceAfter.empty() ? "" : " (" + evidenceAfter + ")") + ".";
    std::string changes;
    if (bestSource != baselineSource)
        changes += "- source: " + baselineSource + " -> " + bestSource + "\n";
    for (const auto& [name, value] : bestKnobs) {
        auto from = seedKnobs.find(name);
        if (from == seedKnobs.end())
            changes += "- knob " + name + " = " + value + "\n";
        else if (from->second != value)
            changes += "- knob " + name + ": " + from->second + " -> " + value + "\n";
    }
    if (changes.empty())
        changes = "- none beyond the seed's own assignment\n";
    std::string won;
    for (const auto& w : winners)
        won += "- " + w.source + " [" + core::knobsToString(w.knobs) + "]: " + fmt("%.2f", w.speedup) + "x\n";
    d.sections = { { "Outcome", outcome, 0 }, { "Bottleneck before and after", bottleneck, 0 },
        { "Changes that won", changes, 0 }, { "Best configurations (knob tuning prior)", won, 0 } };
    return d;
}

core::KnobPrior skillPrior(const std::vector<Skill>& skills, const core::KnobSpace& space)
{
    core::KnobPrior prior;
    for (const auto& s : skills) {
        for (size_t rank = 0; rank < s.winners.size(); ++rank) {
            const auto& w = s.winners[rank];
            double weight = std::max(0.05, std::log2(std::max(1.0, w.speedup))) / double(rank + 1);
            for (const auto& [name, value] : w.knobs) {
                const core::KnobDecl* decl = space.find(name);
                if (!decl || std::find(decl->values.begin(), decl->values.end(), value) == decl->values.end())
                    continue;
                prior[name][value] += weight;
            }
        }
    }
    return prior;
}

std::optional<AddResult> writeBackSkill(KnowledgeBase& kb, const core::Store& store, int64_t session,
    const DistillOptions& options, std::string* why)
{
    auto skill = distillSkill(loadSession(store, session), options, why);
    if (!skill)
        return std::nullopt;
    return kb.addSkill(*skill);
}

core::KnobPrior priorFor(
    const KnowledgeBase& kb, const std::string& family, const std::string& arch, const core::KnobSpace& space)
{
    return skillPrior(kb.skills(family, arch), space);
}

AddResult KnowledgeBase::addSkill(const Skill& skill)
{
    db::Transaction tx(m_db);
    AddResult r = addLocked(skill.toDocument(), skill.toJson().dump());
    tx.commit();
    return r;
}

std::vector<Skill> KnowledgeBase::skills(const std::string& family, const std::string& arch) const
{
    std::string sql = "SELECT s.data, s.arch FROM kb_skills s JOIN kb_documents d ON d.id = s.doc_id "
                      "WHERE d.removed_at IS NULL";
    if (!family.empty())
        sql += " AND s.family = ?1";
    sql += " ORDER BY s.gain DESC, s.id";
    db::Stmt st(m_db, sql);
    if (!family.empty())
        st.bind(1, family);
    std::vector<std::string> archs = arch.empty() ? std::vector<std::string>() : compatibleArchs(arch);
    std::vector<Skill> out;
    while (st.step()) {
        if (!archs.empty() && std::find(archs.begin(), archs.end(), st.text(1)) == archs.end())
            continue;
        out.push_back(Skill::fromJson(nlohmann::json::parse(st.text(0))));
    }
    return out;
}

} // namespace hone::knowledge
