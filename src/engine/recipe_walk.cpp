#include <arun/recipe.hpp>

#include <algorithm>
#include <initializer_list>

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
  // sbatch refuses --mem beside --mem-per-cpu/--mem-per-gpu, and --gpus beside --gres: the
  // inner level's way of asking replaces the outer level's other way.
  const auto name_of = [](const std::string& option) { return std::string_view(option).substr(0, option.find('=')); };
  const auto asks = [&](const std::vector<std::string>& options, std::initializer_list<std::string_view> names) {
    return std::any_of(options.begin(), options.end(), [&](const std::string& o) {
      return std::find(names.begin(), names.end(), name_of(o)) != names.end();
    });
  };
  const bool inner_memory = !inner->memory.empty() || asks(inner->extra, {"--mem-per-cpu", "--mem-per-gpu"});
  const bool inner_gpus = !inner->gpus.empty() || asks(inner->extra, {"--gres"});
  if (!merged.cpus) merged.cpus = outer->cpus;
  if (!inner_memory) merged.memory = outer->memory;
  if (!merged.time) merged.time = outer->time;
  if (merged.partition.empty()) merged.partition = outer->partition;
  if (!inner_gpus) merged.gpus = outer->gpus;
  merged.licenses.insert(outer->licenses.begin(), outer->licenses.end());  // keeps the inner counts
  // An outer option the inner level sets too (same name before '=') is left out, and so is
  // an outer way of asking for memory or GPUs the inner level asks for otherwise.
  std::vector<std::string> extra;
  for (const auto& option : outer->extra) {
    const auto name = name_of(option);
    const bool overridden = std::any_of(inner->extra.begin(), inner->extra.end(),
                                        [&](const std::string& mine) { return name_of(mine) == name; });
    const bool replaced = (inner_memory && (name == "--mem-per-cpu" || name == "--mem-per-gpu")) ||
                          (inner_gpus && name == "--gres");
    if (!overridden && !replaced) extra.push_back(option);
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
