#pragma once
// Backstop: if a supervised child is still unreaped when its owner goes away (an exception,
// an io_context destroyed mid-run), SIGKILL its whole group and reap the leader. Live guards
// also form the registry of every group arun supervises, for an emergency stop. With cgroup
// containment the step's cgroup is killed as well (which reaches processes that left the group).

#include <sys/types.h>

namespace arun::io {

class process_group_guard {
public:
  /// `cgroup_kill_fd`: the step's open cgroup.kill (cgroup containment), -1 when none.
  explicit process_group_guard(pid_t leader, int cgroup_kill_fd = -1);
  ~process_group_guard();
  process_group_guard(const process_group_guard&) = delete;
  process_group_guard& operator=(const process_group_guard&) = delete;

  /// The leader has been reaped: nothing left to guard (its pgid may be reused now).
  void release() noexcept;

  /// Sends `sig` to every group still guarded (e.g. SIGKILL on a second Ctrl-C); SIGKILL also
  /// ends their cgroups. Thread-safe.
  static void signal_all(int sig) noexcept;

private:
  pid_t leader_;
  int cgroup_kill_fd_;
};

}  // namespace arun::io
