#pragma once

#include "core/knobs.h"
#include "core/search_tree.h"

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace hone::core {

/// A command from the engineer to a running search (docs/SEARCH.md, "Steering"). Posted from
/// any thread, applied by the engine before its next proposal, and logged in the store with
/// its time, author and outcome.
struct SteeringCommand {
    enum class Kind { Pause, Resume, Prune, Boost, Hint, ManualChild, Stop };
    Kind kind = Kind::Stop;
    NodeId node = -1;           // prune, boost, hint: the node; manual child: its parent
    std::string text;           // hint: the text; manual child: a source (empty: the parent's)
    std::string sourceName;     // manual child with a source: its file name (decides the language)
    KnobValues knobs;           // manual child: the assignment (empty: the source's first)
    std::string flags;          // manual child: compile flags (empty: the parent's)
    std::string author;
};

std::string steeringKindName(SteeringCommand::Kind kind);

/// The engine's inbox: many writers, one reader (the engine thread).
class SteeringQueue {
public:
    void post(SteeringCommand command)
    {
        std::lock_guard lock(m_mutex);
        m_commands.push_back(std::move(command));
    }
    std::vector<SteeringCommand> takeAll()
    {
        std::lock_guard lock(m_mutex);
        std::vector<SteeringCommand> out(std::make_move_iterator(m_commands.begin()),
            std::make_move_iterator(m_commands.end()));
        m_commands.clear();
        return out;
    }

private:
    std::mutex m_mutex;
    std::deque<SteeringCommand> m_commands; // guarded by m_mutex
};

} // namespace hone::core
