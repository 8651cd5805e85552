#pragma once

// Live move skills (docs/SEARCH.md, "Live move skills"): the move statistics of a store's
// recorded sessions, learnt when a session starts, for its hybrid knob policy.

#include "core/move_skill.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hone::core {
class Store;
}

namespace hone::knowledge {

/// Which recorded sessions a live move skill is learnt from.
struct MoveHistoryQuery {
    std::string family;       // the new session's problem family
    std::string arch;         // its arch, as sessionArch names it (x86_64-avx2, sm_90, ...)
    std::string target;       // cpu | cuda | hip
    std::string device;       // the device as the worker names it; a card's " [uuid]" is ignored
    bool sameFamily = true;   // only sessions of problems of `family`; false: every family
    int maxSessions = 50;     // the most recent matching sessions, among at most 4x as many read
};

struct MoveHistorySkill {
    std::shared_ptr<const core::MoveSkill> skill; // null when no recorded session had a one-knob move
    std::vector<int64_t> sessions;                // the sessions it was learnt from, oldest first
    std::string from;                             // "this store's sessions 1, 3 (scale), family ... on ..."
    std::string note;                             // why there is none, when there is none
};

/// Learns a move skill from the one-knob pairs (core::learnMoveSkill) of the store's sessions
/// on the same target, arch and kind of device (and family), pooled over problems: a skill
/// learnt on another machine state can mislead (docs/SEARCH.md, "Skills that transfer"). A session whose recording
/// cannot be read as a replay table (no evaluated seed, a space too large) is skipped.
MoveHistorySkill learnMoveHistory(const core::Store& store, const MoveHistoryQuery& query);

/// The move skill of a JSON file written by `hone replay --learn-moves`. Throws
/// std::runtime_error naming the file (and, for a malformed move, the field) when it cannot be
/// read or is not a move skill.
core::MoveSkill readMoveSkillFile(const std::string& path);

/// One line for a report: "N moves (K kinds) from WHERE" and the strongest statement.
std::string describeMoveSkill(const core::MoveSkill& skill, const std::string& from);

} // namespace hone::knowledge
