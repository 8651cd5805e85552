#include "app/llm_cli.h"

#include "app/cli_common.h"
#include "app/exit_code.h"
#include "backends/llm/chat_client.h"
#include "core/llm_synth.h"
#include "core/prompt_builder.h"
#include "core/store.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace hone::app {
namespace {

std::string defaultKeyEnv(const std::string& provider)
{
    return provider == "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
}

std::filesystem::path configPath(const std::string& explicitPath)
{
    if (!explicitPath.empty())
        return explicitPath;
    if (const char* p = std::getenv("HONE_LLM_CONFIG"); p && *p)
        return p;
    std::filesystem::path dir;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
        dir = x;
    else if (const char* h = std::getenv("HOME"); h && *h)
        dir = std::filesystem::path(h) / ".config";
    else
        return {};
    std::error_code ec;
    auto p = dir / "hone" / "llm.json";
    return std::filesystem::exists(p, ec) ? p : std::filesystem::path();
}

nlohmann::json readConfig(const std::filesystem::path& path)
{
    if (path.empty())
        return nlohmann::json::object();
    std::ifstream f(path);
    if (!f)
        throw CliError(ExitCode::Input, "cannot read the LLM configuration " + path.string()
            + "; check the path given to --llm-config or $HONE_LLM_CONFIG");
    std::stringstream ss;
    ss << f.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(ss.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw CliError(ExitCode::Input, "the LLM configuration " + path.string() + " is not valid JSON (byte "
            + std::to_string(e.byte) + "); see docs/LLM.md for its format");
    }
    if (!j.is_object())
        throw CliError(ExitCode::Input,
            "the LLM configuration " + path.string() + " must be a JSON object; see docs/LLM.md");
    for (auto it = j.begin(); it != j.end(); ++it) {
        static const char* const known[]
            = { "provider", "url", "model", "key_env", "prices", "max_concurrency" };
        if (std::find(std::begin(known), std::end(known), it.key()) == std::end(known))
            throw CliError(ExitCode::Input, "the LLM configuration " + path.string() + " has an unknown key '"
                + it.key() + "'; known are provider, url, model, key_env, prices, max_concurrency");
    }
    return j;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& fallback = {})
{
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string kb(size_t chars)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f kB", static_cast<double>(chars) / 1000.0);
    return buf;
}

std::string money(double usd)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "$%.4f", usd);
    return buf;
}

std::string firstLine(const std::string& s, size_t max = 160)
{
    std::string l = s.substr(0, s.find('\n'));
    return l.size() > max ? l.substr(0, max) + "..." : l;
}

/// Prints the model calls and the evaluation of what they produced, on stderr.
class LlmLog final : public core::ForwardingObserver, public core::LlmSynthObserver {
public:
    LlmLog(bool logPrompts, bool logStream)
        : m_logPrompts(logPrompts)
        , m_logStream(logStream)
        , m_tty(isatty(2) != 0)
    {
    }
    void nodeEvaluated(const core::Node& n, const core::protocol::EvalResult& s) override
    {
        ForwardingObserver::nodeEvaluated(n, s);
        if (n.origin != "llm" && n.origin != "repair")
            return;
        char buf[160];
        const std::string bound = s.bound();
        if (s.ok())
            std::snprintf(buf, sizeof buf, "correct, %.2fx over the baseline (%s)%s%s", s.speedup(),
                formatNs(s.medianNs()).c_str(), bound.empty() ? "" : ", ", bound.empty() ? "" : (bound + "-bound").c_str());
        line("eval #" + std::to_string(n.id) + " " + (n.sourceName.empty() ? "(no code)" : n.sourceName) + ": "
            + (s.ok() ? std::string(buf)
                      : "FAILED " + std::string(core::protocol::failureKindName(s.failureKind())) + ": "
                          + firstLine(s.failure->message)));
    }
    void llmCallRecorded(const core::Node& n, const core::LlmCallRecord& c) override
    {
        ForwardingObserver::llmCallRecorded(n, c);
        char buf[200];
        std::snprintf(buf, sizeof buf, "%lld tokens in, %lld out%s, %s%s, %s (first token %s), %d attempt%s",
            static_cast<long long>(c.tokensIn), static_cast<long long>(c.tokensOut),
            c.usageReported ? "" : " (estimated)", money(c.costUsd).c_str(),
            c.costUsd == 0 && c.status != "error" ? " (no price for this model)" : "",
            formatNs(c.latencyMs * 1e6).c_str(), formatNs(c.firstTokenMs * 1e6).c_str(), c.attempts,
            c.attempts == 1 ? "" : "s");
        std::string what;
        if (c.status == "ok")
            what = "#" + std::to_string(n.id) + " " + n.sourceName
                + (n.knobs.empty() ? "" : " [" + core::knobsToString(n.knobs) + "]");
        else if (c.status == "rejected")
            what = "#" + std::to_string(n.id) + " REJECTED: " + c.error;
        else
            what = "#" + std::to_string(n.id) + " CALL FAILED: " + c.error;
        line("<- " + what + "; " + buf + (c.finishReason.empty() ? "" : ", finish " + c.finishReason));
    }

