#include "run_output.hpp"

#include "json_text.hpp"
#include "plan_format.hpp"
#include "result_format.hpp"

#include <arun/value_format.hpp>

#include <cstdio>

namespace arun::cli {

void print_result(const run_result& result, const std::string& format) {
  if (format == "json")
    std::fputs((io::to_json_text(io::result_to_json(result)) + "\n").c_str(), stdout);
  else
    std::fputs(io::result_to_text(result).c_str(), stdout);
  std::fflush(stdout);
}

void print_plan(const std::vector<planned_step>& plan, const recipe& r, const std::string& format) {
  if (format == "json")
    std::fputs((io::to_json_text(io::plan_to_json(r, plan)) + "\n").c_str(), stdout);
  else
    std::fputs(io::plan_to_text(r, plan).c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace arun::cli
