#include <arun/recipe.hpp>

#include <algorithm>

namespace arun {
namespace {

void walk(const std::vector<step>& steps, const std::function<void(const step&, int)>& visit, int loop_depth) {
  for (const auto& s : steps) {
    visit(s, loop_depth);
    walk(s.steps, visit, loop_depth + (s.foreach || s.loop_while ? 1 : 0));
  }
}

}  // namespace

std::string_view to_string(step_type t) noexcept {
  switch (t) {
    case step_type::bash: return "bash";
    case step_type::agent: return "agent";
    case step_type::recipe: return "recipe";
    case step_type::loop: return "loop";
    case step_type::gate: return "gate";
  }
  return "bash";
}

std::shared_ptr<const step_resources> inherit_resources(const std::shared_ptr<const step_resources>& inner,
                                                        const std::shared_ptr<const step_resources>& outer) {
  if (!inner || inner == outer) return outer;
  if (!outer) return inner;
  step_resources merged = *inner;
  if (!merged.cpus) merged.cpus = outer->cpus;
  if (merged.memory.empty()) merged.memory = outer->memory;
  if (!merged.time) merged.time = outer->time;
  if (merged.partition.empty()) merged.partition = outer->partition;
  if (merged.gpus.empty()) merged.gpus = outer->gpus;
  merged.licenses.insert(outer->licenses.begin(), outer->licenses.end());  // keeps the inner counts
  // An outer option the inner level sets too (same name before '=') is left out.
  std::vector<std::string> extra;
  for (const auto& option : outer->extra) {
    const auto name = std::string_view(option).substr(0, option.find('='));
    const bool overridden = std::any_of(inner->extra.begin(), inner->extra.end(), [&](const std::string& mine) {
      return std::string_view(mine).substr(0, mine.find('=')) == name;
    });
    if (!overridden) extra.push_back(option);
  }
  extra.insert(extra.end(), inner->extra.begin(), inner->extra.end());
  merged.extra = std::move(extra);
  return std::make_shared<const step_resources>(std::move(merged));
}

void for_each_step(const recipe& r, const std::function<void(const step&, int loop_depth)>& visit) {
  walk(r.steps, visit, 0);
  for (const auto& st : r.stages) walk(st.steps, visit, 0);
}

}  // namespace arun
