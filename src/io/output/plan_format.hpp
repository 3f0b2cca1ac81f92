#pragma once
// `--dry-run` output (docs/reference/formats.md, "Dry-run plan"): the plan as text for people or as
// JSON.

#include <arun/plan.hpp>

#include <boost/json/object.hpp>

#include <string>
#include <vector>

namespace arun::io {

/// One line per step, indented by loop depth: verdict, id, type, what it runs, and why.
std::string plan_to_text(const recipe& r, const std::vector<planned_step>& plan);

/// `{format_version, arun_version, recipe_name, dry_run: true,
///   steps: [{step_id, depth, type, what, verdict, reason, stage}]}`.
boost::json::object plan_to_json(const recipe& r, const std::vector<planned_step>& plan);

}  // namespace arun::io
