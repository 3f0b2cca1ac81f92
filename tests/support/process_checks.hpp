#pragma once
// Proving "no process left": the test process is a child subreaper, so every orphaned
// descendant is re-parented to it and shows up as its descendant in /proc.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace arun::test {

/// Makes this process the subreaper of everything it starts (done once in main).
void become_subreaper();

/// Live (non-zombie) descendants of this process.
std::vector<pid_t> live_descendants();

/// Reaps zombies, then waits up to `patience` for descendants to disappear; returns the
/// ones still alive (described as "pid comm") and SIGKILLs them so one test cannot
/// poison the next.
std::vector<std::string> leftover_processes(std::chrono::milliseconds patience = std::chrono::milliseconds(2000));

/// Whether a pid is alive (and not a zombie).
bool process_alive(pid_t pid);

}  // namespace arun::test