    void callStarted(const std::string& purpose, core::NodeId from, const core::Prompt& prompt) override
    {
        std::string head = purpose == "repair" ? "-> repair of #" + std::to_string(from)
                                               : "-> propose from #" + std::to_string(from);
        line(head + ", prompt " + kb(prompt.system.size()) + " system + " + kb(prompt.user.size()) + " user");
        if (m_logPrompts) {
            std::fprintf(stderr, "---- system ----\n%s\n---- user ----\n%s\n---- end of prompt ----\n",
                prompt.system.c_str(), prompt.user.c_str());
        }
        m_streaming = false;
    }
    void callFinished(const core::LlmCallRecord&, core::NodeId) override
    {
        if (m_streaming)
            std::fprintf(stderr, "\n");
        m_streaming = false;
    }
    void delta(std::string_view d) override
    {
        if (!m_logStream)
            return;
        m_streaming = true;
        std::fwrite(d.data(), 1, d.size(), stderr);
        std::fflush(stderr);
    }
    void retrying(int next, int max, double delayS, const std::string& why) override
    {
        char buf[96];
        std::snprintf(buf, sizeof buf, "retry %d/%d in %.1f s: ", next, max, delayS);
        line(buf + why);
    }

private:
    void line(const std::string& s)
    {
        if (m_streaming) {
            std::fprintf(stderr, "\n");
            m_streaming = false;
        }
        std::fprintf(stderr, "%sllm  %s\n", m_tty ? "\r\033[K" : "", s.c_str());
    }

    bool m_logPrompts;
    bool m_logStream;
    bool m_tty;
    bool m_streaming = false;
};

class LlmRunImpl final : public LlmRun {
public:
    core::EngineObserver* observer(core::EngineObserver* inner) override
    {
        log->setInner(inner);
        return log.get();
    }
    std::unique_ptr<LlmLog> log;
    std::unique_ptr<llm::ChatClient> client;
    std::unique_ptr<core::LlmSynthesizer> synth;
};

std::chrono::milliseconds ms(double seconds)
{
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
}

} // namespace

