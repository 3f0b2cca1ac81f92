#pragma once
// The final result on stdout (SPEC §13): a JSON object, or text lines for people.

#include <arun/results.hpp>

#include <boost/json/object.hpp>

#include <string>

namespace arun::io {

/// The version of every JSON document arun prints (results, plans, validate, explain, list):
/// raised when a key changes meaning or goes away, not when one is added.
inline constexpr int json_format_version = 1;

/// `{format_version, arun_version}`: the first keys of each of those documents.
boost::json::object document_header();

/// `{total, completed, failed, skipped}`.
boost::json::object iterations_to_json(const iteration_counts& c);

/// One `step_results` entry: `{step_id, status, output, error, duration, started_at, ended_at,
/// attempts, exit_code, signal, timed_out, truncated}` (null where not applicable), plus `iterations` when the step
/// is a loop (`s.iterations` set) and `children` (entries of the same shape, recursively) when
/// it ran a sub-recipe (`s.children` not empty); neither key appears on other steps.
boost::json::object step_to_json(const step_result& s);

/// The SPEC §13 result object: the document header, `recipe_name`, `success`, `status`,
/// `session_id`, `duration`, `started_at`, `ended_at`, `output`, `context`, `step_results`,
/// `error` (null when empty) and, only when the run stopped at a gate,
/// `waiting_approval: {step_id, step, prompt}` and `waiting_approvals` (every gate). Serialize it with
/// arun::to_compact_json so doubles never print as `1E0`.
boost::json::object result_to_json(const run_result& r);

/// One line for the run, then one line per step (children indented under their sub-recipe
/// step, loops with their iteration counts), then the run's error or pending gate if any.
std::string result_to_text(const run_result& r);

}  // namespace arun::io
