#pragma once
// The final result on stdout (docs/reference/formats.md, "Run result"): a JSON object, or text
// lines for people.

#include <arun/results.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// The version of every JSON document arun prints (results, plans, validate, explain, list):
/// raised when a key changes meaning or goes away, not when one is added.
inline constexpr int json_format_version = 1;

/// `{format_version, arun_version}`: the first keys of each of those documents.
boost::json::object document_header();

/// `{total, completed, failed, skipped}`.
boost::json::object iterations_to_json(const iteration_counts& c);

/// `{provider, model, calls, input, output, cache_read, cache_write, cost_usd}` (cost_usd
/// null when unknown), and back (none when `v` is not such an object).
boost::json::object usage_to_json(const agent_usage& u);
std::optional<agent_usage> usage_from_json(const boost::json::value& v);

/// One `step_results` entry: `{step_id, status, output, error, duration, started_at, ended_at,
/// attempts, exit_code, signal, timed_out, truncated}` (null where not applicable), plus `iterations` when the step
/// is a loop (`s.iterations` set) and `children` (entries of the same shape, recursively) when
/// it ran a sub-recipe (`s.children` not empty); neither key appears on other steps.
boost::json::object step_to_json(const step_result& s);

/// An instance's duration as the text result and the progress lines say it: "1.00s", and
/// for a leaf whose jobs waited in a cluster's queue "1.00s, queued 36.2s" (docs/scale-out.md,
/// queue time).
std::string duration_text(const step_result& s);

/// The log file that holds a failed instance's stderr (else its stdout); empty when none.
using log_locator = std::function<std::string(std::string_view instance)>;

/// The instance a failure comes from, from its error's `step 'ID': ` prefix (a failed
/// iteration's `step 'ID' (item: …): ` too); empty when the error has none.
std::string failure_origin(std::string_view error);

/// The lines of a failure worth reading: from the child's stderr in `error` (after its first
/// line; its stdout when stderr was empty), the first line that looks like an error and the
/// last three, in order, with `…` for lines left out between them.
std::vector<std::string> failure_excerpt(std::string_view error);

/// The result object (docs/reference/formats.md, "Run result"): the document header, `recipe_name`,
/// `success`, `status`, `session_id`, `duration`, `started_at`, `ended_at`, `output`, `context`,
/// `step_results`, `error` (null when empty) and, only when the run stopped at a gate,
/// `waiting_approval: {step_id, step, prompt}` and `waiting_approvals` (every gate). Serialize it with
/// arun::to_compact_json so doubles never print as `1E0`. With `logs`, each failed step's
/// entry names the log of the instance its failure came from (`log`).
boost::json::object result_to_json(const run_result& r, const log_locator& logs = {});

class secret_masker;

/// The text of result_to_json (masked by `masker` when given) and a newline, handed to `write`
/// in pieces of about 64 KiB as it is made, a step result at a time: the result of a run of
/// 20,000 steps is never a whole JSON tree and its text at once. False as soon as `write` is.
bool write_result_json(const run_result& r, const log_locator& logs, const secret_masker* masker,
                       const std::function<bool(std::string_view)>& write);

/// One line for the run, then one line per step (children indented under their sub-recipe
/// step, loops with their iteration counts) and under each failure its excerpt
/// (failure_excerpt) and log; then the recipe's output, the run's error or pending gate, a
/// one-line summary of the counts, and how to resume.
std::string result_to_text(const run_result& r, const log_locator& logs = {});

}  // namespace arun::io