void addLlmRunOptions(CLI::App& run, core::RunOptions& o, LlmCliOptions& llm)
{
    run.add_option("--synth", o.synth,
           "where children come from: knob (mutate seed knobs), grid (every admissible knob assignment of "
           "each seed once, in a seeded shuffle: a sweep) or llm")
        ->check(CLI::IsMember({ "knob", "grid", "llm" }));
    run.add_option(
           "--llm-provider", llm.provider, "wire protocol: openai (chat completions) or anthropic (messages)")
        ->check(CLI::IsMember({ "openai", "anthropic" }));
    run.add_option("--llm-url", llm.url, "base URL, e.g. http://127.0.0.1:8000/v1 (default: the provider's)");
    run.add_option("--llm-model", llm.model, "model name as the provider knows it");
    run.add_option("--llm-key-env", llm.keyEnv,
        "environment variable holding the API key (default OPENAI_API_KEY "
        "or ANTHROPIC_API_KEY); the key itself is never stored");
    run.add_option("--llm-config", llm.configFile,
        "JSON with prices and defaults (default $HONE_LLM_CONFIG or "
        "~/.config/hone/llm.json)");
    run.add_option("--prompts", llm.promptsDir, "folder with edited system.md / propose.md / repair.md");
    run.add_option("--repair", o.repair, "fix attempts per failed LLM candidate")->check(CLI::Range(0, 20));
    run.add_option("--max-tokens", llm.maxTokens, "token limit per reply")->check(CLI::Range(256, 1000000));
    run.add_option("--temperature", llm.temperature, "sampling temperature (default: the provider's)")
        ->check(CLI::Range(0.0, 2.0));
    run.add_option("--hint", o.hints, "a hint shown in every prompt (repeatable)");
    run.add_option(
           "--llm-budget-usd", o.llmBudgetUsd, "stop once the model calls cost this much (0: no limit)")
        ->check(CLI::Range(0.0, 1e6));
    run.add_option("--llm-token-budget", o.llmTokenBudget,
           "stop once the model calls used this many tokens (0: no limit)")
        ->check(CLI::Range(int64_t(0), int64_t(1) << 50));
    run.add_flag("--llm-no-stream", llm.noStream, "ask for whole replies instead of streamed ones");
    run.add_option("--llm-connect-timeout", llm.connectTimeoutS, "seconds")->check(CLI::Range(0.1, 600.0));
    run.add_option("--llm-first-token-timeout", llm.firstTokenTimeoutS, "seconds until the first token")
        ->check(CLI::Range(0.1, 3600.0));
    run.add_option("--llm-timeout", llm.timeoutS, "seconds for a whole reply (default 180)")
        ->check(CLI::Range(0.1, 36000.0));
    run.add_option("--llm-max-reply-kb", llm.maxReplyKb,
           "KiB of reply text one call may bring (default 1024); a longer reply or an endless stream fails")
        ->check(CLI::Range(1, 1 << 20));
    run.add_option("--llm-attempts", llm.attempts, "tries per call on 429, 5xx and resets")
        ->check(CLI::Range(1, 20));
    run.add_option("--llm-retry-base", llm.retryBaseS, "seconds before the first retry, doubled after")
        ->check(CLI::Range(0.0, 600.0));
    run.add_option("--llm-concurrency", llm.concurrency, "model calls at once")->check(CLI::Range(1, 256));
    run.add_option(
           "--llm-max-tokens-field", llm.maxTokensField, "openai: max_tokens or max_completion_tokens")
        ->check(CLI::IsMember({ "max_tokens", "max_completion_tokens" }));
    addLlmLogOptions(run, llm);
}

void addLlmLogOptions(CLI::App& cmd, LlmCliOptions& llm)
{
    cmd.add_flag("--llm-log-prompts", llm.logPrompts, "print every prompt sent to the model on stderr");
    cmd.add_flag("--llm-log-stream", llm.logStream, "print replies on stderr as they stream in");
}

