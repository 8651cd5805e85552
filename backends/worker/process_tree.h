#pragma once

#include <sys/types.h>

#include <vector>

/// Finding and ending every process below a given one, whatever process group or session it
/// moved to (a candidate's child that called setsid() leaves the group, never the tree).
/// Linux only: the tree is read from /proc/*/stat.
namespace hone::backends {

/// Live (not zombie) processes whose chain of parents leads to `root`, `root` excluded.
std::vector<pid_t> descendantsOf(pid_t root);

/// SIGKILLs every descendant of `root` (not `root` itself), again and again until a scan finds
/// none alive or `rounds` scans were made; returns how many processes it signalled. Orphans of
/// the killed reparent to the nearest subreaper: while `root` is one (PR_SET_CHILD_SUBREAPER)
/// and still alive, a grandchild whose parent died in between is found by the next scan.
int killDescendants(pid_t root, int rounds = 50);

/// Reaps this process's children that are zombies (the killed, and orphans a subreaper
/// inherited). Only where no other part of the process waits for a child (between requests).
int reapZombieChildren();

} // namespace hone::backends
