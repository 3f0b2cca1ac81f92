#include "process/process_group_guard.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <mutex>
#include <unordered_set>

namespace arun::io {
namespace {

// Embedders may supervise from several threads (one io_context each): guard the registry.
struct registry {
  std::mutex mutex;
  std::unordered_set<pid_t> groups;
};

registry& live_groups() {
  static registry r;
  return r;
}

}  // namespace

process_group_guard::process_group_guard(pid_t leader) : leader_(leader) {
  auto& r = live_groups();
  std::lock_guard lock(r.mutex);
  r.groups.insert(leader);
}

void process_group_guard::release() noexcept {
  if (leader_ <= 0) return;
  auto& r = live_groups();
  std::lock_guard lock(r.mutex);
  r.groups.erase(leader_);
  leader_ = -1;
}

process_group_guard::~process_group_guard() {
  if (leader_ <= 0) return;
  ::kill(-leader_, SIGKILL);
  // SIGKILL cannot be ignored, so this wait is short.
  while (::waitpid(leader_, nullptr, 0) < 0 && errno == EINTR) {
  }
  release();
}

void process_group_guard::signal_all(int sig) noexcept {
  auto& r = live_groups();
  std::lock_guard lock(r.mutex);
  for (pid_t g : r.groups) ::kill(-g, sig);
}

}  // namespace arun::io
