// `hone show` and `hone export`: read what a search stored.

#include "app/show_cli.h"

#include "app/cli_common.h"
#include "app/exit_code.h"
#include "core/export_bundle.h"
#include "core/export_portfolio.h"
#include "core/export_torch.h"
#include "core/problem_spec.h"
#include "core/knobs.h"
#include "core/engine.h"
#include "core/objective.h"
#include "core/store.h"
#include "knowledge/move_history.h"

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hone::app {

namespace {

/// Each node's last re-verification.
std::map<int64_t, core::ReverificationRecord> lastReverifications(const core::Store& store, int64_t sessionId)
{
    std::map<int64_t, core::ReverificationRecord> out;
    for (auto& r : store.reverifications(sessionId))
        out[r.nodeId] = std::move(r);
    return out;
}

bool failedReverification(const std::map<int64_t, core::ReverificationRecord>& last, int64_t node)
{
    auto it = last.find(node);
    return it != last.end() && it->second.status == "failed";
}

std::string formatSpeedup(double x)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fx", x);
    return buf;
}

void printTree(const core::Store& store, int64_t sessionId)
{
    auto rec = store.session(sessionId);
    if (!rec)
        throw CliError(ExitCode::Input, "no session " + std::to_string(sessionId) + " in store "
            + store.path().string() + "; list sessions with 'hone show'");
    auto nodes = store.nodes(sessionId);
    std::map<int64_t, core::EvaluationRecord> evals;
    for (auto& e : store.evaluations(sessionId))
        evals.emplace(e.nodeId, std::move(e));
    std::map<int64_t, std::vector<int64_t>> children;
    std::map<int64_t, const core::NodeRecord*> byId;
    const std::map<int64_t, core::ReverificationRecord> reverified = lastReverifications(store, sessionId);
    int64_t best = -1;
    double bestSpeedup = 0;
    for (const auto& n : nodes) {
        byId[n.id] = &n;
        if (n.parentId >= 0)
            children[n.parentId].push_back(n.id);
        auto e = evals.find(n.id);
        if (failedReverification(reverified, n.id))
            continue; // never the best: a fresh worker with new seeds disagreed
        if (e != evals.end() && e->second.status == "ok" && e->second.speedup > bestSpeedup) {
            bestSpeedup = e->second.speedup;
            best = n.id;
        }
    }
    std::printf("session %lld  %s  target %s  policy %s  seed %llu  %s%s%s\n", static_cast<long long>(rec->id),
        rec->problemName.c_str(), rec->target.c_str(), rec->policy.c_str(),
        static_cast<unsigned long long>(rec->seed), rec->status.c_str(), rec->stopReason.empty() ? "" : ": ",
        rec->stopReason.c_str());
    try { // the hybrid policy's move skill (docs/SEARCH.md, "Live move skills"), where it had one
        if (const auto o = core::RunOptions::fromJson(rec->config); o.moveSkill)
            std::printf("move skill %s\n", knowledge::describeMoveSkill(*o.moveSkill, o.moveSkillFrom).c_str());
    } catch (const std::exception& e) {
        std::printf("move skill unreadable: %s\n", e.what());
    }
    const auto bestCheck = reverified.find(best);
    std::printf("%zu nodes, %zu evaluated, best node %lld at %.2fx (%s)\n", nodes.size() - (nodes.empty() ? 0 : 1),
        evals.size(), static_cast<long long>(best), bestSpeedup,
        bestCheck == reverified.end() ? "not re-verified"
                                      : ("re-verified at " + formatSpeedup(bestCheck->second.speedup)).c_str());
    if (auto b = evals.find(best); b != evals.end() && !b->second.shapes.empty()) {
        // The best per shape: the objective is their weighted geometric mean.
        for (const auto& sh : b->second.shapes)
            std::printf("  %-10s weight %-8g %s  %s vs %s baseline%s\n", sh.label.c_str(), sh.weight,
                formatSpeedup(sh.speedup).c_str(), formatNs(sh.medianNs).c_str(),
                formatNs(sh.baselineMedianNs).c_str(), sh.speedup > 0 && sh.speedup < core::kSlowerThanBaseline
                    ? "  SLOWER THAN BASELINE" : "");
    }
    std::map<std::string, std::string> names;
    std::function<void(int64_t, const std::string&, bool)> walk = [&](int64_t id, const std::string& prefix, bool last) {
        const core::NodeRecord& n = *byId[id];
        std::string label;
        if (id == 0) {
            label = "root: " + rec->problemName;
        } else {
            if (!names.count(n.sourceHash)) {
                auto src = store.source(n.sourceHash);
                names[n.sourceHash] = src ? src->name : n.sourceHash.substr(0, 8);
            }
            core::KnobValues kv;
            for (auto it = n.knobs.begin(); it != n.knobs.end(); ++it)
                kv[it.key()] = it->get<std::string>();
            label = "#" + std::to_string(id) + " " + names[n.sourceHash] + " " + n.origin;
            if (!kv.empty())
                label += " [" + core::knobsToString(kv) + "]";
            auto e = evals.find(id);
            char buf[256];
            if (e == evals.end())
                label += "  (not evaluated)";
            else if (e->second.status == "ok") {
                std::snprintf(buf, sizeof buf, "  %.2fx %s %s%s", e->second.speedup,
                    formatNs(e->second.medianNs).c_str(), e->second.bound.c_str(),
                    e->second.fromCache ? " (cached)" : "");
                label += buf;
                // Shape sets: the speedup is the weighted geometric mean; say where it loses.
                if (e->second.screened)
                    label += " (screened on " + (e->second.shapes.empty() ? std::string("?") : e->second.shapes[0].label)
                        + ": estimate)";
                if (!e->second.slowerShapes.empty()) {
                    std::string on;
                    for (const auto& sh : e->second.shapes)
                        if (std::find(e->second.slowerShapes.begin(), e->second.slowerShapes.end(), sh.label)
                            != e->second.slowerShapes.end())
                            on += (on.empty() ? "" : ", ") + sh.label + " " + formatSpeedup(sh.speedup);
                    label += "  SLOWER THAN BASELINE on " + on;
                }
            } else {
                label += "  FAILED " + e->second.failureKind;
            }
            if (auto r = reverified.find(id); r != reverified.end())
                label += r->second.status == "verified"
                    ? "  re-verified " + formatSpeedup(r->second.speedup)
                    : "  FAILED RE-VERIFICATION " + r->second.failureKind;
            if (id == best)
                label += "  <- best";
        }
        std::printf("%s%s%s\n", prefix.c_str(), id == 0 ? "" : (last ? "`-- " : "|-- "), label.c_str());
        const auto& ch = children[id];
        for (size_t i = 0; i < ch.size(); ++i)
            walk(ch[i], id == 0 ? prefix : prefix + (last ? "    " : "|   "), i + 1 == ch.size());
    };
    if (byId.count(0))
        walk(0, "", true);
}

} // namespace

