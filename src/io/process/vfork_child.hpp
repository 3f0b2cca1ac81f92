#pragma once
// Starting a child the way glibc's posix_spawn does — clone(CLONE_VM | CLONE_VFORK) on a
// private stack, the parent suspended until the child execs — with one step posix_spawn
// cannot take: the child can move itself into a cgroup before it execs, so that everything
// it will ever start is inside that cgroup from its first instruction (glibc 2.36 has no
// posix_spawnattr_setcgroup_np; clone3's CLONE_INTO_CGROUP needs a stack switch in assembly
// or a full fork, which costs 15 ms per spawn at 500 MiB RSS). Measured on the development
// VM: 640 µs per spawn with the cgroup move against 615 µs for posix_spawn.

#include <sys/types.h>

#include <string>

namespace arun::io {

enum class child_stage { none, cgroup, setup, exec };

/// Everything the child needs, prepared by the parent: the child shares the parent's memory
/// and must neither allocate nor take a lock, so it only reads this and makes system calls.
struct child_plan {
  const char* program = nullptr;  ///< absolute or relative path: no PATH search
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* working_dir = nullptr;  ///< nullptr: the parent's
  int stdin_fd = -1;                  ///< -1: /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  int cgroup_procs_fd = -1;  ///< an open cgroup.procs to join first; -1: stay in the parent's
  // Written by the child when it cannot exec (it then exits 127).
  child_stage failed_stage = child_stage::none;
  int error = 0;
};

struct started_child {
  pid_t pid = -1;
  int pidfd = -1;     ///< -1 when the kernel gives none
  std::string error;  ///< non-empty: no child was created
};

/// Starts the child: its own process group, stdin/stdout/stderr as planned, every other fd
/// closed, default signal dispositions, empty signal mask. Returns once the child has exec'd
/// or failed; on failure `plan.failed_stage` says where and the child must still be reaped.
started_child start_child(child_plan& plan);

}  // namespace arun::io
