#pragma once
// Starting a child the way glibc's posix_spawn does — CLONE_VM | CLONE_VFORK on a private
// stack, the parent suspended until the child execs — with one thing posix_spawn cannot do in
// glibc 2.36: start the child inside a given cgroup, so that everything it will ever start is
// in that cgroup from its first instruction.
//
// The child is created in the cgroup by clone3(CLONE_INTO_CGROUP) (Linux 5.7), through a
// small assembly trampoline on x86-64 (a CLONE_VM child on a new stack cannot return through
// a C library wrapper). Where clone3 is missing or refused (other architectures, seccomp
// filters that return ENOSYS), the child moves itself by writing to cgroup.procs before exec.
// That is correct but slow: a move takes the kernel's global cgroup_threadgroup_rwsem for
// writing, measured at 450 µs on average and up to 15 ms per spawn, where CLONE_INTO_CGROUP
// costs tens of microseconds. A plain fork-style clone3 would avoid the trampoline but copies
// the page tables: 15 ms per spawn at 500 MiB RSS.

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
  int cgroup_dir_fd = -1;    ///< the cgroup to start in (O_PATH directory); -1: the parent's
  int cgroup_procs_fd = -1;  ///< set by start_child for the fallback: the child writes to it
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