void applyLlmOptions(const LlmCliOptions& llm, core::RunOptions& o)
{
    if (o.synth != "llm")
        return;
    const auto cfgPath = configPath(llm.configFile);
    nlohmann::json cfg = readConfig(cfgPath);
    std::string provider = llm.provider;
    if (provider.empty())
        provider = text(cfg, "provider", "openai");
    if (provider != "openai" && provider != "anthropic")
        throw CliError(ExitCode::Usage, "unknown LLM provider '" + provider + "'; expected openai or anthropic");
    std::string model = llm.model.empty() ? text(cfg, "model") : llm.model;
    if (model.empty())
        throw CliError(ExitCode::Usage, "--synth llm needs --llm-model NAME (the model as the provider knows it)");
    std::string url = llm.url.empty() ? text(cfg, "url") : llm.url;
    if (url.empty())
        url = llm::defaultBaseUrl(provider == "anthropic" ? llm::Protocol::Anthropic : llm::Protocol::OpenAi);
    if (!url.starts_with("http://") && !url.starts_with("https://"))
        throw CliError(ExitCode::Usage,
            "--llm-url '" + url + "': expected http://HOST[:PORT]/v1 or https://HOST/v1");
    if (url.find('@') != std::string::npos && url.find('@') < url.find('/', url.find("//") + 2))
        throw CliError(ExitCode::Usage,
            "--llm-url must not carry credentials; put the key in an environment variable "
            "and name it with --llm-key-env");
    const bool explicitKeyEnv = !llm.keyEnv.empty() || cfg.contains("key_env");
    std::string keyEnv = !llm.keyEnv.empty() ? llm.keyEnv : text(cfg, "key_env", defaultKeyEnv(provider));
    const char* key = std::getenv(keyEnv.c_str());
    if (explicitKeyEnv && (!key || !*key))
        throw CliError(ExitCode::Environment, "the environment variable " + keyEnv
            + " (named by --llm-key-env or the LLM configuration) is not set; export it with the API key");
    if (!explicitKeyEnv && (!key || !*key)
        && url
            == llm::defaultBaseUrl(
                provider == "anthropic" ? llm::Protocol::Anthropic : llm::Protocol::OpenAi))
        throw CliError(ExitCode::Environment, "no API key for " + url + ": set the environment variable " + keyEnv
            + " or name another with --llm-key-env");
    nlohmann::json prices = cfg.contains("prices") ? cfg["prices"] : nlohmann::json::object();
    llm::PriceTable::fromJson(
        prices, cfgPath.empty() ? "the LLM configuration" : cfgPath.string()); // validates
    int concurrency = llm.concurrency;
    if (auto c = cfg.find("max_concurrency");
        c != cfg.end() && c->is_number_integer() && llm.concurrency == 4)
        concurrency = c->get<int>();
    std::string prompts;
    if (!llm.promptsDir.empty()) {
        core::PromptTemplates::load(llm.promptsDir); // fails now, with file and line, not mid-search
        prompts = std::filesystem::absolute(llm.promptsDir).string();
    }
    o.llm = { { "provider", provider }, { "url", url }, { "model", model }, { "key_env", keyEnv },
        { "prices", prices }, { "max_tokens", llm.maxTokens }, { "temperature", llm.temperature },
        { "stream", !llm.noStream }, { "connect_timeout_s", llm.connectTimeoutS },
        { "first_token_timeout_s", llm.firstTokenTimeoutS }, { "timeout_s", llm.timeoutS },
        { "max_reply_bytes", int64_t(llm.maxReplyKb) * 1024 },
        { "attempts", llm.attempts }, { "retry_base_s", llm.retryBaseS }, { "concurrency", concurrency },
        { "prompts_dir", prompts }, { "max_tokens_field", llm.maxTokensField } };
}

std::unique_ptr<LlmRun> attachLlm(
    core::Engine& engine, const core::RunOptions& o, const LlmCliOptions& output, core::KnowledgeSource* knowledge)
{
    if (core::builtinSynth(o.synth))
        return nullptr;
    if (o.synth != "llm")
        throw CliError(ExitCode::Usage, "unknown synthesizer '" + o.synth + "'; expected knob, grid or llm");
    const nlohmann::json& j = o.llm;
    llm::ClientConfig cfg;
    cfg.protocol = text(j, "provider") == "anthropic" ? llm::Protocol::Anthropic : llm::Protocol::OpenAi;
    cfg.baseUrl = text(j, "url", llm::defaultBaseUrl(cfg.protocol));
    cfg.model = text(j, "model");
    if (cfg.model.empty())
        throw CliError(ExitCode::Input,
            "the session has no LLM model in its settings; start a new one with --llm-model");
    cfg.keyEnv = text(j, "key_env", defaultKeyEnv(text(j, "provider")));
    if (const char* key = std::getenv(cfg.keyEnv.c_str()))
        cfg.apiKey = key;
    cfg.connectTimeout = ms(j.value("connect_timeout_s", 10.0));
    cfg.firstTokenTimeout = ms(j.value("first_token_timeout_s", 120.0));
    cfg.totalTimeout = ms(j.value("timeout_s", 180.0));
    cfg.maxReplyBytes = static_cast<size_t>(std::max<int64_t>(1, j.value("max_reply_bytes", int64_t(1) << 20)));
    cfg.retry.maxAttempts = j.value("attempts", 4);
    cfg.retry.baseDelay = ms(j.value("retry_base_s", 1.0));
    cfg.maxConcurrency = j.value("concurrency", 4);
    cfg.maxTokensField = text(j, "max_tokens_field", "max_tokens");
    cfg.prices = llm::PriceTable::fromJson(
        j.value("prices", nlohmann::json::object()), "the session's LLM settings");

    core::LlmSynthConfig sc;
    sc.repairAttempts = o.repair;
    sc.maxTokens = j.value("max_tokens", 8192);
    sc.temperature = j.value("temperature", -1.0);
    sc.stream = j.value("stream", true);
    sc.budgetUsd = o.llmBudgetUsd;
    sc.tokenBudget = o.llmTokenBudget;

    std::string prompts = text(j, "prompts_dir");
    core::PromptTemplates templates
        = prompts.empty() ? core::PromptTemplates::builtin() : core::PromptTemplates::load(prompts);

    auto run = std::make_unique<LlmRunImpl>();
    run->log = std::make_unique<LlmLog>(output.logPrompts, output.logStream);
    run->client = llm::makeClient(std::move(cfg));
    run->synth = std::make_unique<core::LlmSynthesizer>(
        *run->client, core::PromptBuilder(std::move(templates)), sc, knowledge, run->log.get());
    engine.setSynthesizer(run->synth.get());
    return run;
}

