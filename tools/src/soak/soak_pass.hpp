#pragma once
// One soak pass: a seeded mix of children pushed through the supervisor under one step
// containment mode, and what was left behind.

#include "soak_report.hpp"

#include "process/step_containment.hpp"

#include <map>
#include <string>
#include <vector>

namespace arun::soak {

struct settings {
  std::size_t count = 2000;
  std::size_t concurrency = 32;
  int timeout_ms = 100;
  int grace_ms = 200;
  std::size_t flood_bytes = 4u << 20;
  unsigned seed = 1;
  /// How far past timeout + grace a stopped child may end before it counts as stretched:
  /// the supervisor's own latency under load (more under the sanitizers).
  int stretch_slack_ms = 1000;
};

struct pass_report {
  std::string mode;         ///< the containment in use (may differ from the one asked for)
  std::string unavailable;  ///< why the mode asked for was not available (the pass then did not run)
  double wall_s = 0, cpu_user_s = 0, cpu_sys_s = 0;
  std::map<std::string, std::size_t> per_kind, unexpected;
  std::map<std::string, std::size_t> survivors;  ///< live processes left per kind after the pass
  std::map<std::string, std::size_t> stretched;  ///< steps that outlasted their timeout + grace + slack
  std::size_t timed_out = 0, killed_hard = 0, launch_failures = 0, abandoned = 0, group_survivors = 0;
  percentiles term_latency, kill_latency;
  std::vector<std::string> left_in_groups;  ///< "pid comm" still running in a group the pass created
  int zombies = 0, fds_before = 0, fds_after = 0;
  bool ok = false;
};

/// The child kinds' names that escape their process group on purpose.
bool is_escape_kind(const std::string& kind);

/// Runs one pass under `request`; a pass whose mode is unavailable reports why and does not run.
pass_report run_pass(const settings& s, io::containment_request request);

}  // namespace arun::soak