int cmdShow(const std::string& storePath, std::optional<int64_t> session)
{
    requireExistingStore(storePath);
    core::Store store(storePath);
    if (!session) {
        auto all = store.sessions();
        if (all.empty())
            std::printf("no sessions in %s\n", storePath.c_str());
        for (const auto& s : all) {
            auto evals = store.evaluations(s.id);
            const auto reverified = lastReverifications(store, s.id);
            double best = 0;
            for (const auto& e : evals)
                if (e.status == "ok" && !failedReverification(reverified, e.nodeId))
                    best = std::max(best, e.speedup);
            std::printf("%4lld  %-20s %-6s %-9s %3zu evaluations  best %.2fx  %s\n", static_cast<long long>(s.id),
                s.problemName.c_str(), s.target.c_str(), s.status.c_str(), evals.size(), best, s.createdAt.c_str());
        }
        return 0;
    }
    printTree(store, *session);
    return 0;
}

int cmdExport(const std::string& storePath, const std::string& nodeSpec, const std::string& outDir,
    bool allowFailedReverify, bool torch, bool portfolio)
{
    if (portfolio) {
        int64_t sessionId = 0;
        try {
            size_t used = 0;
            sessionId = std::stoll(nodeSpec, &used);
            if (used != nodeSpec.size())
                throw std::invalid_argument(nodeSpec);
        } catch (const std::exception&) {
            throw CliError(ExitCode::Usage, "--portfolio exports a session: expected SESSION, e.g. 3, got '" + nodeSpec + "'");
        }
        requireExistingStore(storePath);
        core::Store store(storePath);
        core::ExportOptions options;
        options.torch = torch;
        const core::ExportResult r = core::exportPortfolio(store, sessionId, outDir, options);
        std::printf("exported the portfolio of session %lld to %s: %zu configuration(s) for %zu shape(s); %s\n",
            static_cast<long long>(sessionId), r.dir.string().c_str(), r.evidence["configurations"].size(),
            r.evidence["shapes"].size(), "portfolio.json holds the table");
        std::printf("check it through Hone's harness: hone eval PROBLEM %s/portfolio.%s\n", r.dir.string().c_str(),
            r.lang == "cuda" ? "cu" : "cpp");
        if (!r.torchSchema.empty())
            std::printf("PyTorch op %s in %s/torch\n", r.torchSchema.c_str(), r.dir.string().c_str());
        for (const auto& w : r.warnings)
            std::fprintf(stderr, "hone: warning: %s\n", w.c_str());
        return 0;
    }
    auto slash = nodeSpec.find('/');
    if (slash == std::string::npos)
        throw CliError(ExitCode::Usage, "node '" + nodeSpec + "': expected SESSION/NODE, e.g. 3/17");
    int64_t sessionId = 0, nodeId = 0;
    try {
        sessionId = std::stoll(nodeSpec.substr(0, slash));
        nodeId = std::stoll(nodeSpec.substr(slash + 1));
    } catch (const std::exception&) {
        throw CliError(ExitCode::Usage, "node '" + nodeSpec + "': expected SESSION/NODE with two numbers, e.g. 3/17");
    }
    requireExistingStore(storePath);
    core::Store store(storePath);
    core::ExportOptions options;
    options.allowFailedReverification = allowFailedReverify;
    options.torch = torch;
    const core::ExportResult r = core::exportBundle(store, sessionId, nodeId, outDir, options);
    std::string files;
    for (const auto& f : r.files)
        files += (files.empty() ? "" : ", ") + f;
    std::printf("exported node %s to %s: %s\n", nodeSpec.c_str(), r.dir.string().c_str(), files.c_str());
    if (r.hasTest)
        std::printf("check it without Hone: %s/run_test.sh\n", r.dir.string().c_str());
    if (!r.torchSchema.empty())
        std::printf("PyTorch op %s: build with python3 %s/torch/hone_*.py, test with python3 -m pytest %s/torch\n",
            r.torchSchema.c_str(), r.dir.string().c_str(), r.dir.string().c_str());
    for (const auto& w : r.warnings)
        std::fprintf(stderr, "hone: warning: %s\n", w.c_str());
    return 0;
}

