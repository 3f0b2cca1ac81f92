#include "process/process_group_guard.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>

namespace arun::io {

process_group_guard::~process_group_guard() {
  if (leader_ <= 0) return;
  ::kill(-leader_, SIGKILL);
  // SIGKILL cannot be ignored, so this wait is short.
  while (::waitpid(leader_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace arun::io
