#include "process_checks.hpp"

#include "process/process_table.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

namespace arun::test {
namespace {

void reap_zombies() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<pid_t> live_descendants() {
  std::vector<pid_t> pids;
  for (const auto& e : io::running_descendants(::getpid())) pids.push_back(e.pid);
  return pids;
}

std::vector<std::string> leftover_processes(std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    reap_zombies();
    const auto left = io::running_descendants(::getpid());
    if (left.empty()) return {};
    if (std::chrono::steady_clock::now() >= until) {
      std::vector<std::string> described;
      for (const auto& e : left) {
        described.push_back(std::to_string(e.pid) + " " + e.comm);
        ::kill(e.pid, SIGKILL);
      }
      reap_zombies();
      return described;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool process_alive(pid_t pid) {
  for (const auto& e : io::read_process_table())
    if (e.pid == pid) return e.running();
  return false;
}

}  // namespace arun::test
