#pragma once

#include "core/engine.h"
#include "core/prompt_builder.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace hone::core {
class Store;
}

/// `hone run --synth llm ...`, `hone resume` of such a session, and `hone export-trajectories`
/// (docs/LLM.md).
namespace hone::app {

/// Command-line settings of the LLM synthesizer. What a resume needs goes into
/// RunOptions::llm (never the key, only the name of its variable).
struct LlmCliOptions {
    std::string provider; // openai | anthropic (default: configuration, else openai)
    std::string url; // default: the provider's public endpoint
    std::string model;
    std::string keyEnv; // default OPENAI_API_KEY / ANTHROPIC_API_KEY
    std::string configFile; // JSON: prices and defaults
    std::string promptsDir; // edited templates; default: built in
    int maxTokens = 8192;
    double temperature = -1;
    bool noStream = false;
    double connectTimeoutS = 10;
    double firstTokenTimeoutS = 120;
    double timeoutS = 180;
    int maxReplyKb = 1024; // reply text cap per call
    int attempts = 4;
    double retryBaseS = 1;
    int concurrency = 4;
    std::string maxTokensField = "max_tokens";
    // Output only (not stored with the session).
    bool logPrompts = false;
    bool logStream = false;
};

/// Adds --synth, --llm-*, --repair, --max-tokens, --memory, --hint to `run`.
void addLlmRunOptions(CLI::App& run, core::RunOptions& options, LlmCliOptions& llm);

/// Adds the output options (--llm-log-prompts, --llm-log-stream) to `resume`.
void addLlmLogOptions(CLI::App& cmd, LlmCliOptions& llm);

/// Checks the LLM options of a new run (a clear error for a missing model, a bad URL, an unset
/// key variable) and stores the resumable part in options.llm.
void applyLlmOptions(const LlmCliOptions& llm, core::RunOptions& options);

/// The LLM client, synthesizer and log of one run or resume.
class LlmRun {
public:
    virtual ~LlmRun() = default;
    /// An observer that forwards to `inner` and also prints the model calls.
    virtual core::EngineObserver* observer(core::EngineObserver* inner) = 0;
};

/// For options.synth == "llm": builds the client from options.llm (the key from its
/// environment variable) and attaches a synthesizer to `engine`. nullptr for "knob".
/// `knowledge` (may be null) feeds retrieved hardware knowledge and skills into the prompts.
std::unique_ptr<LlmRun> attachLlm(core::Engine& engine, const core::RunOptions& options, const LlmCliOptions& output,
    core::KnowledgeSource* knowledge = nullptr);

/// Calls, tokens, cost, repairs of a session.
nlohmann::json llmSummaryJson(const core::Store& store, int64_t session);
void printLlmSummary(const core::Store& store, int64_t session);

struct TrajectoryOptions {
    std::vector<std::string> args; // [SESSION] OUT
    bool all = false;
};

/// `hone export-trajectories (SESSION | --all) OUT.jsonl`
CLI::App* addTrajectoryCommand(CLI::App& app, TrajectoryOptions& options);
int cmdExportTrajectories(const std::string& storePath, const TrajectoryOptions& options);

/// One JSON line per model call that produced a node: prompt, response, evaluation feedback
/// and reward. Public for tests.
std::vector<nlohmann::json> trajectorySteps(const core::Store& store, int64_t session);

} // namespace hone::app
