#pragma once
/// Step and run outcomes (SPEC §4, §13). Outcomes are values: an expected failure is a
/// result with a status, never an exception.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

/// What happened to one step instance (SPEC §4).
enum class step_status { completed, failed, skipped, degraded, cancelled, not_run };

/// How a whole run ended (SPEC §13 `status`).
enum class run_status { completed, failed, waiting_approval, cancelled };

std::string_view to_string(step_status s) noexcept;
std::string_view to_string(run_status s) noexcept;

/// How the iterations of a loop step ended (SPEC §13 `iterations`).
struct iteration_counts {
  std::size_t total = 0;  ///< iterations the loop had (foreach: items; while: iterations run)
  std::size_t completed = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;  ///< skipped: a condition, tags, or skip_remaining chose not to run them
  std::size_t waiting = 0;  ///< stopped at an approval gate (the run waits for approval)
  std::size_t cancelled = 0;  ///< stopped while running (the interrupt, a fatal failure): a resume runs them
  std::size_t not_run = 0;    ///< never started: the loop ended early
};

/// The outcome of one step instance.
struct step_result {
  std::string step_id;  ///< instance id (SPEC §4.1)
  step_status status = step_status::not_run;
  std::optional<int> exit_code;  ///< set when a child exited normally
  std::optional<int> signal;     ///< set when a child was ended by a signal
  bool timed_out = false;
  bool truncated = false;  ///< stored output hit the capture bound
  int attempts = 0;
  std::chrono::nanoseconds duration{};
  /// Wall-clock start and end of the instance (its pre_step hook excluded); the epoch when it
  /// never started (skipped, not run).
  std::chrono::system_clock::time_point started_at{}, ended_at{};
  boost::json::value output;  ///< null when the step stored nothing; loops: the collected list
  std::string error;          ///< empty unless failed/cancelled/degraded
  std::optional<iteration_counts> iterations;  ///< loop steps only
  std::vector<step_result> children;           ///< sub-recipe steps: the child's top-level steps
  bool fatal = false;  ///< this failure ended the run (on_error: fail)
  /// What the instance ran from (leaf instances: bash, agent, gate): its step's definition and
  /// the values its templates and condition read. A `resume --reload` reuses a recorded
  /// instance only when its key is unchanged. Empty for containers (loops, iterations with a
  /// body, sub-recipe calls).
  std::string content_key;
  /// This instance skipped the rest of its sequence (on_error: skip_remaining, or a body that
  /// did): a resume that replays it from the journal skips the rest again.
  bool skipped_rest = false;
};

/// The gate a run stopped at (SPEC §8): status `waiting_approval`.
struct pending_approval {
  std::string step;    ///< the gate's instance id
  std::string prompt;  ///< rendered
};

/// The outcome of a whole run: what `arun` prints on stdout.
struct run_result {
  std::string recipe_name;
  run_status status = run_status::completed;
  std::string session_id;
  std::chrono::nanoseconds duration{};
  std::chrono::system_clock::time_point started_at{}, ended_at{};  ///< this invocation's (a resume's own)
  boost::json::value output;  ///< the recipe's final output (SPEC §2 `output`)
  boost::json::object context;
  std::vector<step_result> step_results;  ///< one per declared top-level step, in order
  /// Why the run failed: its own reason, or the first line of the error of the step whose
  /// failure ended it; empty otherwise.
  std::string error;
  /// A `resume --reload`: the recorded instances taken as they were (their content key
  /// unchanged), and those run again because their step or inputs changed.
  std::vector<std::string> reused, changed;
  /// Every gate the run stopped at, in instance order (status waiting_approval): a fan-out
  /// can leave several, each decided on its own (`arun approve ID --step INSTANCE`).
  std::vector<pending_approval> waiting;

  bool success() const noexcept { return status == run_status::completed; }
};

}  // namespace arun
