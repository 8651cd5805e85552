#pragma once

#include "core/expr.h"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace hone::core {

/// One `// hone:knob NAME = a | b | c [acts=KIND]` line.
struct KnobDecl {
    std::string name;
    std::vector<std::string> values; // in declaration order (neighbours are adjacent values)
    int line = 0;
    std::string acts; // what the knob acts on, one of knobActsKinds(); "" when not declared
};

/// The `acts=` vocabulary of docs/FORMATS.md: bytes_per_access, parallelism, work_per_thread,
/// memory_pipeline, reduction, cache_policy, launch_shape, arithmetic.
const std::vector<std::string>& knobActsKinds();

/// A knob assignment, NAME -> value text. Ordered so that it prints and hashes stably.
using KnobValues = std::map<std::string, std::string>;

/// Everything a source declares in `// hone:` comments.
struct KnobSpace {
    std::vector<KnobDecl> knobs;
    std::vector<Expr> requires_;     // all must hold
    std::string flags;               // from `// hone:flags`, space-joined
    KnobValues start;                // from `// hone:start NAME=v ...`: the author's best guess

    bool empty() const { return knobs.empty(); }
    const KnobDecl* find(const std::string& name) const;

    /// True when every knob has a declared value and every `require` holds. `why` gets the
    /// first violated constraint.
    bool admits(const KnobValues& values, std::string* why = nullptr) const;

    /// The first admissible assignment in declaration order (odometer over the values), or
    /// nullopt when no assignment satisfies the constraints.
    std::optional<KnobValues> firstAdmissible() const;

    /// Every admissible assignment, in odometer order (the first knob turns fastest). Throws
    /// KnobError when the space has more than `limit` assignments before constraints, so a
    /// huge space is refused rather than enumerated.
    std::vector<KnobValues> admissibleAssignments(uint64_t limit = 100'000) const;

    /// Where a seed enters the search: the `hone:start` values (first declared values for
    /// knobs it does not name) when admissible, else firstAdmissible().
    std::optional<KnobValues> initial() const;

    /// Number of assignments, ignoring constraints (saturates at 2^62).
    uint64_t cardinality() const;
};

/// Raised for a malformed `// hone:` line; the message names the line and what was expected.
class KnobError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Parses the `// hone:knob`, `// hone:require` and `// hone:flags` lines of a source.
/// `fileName` is used in messages. Unknown `// hone:` directives are errors (a typo must not
/// silently drop a constraint).
KnobSpace parseKnobSpace(const std::string& source, const std::string& fileName);

/// Checks user-supplied compile flags against the allow-list of docs/FORMATS.md for `lang`
/// ("cpp": the host compiler's list; "cuda": nvcc's). Returns an empty string when all are
/// allowed, else a message naming the first refused flag.
std::string checkFlags(const std::string& flags, const std::string& lang = "cpp");

/// "cuda" for a .cu file name, "hip" for .hip, else "cpp".
std::string langOfFile(const std::string& fileName);

/// "A=1 B=x" (sorted by name); "" for none.
std::string knobsToString(const KnobValues& values);

} // namespace hone::core
