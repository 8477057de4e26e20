#pragma once
// The processes below a process, found through /proc (each task's `children` file, or a scan of
// every /proc/<pid>/stat when the kernel has no such file), and a way to kill all of them. With
// PR_SET_CHILD_SUBREAPER on the root, nothing escapes: a process that calls setsid() is still a
// descendant, and an orphan comes back to the root as its child (docs/local.md).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <vector>

namespace tfjob::local {

// Every live (not zombie) descendant of `root`, parents before children.
std::vector<pid_t> Descendants(pid_t root);

// SIGKILLs every descendant of `root`, again and again until none is left (a process can fork
// between the scan and the kill) or `timeout` passes. `reap` is called after each round: the
// root must wait for the children it has (orphans reparent to it). Returns true when none is left.
bool KillDescendants(pid_t root, const std::function<void()>& reap,
                     std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace tfjob::local
