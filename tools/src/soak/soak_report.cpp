#include "soak_report.hpp"

#include "process/process_table.hpp"

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace arun::soak {
namespace {

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

std::vector<std::string> survivors_in_groups(const std::set<pid_t>& groups, const std::function<bool(pid_t)>& excused) {
  std::vector<std::string> found;
  for (const auto& p : io::read_process_table())
    if (p.running() && groups.contains(p.pgrp) && !excused(p.pid)) found.push_back(fmt::format("{} {}", p.pid, p.comm));
  return found;
}

std::vector<std::string> live_descendants() {
  std::vector<std::string> found;
  for (const auto& p : io::running_descendants(::getpid())) found.push_back(fmt::format("{} {}", p.pid, p.comm));
  return found;
}

int reap_zombies() {
  int n = 0;
  while (::waitpid(-1, nullptr, WNOHANG) > 0) ++n;
  return n;
}

}  // namespace arun::soak
