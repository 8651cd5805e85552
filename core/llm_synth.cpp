#include "core/llm_synth.h"

#include "core/problem_spec.h"
#include "core/sha256.h"
#include "core/utf8.h"

#include <cstdio>

namespace hone::core {

const char* llmErrorName(LlmError e)
{
    switch (e) {
    case LlmError::None:
        return "none";
    case LlmError::Unreachable:
        return "unreachable";
    case LlmError::Auth:
        return "auth";
    case LlmError::NotFound:
        return "not_found";
    case LlmError::BadRequest:
        return "bad_request";
    case LlmError::RateLimited:
        return "rate_limited";
    case LlmError::Server:
        return "server_error";
    case LlmError::Reset:
        return "connection_reset";
    case LlmError::Timeout:
        return "timeout";
    case LlmError::BadReply:
        return "bad_reply";
    case LlmError::Cancelled:
        return "cancelled";
    }
    return "unknown";
}

bool llmErrorIsFatal(LlmError e)
{
    return e == LlmError::Unreachable || e == LlmError::Auth || e == LlmError::NotFound
        || e == LlmError::BadRequest;
}

namespace {

std::string money(double usd)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "$%.4f", usd);
    return buf;
}

std::string extensionOf(const std::string& lang)
{
    if (lang == "cuda")
        return ".cu";
    if (lang == "hip")
        return ".hip";
    return ".cpp";
}

} // namespace

LlmSynthesizer::LlmSynthesizer(LlmClient& client, PromptBuilder builder, LlmSynthConfig config,
    KnowledgeSource* knowledge, LlmSynthObserver* observer)
    : m_client(client)
    , m_builder(std::move(builder))
    , m_config(config)
    , m_knowledge(knowledge)
    , m_observer(observer)
{
}

void LlmSynthesizer::begin(const SynthSession& session)
{
    if (!session.problem)
        throw std::logic_error("LlmSynthesizer::begin: no problem");
    m_session = session;
    m_rules.lang = languageOfTarget(session.target);
    m_rules.allowedLibraries = session.problem->allowedLibraries;
    m_rules.maxSourceBytes = m_config.maxSourceBytes;
    m_spentUsd = session.spentUsd;
    m_spentTokens = session.spentTokens;
    m_consecutiveErrors = 0;
    m_declined.clear();
}

bool LlmSynthesizer::repairable(const std::string& kind)
{
    return kind == "compile_error" || kind == "wrong_result" || kind == "nan" || kind == "partial_write"
        || kind == "input_mutation" || kind == "runtime_error" || kind == "bad_candidate";
}

int LlmSynthesizer::repairDepth(const SearchTree& tree, NodeId node)
{
    int depth = 0;
    for (NodeId cur = node; cur > 0 && tree.node(cur).origin == "repair"; cur = tree.node(cur).parent)
        ++depth;
    return depth;
}

std::optional<NodeId> LlmSynthesizer::repairCandidate(const SearchTree& tree)
{
    if (m_config.repairAttempts <= 0)
        return std::nullopt;
    for (const Node& n : tree.nodes()) {
        if (n.state != NodeState::Failed || n.pruned || !n.children.empty() || m_declined.count(n.id))
            continue;
        if (n.origin != "llm" && n.origin != "repair")
            continue;
        if (!repairable(n.failureKind) || repairDepth(tree, n.id) >= m_config.repairAttempts)
            continue;
        return n.id;
    }
    return std::nullopt;
}

void LlmSynthesizer::checkBudget() const
{
    if (m_config.budgetUsd > 0 && m_spentUsd >= m_config.budgetUsd)
        throw SynthError("LLM budget of " + money(m_config.budgetUsd) + " spent (" + money(m_spentUsd)
                + "); raise --llm-budget-usd to go on",
            false);
    if (m_config.tokenBudget > 0 && m_spentTokens >= m_config.tokenBudget)
        throw SynthError("LLM token budget of " + std::to_string(m_config.tokenBudget) + " tokens spent ("
                + std::to_string(m_spentTokens) + "); raise --llm-token-budget to go on",
            false);
}

PromptInputs LlmSynthesizer::inputsFor(const SynthRequest& request) const
{
    PromptInputs in;
    in.problem = m_session.problem;
    in.target = m_session.target;
    in.device = m_session.device;
    in.toolchain = m_session.toolchain;
    in.ceilings = m_session.ceilings;
    in.memory = request.memory;
    in.hints = m_session.hints;
    in.maxSourceBytes = m_config.maxSourceBytes;
    if (m_knowledge) {
        KnowledgeQuery q;
        q.family = m_session.problem->family;
        q.target = m_session.target;
        q.device = m_session.device;
        if (!request.memory.entries.empty()) {
            const MemoryEntry& e = request.memory.entries.front();
            q.bound = e.bound;
            if (e.status == "failed") {
                q.failureKind = e.failureKind;
                q.failureMessage = e.failureMessage;
            }
        }
        in.knowledge = m_knowledge->lookup(q);
    }
    return in;
}

