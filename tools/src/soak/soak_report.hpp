#pragma once
// Statistics and the /proc checks of the soak run.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace arun::soak {

/// p50/p90/p99/max of a sample, in milliseconds.
struct percentiles {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
percentiles summarize(std::vector<double> samples_ms);
std::string format(const percentiles& p);

/// Processes still running whose process group is one of `groups` ("pid comm" each), except
/// those `excused`.
std::vector<std::string> survivors_in_groups(const std::set<pid_t>& groups, const std::function<bool(pid_t)>& excused);

/// Live descendants of this process (it is a subreaper, so orphans count too).
std::vector<std::string> live_descendants();

/// Reaps every zombie child; returns how many.
int reap_zombies();

}  // namespace arun::soak