nlohmann::json llmSummaryJson(const core::Store& store, int64_t session)
{
    int proposals = 0, repairs = 0, rejected = 0, errors = 0;
    double latency = 0;
    std::string model;
    for (const auto& c : store.llmCalls(session)) {
        (c.purpose == "repair" ? repairs : proposals) += 1;
        rejected += c.status == "rejected";
        errors += c.status == "error";
        latency += c.latencyMs;
        model = c.provider + "/" + c.model;
    }
    core::LlmTotals t = store.llmTotals(session);
    return { { "model", model }, { "calls", t.calls }, { "proposals", proposals }, { "repairs", repairs },
        { "rejected", rejected }, { "errors", errors }, { "tokens_in", t.tokensIn },
        { "tokens_out", t.tokensOut }, { "cost_usd", t.costUsd }, { "latency_s", latency / 1000 } };
}

void printLlmSummary(const core::Store& store, int64_t session)
{
    nlohmann::json s = llmSummaryJson(store, session);
    std::printf(
        "llm        %d calls to %s (%d proposals, %d repairs; %d rejected, %d failed): %lld tokens in, "
        "%lld out, %s, %.1f s\n",
        s["calls"].get<int>(), s["model"].get<std::string>().c_str(), s["proposals"].get<int>(),
        s["repairs"].get<int>(), s["rejected"].get<int>(), s["errors"].get<int>(),
        static_cast<long long>(s["tokens_in"].get<int64_t>()),
        static_cast<long long>(s["tokens_out"].get<int64_t>()), money(s["cost_usd"].get<double>()).c_str(),
        s["latency_s"].get<double>());
}

