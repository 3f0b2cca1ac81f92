#include "process_checks.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace arun::test {
namespace {

struct proc_info {
  pid_t ppid = 0;
  char state = '?';
  std::string comm;
};

std::map<pid_t, proc_info> scan_proc() {
  std::map<pid_t, proc_info> all;
  DIR* d = ::opendir("/proc");
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    // comm may contain spaces and parentheses: fields follow the last ')'.
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    proc_info info;
    info.comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest(text.substr(close + 2));
    rest >> info.state >> info.ppid;
    all[pid] = info;
  }
  ::closedir(d);
  return all;
}

void reap_zombies() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<pid_t> live_descendants() {
  const auto all = scan_proc();
  std::vector<pid_t> found;
  for (const auto& [pid, info] : all) {
    if (info.state == 'Z') continue;
    for (pid_t p = info.ppid; p > 1;) {
      if (p == ::getpid()) {
        found.push_back(pid);
        break;
      }
      auto it = all.find(p);
      if (it == all.end()) break;
      p = it->second.ppid;
    }
  }
  return found;
}

std::vector<std::string> leftover_processes(std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    reap_zombies();
    auto pids = live_descendants();
    if (pids.empty()) return {};
    if (std::chrono::steady_clock::now() >= until) {
      const auto all = scan_proc();
      std::vector<std::string> described;
      for (pid_t p : pids) {
        auto it = all.find(p);
        described.push_back(std::to_string(p) + " " + (it != all.end() ? it->second.comm : "?"));
        ::kill(p, SIGKILL);
      }
      reap_zombies();
      return described;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int open_fd_count() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;  // the directory stream's own fd
}

bool process_alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

}  // namespace arun::test
