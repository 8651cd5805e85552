#pragma once

#include "core/eval_result.h"
#include "core/synthesizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::core {

struct ProblemSpec;

/// A template that cannot be used: names the file, the line and the fix.
class PromptError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// What a knowledge base is asked for one prompt (DESIGN.md §1, step 3).
struct KnowledgeQuery {
    std::string family; // the problem's op family
    std::string target; // cpu | cuda | hip
    std::string device;
    std::string bound; // last diagnosis of the expanded node: memory | compute | latency | occupancy
    std::string failureKind; // when repairing
    std::string failureMessage;
};

/// Retrieved knowledge and hints as plain text, one string per hit. The knowledge base
/// implements this; the prompt builder only prints what it gets.
class KnowledgeSource {
public:
    virtual ~KnowledgeSource() = default;
    virtual std::vector<std::string> lookup(const KnowledgeQuery& query) = 0;
};

/// The three user-editable templates of resources/prompts/. `{{name}}` is replaced by a value;
/// `{{#name}}...{{/name}}` is kept only when `name` is non-empty.
struct PromptTemplates {
    std::string system;
    std::string propose;
    std::string repair;
    std::string origin; // the folder they came from, or "built-in"

    /// The copies compiled into hone (from resources/prompts/ at build time).
    static PromptTemplates builtin();

    /// Reads system.md, propose.md and repair.md from `dir`; a file that is missing there
    /// falls back to the built-in copy. Throws PromptError for an unknown placeholder or an
    /// unbalanced section, naming file and line.
    static PromptTemplates load(const std::filesystem::path& dir);
};

/// A prompt ready to send.
struct Prompt {
    std::string system;
    std::string user;
    std::string kind; // propose | repair
};

/// Everything a prompt may show.
struct PromptInputs {
    const ProblemSpec* problem = nullptr;
    std::string target = "cpu";
    std::string device;
    std::string toolchain;
    nlohmann::json ceilings;
    MemoryContext memory;
    std::vector<std::string> knowledge;
    std::vector<std::string> hints;
    size_t maxSourceBytes = 200 * 1024;
    int attempt = 0; // repair: 1-based attempt number
    int maxAttempts = 0;
};

/// Builds prompts from templates (DESIGN.md §1, steps 2-4). Pure: the same inputs give the
/// same text, so a stored prompt can be rebuilt and diffed.
class PromptBuilder {
public:
    explicit PromptBuilder(PromptTemplates templates = PromptTemplates::builtin());

    /// A new child of `inputs.memory.entries[0]` (or a fresh kernel for `restart`).
    Prompt propose(const PromptInputs& inputs) const;

    /// A fix of the failed `inputs.memory.entries[0]`; later entries are shown as context.
    Prompt repair(const PromptInputs& inputs) const;

    const PromptTemplates& templates() const { return m_templates; }

private:
    std::map<std::string, std::string> commonValues(const PromptInputs& in) const;

    PromptTemplates m_templates;
};

/// The candidate ABI header (resources/include/hone/kernel.h, compiled in).
const std::string& abiHeaderText();

/// "cpp" for the CPU, "cuda", "hip".
std::string languageOfTarget(const std::string& target);

/// The problem as a prompt states it: description, tensors, shapes, tolerance, cost model.
std::string describeProblem(const ProblemSpec& spec);

/// Facts about the target: device, compiler, build line, calibrated ceilings.
std::string describeHardware(const std::string& target, const std::string& device,
    const std::string& toolchain, const nlohmann::json& ceilings);

/// What went wrong in a worker `result`, for a person or a model: failure, compiler messages,
/// first mismatches. Empty for a success. At most `maxChars` characters.
std::string renderFeedback(const protocol::EvalResult& result, size_t maxChars = 4000);

/// One memory entry: header line, result and diagnosis, then the code when `withCode`.
std::string renderMemoryEntry(const MemoryEntry& entry, const std::string& lang, bool withCode);

/// Replaces `{{name}}` and resolves `{{#name}}...{{/name}}`. Throws PromptError naming
/// `fileName` and the line for an unknown name or an unbalanced section.
std::string renderTemplate(
    const std::string& text, const std::map<std::string, std::string>& values, const std::string& fileName);

} // namespace hone::core