std::optional<SynthProposal> LlmSynthesizer::propose(const SynthRequest& request)
{
    const Node& node = request.tree->node(request.node);
    // The root only for a restart: a problem without seed kernels (a PyTorch reference) starts
    // from the problem itself.
    if (node.id == 0 ? request.memory.op != MemoryOperator::Restart : node.state != NodeState::Ok)
        return std::nullopt;
    checkBudget();
    PromptInputs in = inputsFor(request);
    return ask(request, m_builder.propose(in), "propose", request.node);
}

std::optional<SynthProposal> LlmSynthesizer::repair(const SynthRequest& request)
{
    m_declined.insert(request.node);
    if (request.memory.entries.empty())
        return std::nullopt;
    checkBudget();
    PromptInputs in = inputsFor(request);
    in.attempt = repairDepth(*request.tree, request.node) + 1;
    in.maxAttempts = m_config.repairAttempts;
    return ask(request, m_builder.repair(in), "repair", request.node);
}

std::optional<SynthProposal> LlmSynthesizer::ask(
    const SynthRequest& request, const Prompt& prompt, const std::string& purpose, NodeId parent)
{
    LlmRequest req;
    req.system = prompt.system;
    req.messages.push_back({ "user", prompt.user });
    req.maxTokens = m_config.maxTokens;
    req.temperature = m_config.temperature;
    req.stream = m_config.stream;
    if (m_observer)
        m_observer->callStarted(purpose, parent, prompt);
    LlmReply reply = m_client.complete(req, m_observer, request.cancel);
    // Whatever the client, the reply is text for JSON and the store from here on.
    reply.text = validUtf8(reply.text);
    reply.errorMessage = validUtf8(reply.errorMessage);

    LlmCallRecord rec;
    rec.purpose = purpose;
    rec.op = memoryOperatorName(request.memory.op);
    rec.provider = m_client.provider();
    rec.model = m_client.model();
    rec.prompt = { { "system", prompt.system },
        { "messages", { { { "role", "user" }, { "content", prompt.user } } } },
        { "max_tokens", req.maxTokens }, { "stream", req.stream },
        { "templates", m_builder.templates().origin } };
    if (req.temperature >= 0)
        rec.prompt["temperature"] = req.temperature;
    rec.response = reply.text;
    rec.finishReason = reply.finishReason;
    rec.tokensIn = reply.tokensIn;
    rec.tokensOut = reply.tokensOut;
    rec.usageReported = reply.usageReported;
    rec.costUsd = reply.costUsd;
    rec.latencyMs = reply.latencyMs;
    rec.firstTokenMs = reply.firstTokenMs;
    rec.attempts = reply.attempts;
    rec.httpStatus = reply.httpStatus;
    m_spentUsd += reply.costUsd;
    m_spentTokens += reply.tokensIn + reply.tokensOut;

    SynthProposal p;
    p.parent = parent;
    p.origin = purpose == "repair" ? "repair" : "llm";
    p.op = rec.op;

    if (!reply.ok) {
        rec.status = "error";
        rec.error = reply.errorMessage;
        if (m_observer)
            m_observer->callFinished(rec, parent);
        if (reply.error == LlmError::Cancelled)
            throw SynthError("stopped by request", false, { rec });
        if (llmErrorIsFatal(reply.error))
            throw SynthError(reply.errorMessage, true, { rec });
        if (++m_consecutiveErrors >= m_config.maxConsecutiveErrors)
            throw SynthError(reply.errorMessage + " (" + std::to_string(m_consecutiveErrors)
                    + " model calls in a row failed; the session stops here, continue it with 'hone resume')",
                true, { rec });
        p.rejectKind = protocol::FailureKind::LlmError;
        p.rejectReason = "the model call failed: " + reply.errorMessage;
        p.calls.push_back(std::move(rec));
        return p;
    }
    m_consecutiveErrors = 0;

    ParsedReply parsed = parseReply(reply.text, reply.truncated, reply.finishReason, m_rules);
    if (!parsed.ok) {
        rec.status = "rejected";
        rec.error = validUtf8(parsed.reason); // it may quote a cut-off piece of the reply
        p.rejectKind = protocol::FailureKind::BadCandidate;
        p.rejectReason = "rejected reply: " + rec.error;
    } else {
        rec.status = "ok";
        NewSource src;
        src.lang = m_rules.lang;
        src.name = "llm_" + sha256Hex(parsed.source).substr(0, 8) + extensionOf(src.lang);
        src.text = std::move(parsed.source);
        p.newSource = std::move(src);
        p.flags = parsed.knobs.flags;
        if (auto first = parsed.knobs.firstAdmissible())
            p.knobs = *first;
    }
    if (m_observer)
        m_observer->callFinished(rec, parent);
    p.calls.push_back(std::move(rec));
    return p;
}

} // namespace hone::core
