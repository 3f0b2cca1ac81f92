#include "process/vfork_child.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace arun::io {
namespace {

// The kernel's own sigaction layout (x86_64 and arm64 alike): the child calls rt_sigaction
// directly so that no sanitizer interceptor or libc wrapper runs on the borrowed memory.
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  unsigned long mask;
};

constexpr std::size_t child_stack_size = 64 * 1024;

#define ARUN_CHILD_CODE __attribute__((no_sanitize("address", "undefined"), noinline))

ARUN_CHILD_CODE long raw(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
  return ::syscall(number, a, b, c, d);
}

ARUN_CHILD_CODE [[noreturn]] void fail(child_plan& plan, child_stage stage) {
  plan.error = errno;
  plan.failed_stage = stage;
  ::syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// Puts `fd` on `target`, clearing close-on-exec (dup3 refuses equal descriptors).
ARUN_CHILD_CODE bool place(int fd, int target) {
  if (fd == target) return raw(SYS_fcntl, fd, F_SETFD, 0) == 0;
  return raw(SYS_dup3, fd, target, 0) == target;
}

ARUN_CHILD_CODE int child_main(void* arg) {
  auto& plan = *static_cast<child_plan*>(arg);
  // First of all, so that nothing the child ever starts is outside the cgroup.
  if (plan.cgroup_procs_fd >= 0 && raw(SYS_write, plan.cgroup_procs_fd, reinterpret_cast<long>("0"), 1) != 1)
    fail(plan, child_stage::cgroup);
  // Every signal back to its default: a handler of the parent must never run on this memory
  // (all signals are blocked until just before exec), and arun ignores SIGPIPE, children must not.
  kernel_sigaction dfl{};
  dfl.handler = SIG_DFL;
  for (long sig = 1; sig < _NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      raw(SYS_rt_sigaction, sig, reinterpret_cast<long>(&dfl), 0, sizeof dfl.mask);
  if (raw(SYS_setpgid, 0, 0) != 0) fail(plan, child_stage::setup);  // leads its own group
  int in = plan.stdin_fd;
  if (in < 0) in = static_cast<int>(raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDONLY | O_CLOEXEC));
  if (in < 0 || !place(in, 0) || !place(plan.stdout_fd, 1) || !place(plan.stderr_fd, 2))
    fail(plan, child_stage::setup);
  if (raw(SYS_close_range, 3, ~0U, 0) != 0) {
    // Kernels before 5.9: close one by one.
    const long limit = ::sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < limit; ++fd) raw(SYS_close, fd);
  }
  if (plan.working_dir != nullptr && raw(SYS_chdir, reinterpret_cast<long>(plan.working_dir)) != 0)
    fail(plan, child_stage::exec);
  const unsigned long none = 0;
  raw(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0, sizeof none);
  raw(SYS_execve, reinterpret_cast<long>(plan.program), reinterpret_cast<long>(plan.argv),
      reinterpret_cast<long>(plan.envp));
  fail(plan, child_stage::exec);
}

// The child's stack, with a guard page below it; unmapped when the child has exec'd.
struct child_stack {
  void* base = MAP_FAILED;
  std::size_t size = child_stack_size + static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  child_stack() {
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base != MAP_FAILED) ::mprotect(base, size - child_stack_size, PROT_NONE);
  }
  ~child_stack() {
    if (base != MAP_FAILED) ::munmap(base, size);
  }
  bool ok() const { return base != MAP_FAILED; }
  void* top() const { return static_cast<char*>(base) + size; }
};

}  // namespace

started_child start_child(child_plan& plan) {
  child_stack stack;
  if (!stack.ok()) return {-1, -1, std::string("cannot start a child: ") + std::strerror(errno)};
  // Blocked in the parent around clone, so the child starts with every signal blocked.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  int pidfd = -1;
  int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD;
  pid_t pid = ::clone(child_main, stack.top(), flags, &plan, &pidfd);
  if (pid < 0 && errno == EINVAL) {  // kernels before 5.2 have no CLONE_PIDFD
    flags &= ~CLONE_PIDFD;
    pidfd = -1;
    pid = ::clone(child_main, stack.top(), flags, &plan, nullptr);
    if (pid > 0) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  }
  const int clone_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return {-1, -1, std::string("cannot start a child: ") + std::strerror(clone_error)};
  return {pid, pidfd, {}};
}

}  // namespace arun::io
