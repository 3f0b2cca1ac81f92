#pragma once
// What `run` prints on stdout (SPEC §13): only the final result, or the dry-run plan.

#include <arun/plan.hpp>
#include <arun/results.hpp>

#include <string>
#include <vector>

namespace arun::cli {

void print_result(const run_result& result, const std::string& format);
void print_plan(const std::vector<planned_step>& plan, const recipe& r, const std::string& format);

}  // namespace arun::cli