int cmdExportTorch(const std::string& problemDir, const std::string& sourcePath, const std::string& outDir,
    const std::vector<std::string>& knobArgs)
{
    const core::ProblemSpec spec = core::loadProblem(problemDir);
    std::ifstream in(sourcePath, std::ios::binary);
    if (!in)
        throw CliError(ExitCode::Input, "cannot read the kernel " + sourcePath + "; check the path");
    std::ostringstream text;
    text << in.rdbuf();
    core::TorchKernel kernel;
    kernel.sourceName = std::filesystem::path(sourcePath).filename().string();
    kernel.sourceText = text.str();
    const core::KnobSpace space = core::parseKnobSpace(kernel.sourceText, sourcePath);
    core::KnobValues knobs = space.initial().value_or(core::KnobValues {});
    for (const auto& kv : knobArgs) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos)
            throw CliError(ExitCode::Usage, "--knob '" + kv + "': expected NAME=VALUE");
        knobs[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    std::string why;
    if (!space.empty() && !space.admits(knobs, &why))
        throw CliError(ExitCode::Usage, sourcePath + ": " + why);
    for (const auto& [k, v] : knobs)
        kernel.knobs[k] = v;
    kernel.flags = space.flags;
    kernel.label = kernel.sourceName + (knobs.empty() ? std::string() : " [" + core::knobsToString(knobs) + "]");
    const std::string lang = core::langOfFile(kernel.sourceName);
    const core::TorchPackage p = core::writeTorchPackage(spec, {kernel}, lang, core::kernelHeaderText(), outDir);
    std::printf("PyTorch op hone::%s in %s (%zu files): build with python3 %s/hone_%s.py, test with python3 -m pytest "
                "%s\n",
        p.signature.schema.c_str(), outDir.c_str(), p.files.size(), outDir.c_str(), p.signature.opName.c_str(),
        outDir.c_str());
    for (const auto& w : p.warnings)
        std::fprintf(stderr, "hone: warning: %s\n", w.c_str());
    return 0;
}

} // namespace hone::app
