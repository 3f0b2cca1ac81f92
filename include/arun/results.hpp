#pragma once
/// Step and run outcomes (SPEC §4, §13). Outcomes are values: an expected failure is a
/// result with a status, never an exception.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
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
  boost::json::value output;  ///< null when the step stored nothing
  std::string error;          ///< empty unless failed/cancelled
};

/// The outcome of a whole run: what `arun` prints on stdout.
struct run_result {
  std::string recipe_name;
  run_status status = run_status::completed;
  std::string session_id;
  std::chrono::nanoseconds duration{};
  boost::json::value output;  ///< the recipe's final output (SPEC §2 `output`)
  boost::json::object context;
  std::vector<step_result> step_results;  ///< one per declared top-level step, in order

  bool success() const noexcept { return status == run_status::completed; }
};

}  // namespace arun
