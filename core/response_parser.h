#pragma once

#include "core/knobs.h"

#include <string>
#include <string_view>
#include <vector>

namespace hone::core {

/// What a reply must respect; from the problem and the target.
struct ReplyRules {
    std::string lang = "cpp"; // cpp | cuda | hip
    std::vector<std::string> allowedLibraries; // problem.toml [libraries] allowed
    size_t maxSourceBytes = 200 * 1024;
};

struct ParsedReply {
    bool ok = false;
    std::string source; // the kernel, when ok
    std::string reason; // why the reply was rejected: what is wrong and what the contract is
    KnobSpace knobs; // its `// hone:` annotations, when ok
};

/// Extracts the kernel from a model's reply (DESIGN.md §1, step 4). Rejects a reply that was
/// cut off (`truncated`, or a fence that never closes), that has no fenced block defining
/// `hone_run` or several, that is over the size limit, that has malformed `// hone:` lines, or
/// that uses what the problem forbids: headers of libraries not in `allowedLibraries`,
/// processes, dynamic loading, file and socket I/O, load-time constructors, and inline assembly
/// on the CPU. Comments and string literals are ignored when looking for those.
ParsedReply parseReply(
    std::string_view reply, bool truncated, const std::string& finishReason, const ReplyRules& rules);

/// The reasons `source` breaks the rules above, one per construct, each naming its line; empty
/// when it is clean.
std::vector<std::string> forbiddenConstructs(const std::string& source, const ReplyRules& rules);

} // namespace hone::core
