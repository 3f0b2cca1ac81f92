#pragma once
// Backstop: if a supervised child is still unreaped when its owner goes away (an exception,
// an io_context destroyed mid-run), SIGKILL its whole group and reap the leader. Live guards
// also form the registry of every group arun supervises, for an emergency stop.

#include <sys/types.h>

namespace arun::io {

class process_group_guard {
public:
  explicit process_group_guard(pid_t leader);
  ~process_group_guard();
  process_group_guard(const process_group_guard&) = delete;
  process_group_guard& operator=(const process_group_guard&) = delete;

  /// The leader has been reaped: nothing left to guard (its pgid may be reused now).
  void release() noexcept;

  /// Sends `sig` to every group still guarded (e.g. SIGKILL on a second Ctrl-C). Thread-safe.
  static void signal_all(int sig) noexcept;

private:
  pid_t leader_;
};

}  // namespace arun::io
