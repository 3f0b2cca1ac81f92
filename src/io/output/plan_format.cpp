#include "output/plan_format.hpp"

#include "output/result_format.hpp"

#include <fmt/format.h>

namespace arun::io {

std::string plan_to_text(const recipe& r, const std::vector<planned_step>& plan) {
  std::string text = fmt::format("{}: dry run, nothing is executed ({} steps)\n", r.name, plan.size());
  std::string stage;
  for (const auto& p : plan) {
    if (p.stage != stage) {
      stage = p.stage;
      text += fmt::format("stage {}\n", stage);
    }
    text += fmt::format("  {:<19} {}{} [{}] {}", to_string(p.verdict), std::string(2 * p.depth, ' '), p.step, p.type, p.what);
    if (!p.reason.empty()) text += "  (" + p.reason + ")";
    text += "\n";
  }
  return text;
}

boost::json::object plan_to_json(const recipe& r, const std::vector<planned_step>& plan) {
  boost::json::array steps;
  for (const auto& p : plan)
    steps.push_back({{"step_id", p.step}, {"depth", p.depth}, {"type", p.type}, {"what", p.what},
                     {"verdict", to_string(p.verdict)}, {"reason", p.reason}, {"stage", p.stage}});
  auto doc = document_header();
  doc["recipe_name"] = r.name;
  doc["dry_run"] = true;
  doc["steps"] = std::move(steps);
  return doc;
}

}  // namespace arun::io
