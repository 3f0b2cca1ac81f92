#include "process/process_group_guard.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <unordered_map>

namespace arun::io {
namespace {

// Embedders may supervise from several threads (one io_context each): guard the registry.
struct group_registry {
  std::mutex mutex;
  std::unordered_map<pid_t, int> groups;  // leader -> cgroup.kill fd or -1
};

group_registry& live_groups() {
  static group_registry r;
  return r;
}

void kill_group(pid_t leader, int cgroup_kill_fd, int sig) noexcept {
  ::kill(-leader, sig);
  if (sig == SIGKILL && cgroup_kill_fd >= 0) (void)!::pwrite(cgroup_kill_fd, "1", 1, 0);
}

}  // namespace

process_group_guard::process_group_guard(pid_t leader, int cgroup_kill_fd)
    : leader_(leader), cgroup_kill_fd_(cgroup_kill_fd) {
  auto& r = live_groups();
  std::lock_guard lock(r.mutex);
  r.groups.emplace(leader, cgroup_kill_fd);
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
  kill_group(leader_, cgroup_kill_fd_, SIGKILL);
  // SIGKILL cannot be ignored, so this wait is short.
  while (::waitpid(leader_, nullptr, 0) < 0 && errno == EINTR) {
  }
  release();
}

void process_group_guard::signal_all(int sig) noexcept {
  auto& r = live_groups();
  std::lock_guard lock(r.mutex);
  for (const auto& [leader, cgroup_kill_fd] : r.groups) kill_group(leader, cgroup_kill_fd, sig);
}

}  // namespace arun::io