std::vector<nlohmann::json> trajectorySteps(const core::Store& store, int64_t session)
{
    auto rec = store.session(session);
    if (!rec)
        throw CliError(ExitCode::Input, "no session " + std::to_string(session) + " in store "
            + store.path().string() + "; list sessions with 'hone show'");
    std::map<int64_t, core::NodeRecord> nodes;
    for (auto& n : store.nodes(session))
        nodes.emplace(n.id, std::move(n));
    std::map<int64_t, core::EvaluationRecord> evals;
    for (auto& e : store.evaluations(session))
        evals.emplace(e.nodeId, std::move(e));
    std::vector<nlohmann::json> out;
    int step = 0;
    for (const auto& c : store.llmCalls(session)) {
        ++step;
        if (c.nodeId < 0)
            continue; // a call that produced nothing to learn from (the session stopped on it)
        nlohmann::json line = { { "session", session }, { "problem", rec->problemName }, { "step", step },
            { "node", c.nodeId }, { "purpose", c.purpose }, { "operator", c.op }, { "provider", c.provider },
            { "model", c.model }, { "prompt", c.prompt }, { "response", c.response },
            { "finish_reason", c.finishReason }, { "call_status", c.status }, { "tokens_in", c.tokensIn },
            { "tokens_out", c.tokensOut }, { "cost_usd", c.costUsd }, { "latency_ms", c.latencyMs } };
        if (auto n = nodes.find(c.nodeId); n != nodes.end()) {
            line["parent"] = n->second.parentId;
            line["candidate"] = { { "source_sha256", n->second.sourceHash }, { "knobs", n->second.knobs },
                { "flags", n->second.flags } };
        }
        auto e = evals.find(c.nodeId);
        if (e == evals.end()) {
            line["feedback"] = { { "status", "pending" } };
            line["reward"] = nullptr;
        } else {
            const auto& ev = e->second;
            const core::protocol::EvalResult result = ev.evalResult();
            nlohmann::json fb = { { "status", ev.status } };
            if (ev.status == "ok") {
                fb["speedup"] = ev.speedup;
                fb["median_ns"] = ev.medianNs;
                fb["bound"] = ev.bound;
                if (result.diagnosis)
                    fb["evidence"] = result.diagnosis->evidence;
            } else {
                fb["failure_kind"] = ev.failureKind;
                fb["failure_message"] = ev.failureMessage;
                fb["text"] = core::renderFeedback(result);
            }
            line["feedback"] = fb;
            line["reward"] = ev.reward;
        }
        out.push_back(std::move(line));
    }
    return out;
}

CLI::App* addTrajectoryCommand(CLI::App& app, TrajectoryOptions& o)
{
    auto* cmd = app.add_subcommand("export-trajectories",
        "write each model call of SESSION (or --all) as a JSON line: prompt, response, feedback, reward");
    cmd->add_option("args", o.args, "SESSION OUT.jsonl, or OUT.jsonl with --all")->required()->expected(1, 2);
    cmd->add_flag("--all", o.all, "every session in the store");
    return cmd;
}

int cmdExportTrajectories(const std::string& storePath, const TrajectoryOptions& o)
{
    if (o.args.size() != (o.all ? 1u : 2u))
        throw CliError(ExitCode::Usage, o.all
                ? "export-trajectories --all: expected only OUT.jsonl"
                : "export-trajectories: expected SESSION OUT.jsonl, or --all OUT.jsonl");
    requireExistingStore(storePath);
    core::Store store(storePath);
    std::vector<int64_t> sessions;
    if (o.all) {
        for (const auto& s : store.sessions())
            sessions.push_back(s.id);
    } else {
        try {
            size_t used = 0;
            sessions.push_back(std::stoll(o.args[0], &used));
            if (used != o.args[0].size())
                throw std::invalid_argument("trailing characters");
        } catch (const std::exception&) {
            throw CliError(ExitCode::Usage, "export-trajectories: session '" + o.args[0]
                + "' is not a number; list sessions with 'hone show'");
        }
        if (!store.session(sessions[0]))
            throw CliError(ExitCode::Input,
                "no session " + o.args[0] + " in store " + storePath + "; list sessions with 'hone show'");
    }
    // Written next to the target and renamed: a failed export leaves no half file behind.
    std::filesystem::path out(o.args.back());
    std::filesystem::path tmp = out;
    tmp += ".part";
    size_t steps = 0;
    {
        std::ofstream f(tmp, std::ios::trunc);
        if (!f)
            throw CliError(ExitCode::Input,
                "cannot write " + tmp.string() + "; check the folder exists and is writable");
        for (int64_t s : sessions)
            for (const auto& line : trajectorySteps(store, s)) {
                f << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
                ++steps;
            }
        if (!f.flush())
            throw CliError(ExitCode::Environment, "writing " + tmp.string() + " failed; is the disk full?");
    }
    std::filesystem::rename(tmp, out);
    std::printf("exported %zu steps from %zu session%s to %s\n", steps, sessions.size(),
        sessions.size() == 1 ? "" : "s", out.string().c_str());
    return 0;
}

} // namespace hone::app
