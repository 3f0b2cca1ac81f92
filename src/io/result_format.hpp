#pragma once
// The final result on stdout (SPEC §13): a JSON object, or text lines for people.

#include <arun/results.hpp>

#include <boost/json/object.hpp>

#include <string>

namespace arun::io {

/// `{total, completed, failed, skipped}`.
boost::json::object iterations_to_json(const iteration_counts& c);

/// One `step_results` entry: `{step_id, status, output, error, duration, attempts, exit_code,
/// signal, timed_out, truncated}` (null where not applicable), plus `iterations` when the step
/// is a loop (`s.iterations` set) and `children` (entries of the same shape, recursively) when
/// it ran a sub-recipe (`s.children` not empty); neither key appears on other steps.
boost::json::object step_to_json(const step_result& s);

/// The SPEC §13 result object: `recipe_name`, `success`, `status`, `session_id`, `duration`,
/// `output`, `context`, `step_results`, `error` (null when empty) and, only when the run
/// stopped at a gate, `waiting_approval: {step, prompt}`. Serialize it with
/// arun::to_compact_json so doubles never print as `1E0`.
boost::json::object result_to_json(const run_result& r);

/// One line for the run, then one line per step (children indented under their sub-recipe
/// step, loops with their iteration counts), then the run's error or pending gate if any.
std::string result_to_text(const run_result& r);

}  // namespace arun::io
