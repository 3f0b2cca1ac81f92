#include "soak_report.hpp"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace arun::soak {
namespace {

struct proc_entry {
  pid_t ppid = 0, pgrp = 0;
  char state = '?';
  std::string comm;
};

std::map<pid_t, proc_entry> scan() {
  std::map<pid_t, proc_entry> all;
  DIR* d = ::opendir("/proc");
  if (!d) return all;
  while (dirent* e = ::readdir(d)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    proc_entry p;
    p.comm = text.substr(open + 1, close - open - 1);
    std::istringstream rest(text.substr(close + 2));
    rest >> p.state >> p.ppid >> p.pgrp;
    all[pid] = p;
  }
  ::closedir(d);
  return all;
}

double at(const std::vector<double>& sorted, double q) {
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

percentiles summarize(std::vector<double> samples) {
  percentiles p;
  p.count = samples.size();
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.p50 = at(samples, 0.50);
  p.p90 = at(samples, 0.90);
  p.p99 = at(samples, 0.99);
  p.max = samples.back();
  return p;
}

std::string format(const percentiles& p) {
  if (p.count == 0) return "no samples";
  return fmt::format("n={} p50={:.2f} ms p90={:.2f} ms p99={:.2f} ms max={:.2f} ms", p.count, p.p50, p.p90,
                     p.p99, p.max);
}

std::vector<std::string> survivors_in_groups(const std::set<pid_t>& groups) {
  std::vector<std::string> found;
  for (const auto& [pid, p] : scan())
    if (p.state != 'Z' && groups.contains(p.pgrp)) found.push_back(fmt::format("{} {}", pid, p.comm));
  return found;
}

std::vector<std::string> live_descendants() {
  const auto all = scan();
  std::vector<std::string> found;
  for (const auto& [pid, p] : all) {
    if (p.state == 'Z') continue;
    for (pid_t up = p.ppid; up > 1;) {
      if (up == ::getpid()) {
        found.push_back(fmt::format("{} {}", pid, p.comm));
        break;
      }
      auto it = all.find(up);
      if (it == all.end()) break;
      up = it->second.ppid;
    }
  }
  return found;
}

int reap_zombies() {
  int n = 0;
  while (::waitpid(-1, nullptr, WNOHANG) > 0) ++n;
  return n;
}

int open_fd_count() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - 1;
}

}  // namespace arun::soak
