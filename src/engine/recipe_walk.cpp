#include <arun/recipe.hpp>

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

void for_each_step(const recipe& r, const std::function<void(const step&, int loop_depth)>& visit) {
  walk(r.steps, visit, 0);
  for (const auto& st : r.stages) walk(st.steps, visit, 0);
}

}  // namespace arun
