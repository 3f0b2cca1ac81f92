#include "process/vfork_child.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
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

#if defined(__x86_64__)
// long arun_clone3_run(clone_args* args, size_t size, int (*fn)(void*), void* arg):
// clone3, then in the child (on the new stack) fn(arg) and exit; the parent gets clone3's
// result. rcx and r11 do not survive a syscall, so fn and arg wait in r8 and r9.
asm(R"(
  .text
  .globl arun_clone3_run
  .hidden arun_clone3_run
  .type arun_clone3_run, @function
arun_clone3_run:
  .cfi_startproc
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  .cfi_undefined rip
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov %eax, %edi
  mov $60, %eax
  syscall
  hlt
  .cfi_endproc
  .size arun_clone3_run, .-arun_clone3_run
)");
extern "C" long arun_clone3_run(clone_args* args, std::size_t size, int (*fn)(void*), void* arg);
constexpr bool have_clone3_trampoline = true;
#else
constexpr bool have_clone3_trampoline = false;
#endif

#define ARUN_CHILD_CODE __attribute__((no_sanitize("address", "undefined"), noinline))

ARUN_CHILD_CODE long raw(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
  return ::syscall(number, a, b, c, d);
}

[[noreturn]] ARUN_CHILD_CODE void fail(child_plan& plan, child_stage stage) {
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
  // Without CLONE_INTO_CGROUP, first of all: nothing the child starts may be outside the cgroup.
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
  // A Ctrl-C typed between the clone and the setpgid reached this child too, as a member of
  // arun's foreground group; blocked, it would kill the step right after exec, and arun would
  // see a step "killed by SIGINT" before its own handler stopped the run. The keyboard's
  // signals are arun's to handle: ignoring a pending signal discards it (POSIX), then the
  // default comes back for the program.
  kernel_sigaction ign{};
  ign.handler = SIG_IGN;
  for (const long sig : {SIGINT, SIGQUIT, SIGTSTP}) {
    raw(SYS_rt_sigaction, sig, reinterpret_cast<long>(&ign), 0, sizeof ign.mask);
    raw(SYS_rt_sigaction, sig, reinterpret_cast<long>(&dfl), 0, sizeof dfl.mask);
  }
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

// The children's stack, with a guard page below it. One per thread that starts children,
// mapped once and reused: with CLONE_VFORK the parent is suspended until the child has exec'd
// or exited, so the stack is free again when clone returns. (Mapping and unmapping one per
// child cost a few percent of a fan-out's CPU; each unmap also shot down the TLBs of arun's
// other threads.)
struct child_stack {
  void* base = MAP_FAILED;
  std::size_t size = child_stack_size + static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  ~child_stack() {
    if (base != MAP_FAILED) ::munmap(base, size);
  }
  /// Maps the stack if it is not yet (again after a failure); false when it cannot be.
  bool ready() {
    if (base != MAP_FAILED) return true;
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base != MAP_FAILED) ::mprotect(base, size - child_stack_size, PROT_NONE);
    return base != MAP_FAILED;
  }
  void* top() const { return static_cast<char*>(base) + size; }
  void* bottom() const { return static_cast<char*>(base) + (size - child_stack_size); }
};

// Whether clone3 with CLONE_INTO_CGROUP is worth trying: it is not after ENOSYS (old kernel,
// seccomp) or EINVAL/E2BIG (a kernel without CLONE_INTO_CGROUP).
std::atomic<bool> clone3_usable{have_clone3_trampoline};

// clone3 into the plan's cgroup; -1 with errno when it failed.
pid_t clone_into_cgroup(child_plan& plan, child_stack& stack, int& pidfd) {
#if defined(__x86_64__)
  clone_args args{};
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_INTO_CGROUP;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<std::uint64_t>(stack.bottom());
  args.stack_size = child_stack_size;
  args.cgroup = static_cast<std::uint64_t>(plan.cgroup_dir_fd);
  const long r = arun_clone3_run(&args, sizeof args, child_main, &plan);
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  return static_cast<pid_t>(r);
#else
  (void)plan, (void)stack, (void)pidfd;
  errno = ENOSYS;
  return -1;
#endif
}


// glibc's clone, on the plan's stack; kernels before 5.2 have no CLONE_PIDFD: then pidfd_open.
pid_t clone_in_place(child_plan& plan, child_stack& stack, int& pidfd) {
  const int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
  pid_t pid = ::clone(child_main, stack.top(), flags | CLONE_PIDFD, &plan, &pidfd);
  if (pid < 0 && errno == EINVAL) {
    pidfd = -1;
    pid = ::clone(child_main, stack.top(), flags, &plan, nullptr);
    if (pid > 0) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  }
  return pid;
}

}  // namespace

started_child start_child(child_plan& plan) {
  thread_local child_stack stack;
  if (!stack.ready()) return {-1, -1, std::string("cannot start a child: ") + std::strerror(errno)};
  // Blocked in the parent around clone, so the child starts with every signal blocked.
  sigset_t all, previous;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  int pidfd = -1;
  pid_t pid = -1;
  const char* failing = "cannot start a child: ";
  plan.cgroup_procs_fd = -1;
  if (plan.cgroup_dir_fd >= 0 && clone3_usable.load(std::memory_order_relaxed)) {
    pid = clone_into_cgroup(plan, stack, pidfd);
    if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
      clone3_usable = false;
    } else if (pid < 0) {
      failing = "cannot start a child in the step's cgroup: ";
    }
  }
  if (pid < 0 && (plan.cgroup_dir_fd < 0 || !clone3_usable)) {
    if (plan.cgroup_dir_fd >= 0)
      plan.cgroup_procs_fd = ::openat(plan.cgroup_dir_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (plan.cgroup_dir_fd < 0 || plan.cgroup_procs_fd >= 0) pid = clone_in_place(plan, stack, pidfd);
    const int saved = errno;
    if (plan.cgroup_procs_fd >= 0) ::close(plan.cgroup_procs_fd);
    errno = saved;
  }
  const int clone_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return {-1, -1, failing + std::string(std::strerror(clone_error))};
  return {pid, pidfd, {}};
}

}  // namespace arun::io
