#pragma once
// What holds a step's processes so that none outlives the step (docs/supervisor.md,
// "Containment"). A process group alone is escaped by setsid, setpgid or a double fork, so
// the supervisor uses the strongest mode the process can have:
//   cgroup        each step in its own cgroup v2, ended with cgroup.kill: nothing escapes
//                 (short of a privileged process moving itself out);
//   subreaper     arun is the child subreaper, so every escaped process re-parents to it when
//                 its step's processes die; it is killed when its step ends (found by the
//                 ARUN_SUPERVISED_BY variable it inherited) or, if it cleared its environment,
//                 once every step running when it started has ended;
//   process_group the step's process group only (what embedders get unless they opt in).
// The choice is process-wide, made once by the composition root (the CLI, the soak tool).

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

enum class containment_mode { process_group, subreaper, cgroup };
enum class containment_request { automatic, cgroup, subreaper, process_group };

std::string_view containment_mode_name(containment_mode mode);

/// "auto", "cgroup", "subreaper" or "group" (the ARUN_CONTAINMENT values); nullopt otherwise.
std::optional<containment_request> parse_containment_request(std::string_view text);

struct containment_state {
  containment_mode mode = containment_mode::process_group;
  std::string cgroup_dir;       ///< cgroup mode: the directory holding the step cgroups
  std::string fallback_reason;  ///< why a stronger mode asked for (or automatic) is not in use
};

/// The cgroup v2 directory this process is in (under the cgroup2 mount), or nullopt with the
/// reason in `why`.
std::optional<std::string> current_cgroup_dir(std::string& why);

/// Chooses the containment for every step started from now on (any earlier choice is ended
/// first, see end_step_containment). It is set up when first used, so a command that starts
/// nothing creates nothing. `cgroup` and `automatic` fall back to `subreaper` when no cgroup
/// can be created (`cgroup` says so on stderr).
void enable_step_containment(containment_request request);

/// The containment in use (set up now if it was not yet): which mode, and why not a stronger one.
containment_state step_containment();

/// Kills whatever the containment still holds (processes that escaped a step, step cgroups)
/// and removes arun's cgroup directory. Called when the process is done supervising.
void end_step_containment() noexcept;

/// The open files of one step cgroup.
struct cgroup_files {
  std::string dir;
  int dir_fd = -1;  ///< O_PATH: for clone3's CLONE_INTO_CGROUP
  int kill_fd = -1;
  int events_fd = -1;
  void close() noexcept;
};

/// A step's own cgroup (cgroup mode). The child starts in it; `kill` ends every process in it
/// at once. The destructor kills what is left. A cgroup that was never killed and is empty goes
/// back to a pool for the next step (creating and removing one costs about 90 µs, a tenth of a
/// `true` step); any other is removed, since the kernel (6.18) SIGKILLs every child later
/// started by CLONE_INTO_CGROUP into a cgroup that has been through cgroup.kill.
class step_cgroup {
public:
  explicit step_cgroup(cgroup_files files);
  ~step_cgroup();
  step_cgroup(const step_cgroup&) = delete;
  step_cgroup& operator=(const step_cgroup&) = delete;

  int dir_fd() const noexcept { return files_.dir_fd; }
  void kill() noexcept;
  /// Whether any process is still alive in it (zombies do not count).
  bool populated() const noexcept;

private:
  cgroup_files files_;
  std::atomic<bool> killed_{false};
};

/// SIGKILLs every process in every live step cgroup (the emergency stop). Thread-safe.
void kill_all_step_cgroups() noexcept;

/// A step cgroup in cgroup mode; nullptr in the other modes, or when none can be created (a
/// limit such as cgroup.max.descendants: warned about once, the step then runs in its process
/// group only).
std::unique_ptr<step_cgroup> make_step_cgroup();

/// A step supervised in subreaper mode: the variable its processes inherit, and the record
/// that its escaped processes belong to a running step.
class subreaper_step {
public:
  subreaper_step();
  ~subreaper_step();
  subreaper_step(const subreaper_step&) = delete;
  subreaper_step& operator=(const subreaper_step&) = delete;

  /// "ARUN_SUPERVISED_BY=<arun pid>.<step number>", for the child's environment.
  const std::string& environment_entry() const noexcept { return env_entry_; }
  /// The child was started (or not: pid -1); call under launch_lock().
  void started(pid_t leader);
  /// The step is over: from now on its escaped processes are killed by sweeps.
  void finish();

private:
  std::uint64_t number_;
  std::string env_entry_;
  bool running_ = false;
};

/// Held while a child is launched and registered, so that a sweep never mistakes a leader
/// being started (by another thread) for an escaped process.
std::unique_lock<std::mutex> launch_lock();

/// Subreaper mode: SIGKILLs every child of arun that escaped a step which is no longer
/// running, and reaps the ones that have exited. Returns how many were still alive (killed
/// now): sweep again until none is left, as their own children re-parent to arun in turn.
std::size_t sweep_escaped_processes();

}  // namespace arun::io
