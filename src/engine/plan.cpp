#include <arun/plan.hpp>

#include "dag_order.hpp"
#include "output_value.hpp"
#include "policy/tag_filter.hpp"
#include "scheduler/foreach_lines.hpp"
#include "scheduler/step_executor.hpp"
#include "step_preparation.hpp"
#include "scheduler/foreach_lines.hpp"
#include "template/render.hpp"
#include "template/reference.hpp"

#include <arun/validation.hpp>

#include <cctype>
#include <optional>

namespace arun {
namespace {

// Whether `text` reads a declared name that has no value yet (an output of a step).
std::string unset_name(const std::string& text, const engine::render_scope& scope) {
  for (const auto& span : engine::find_references(text))
    if (!engine::find_root(scope, span.ref.root)) return span.ref.root;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '\'' || text[i] == '"') {  // skip string literals
      const char quote = text[i++];
      while (i < text.size() && text[i] != quote) i += text[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
      ++i;
      continue;
    }
    const auto start = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    const auto word = text.substr(start, i - start);
    if (scope.declared && scope.declared->contains(word) && !engine::find_root(scope, word)) return word;
  }
  return {};
}

using engine::first_line;

std::string describe(const step& s) {
  if (s.foreach) {
    const auto& items = s.foreach->items;
    if (items.is_string()) return "foreach " + std::string(items.get_string());
    if (const auto* text = engine::lines_text(items)) return "foreach line of " + std::string(*text);
    return "foreach " + std::to_string(items.is_array() ? items.as_array().size() : 0) + " items";
  }
  if (s.loop_while) return "while " + s.loop_while->condition;
  switch (s.type) {
    case step_type::bash: return first_line(s.command);
    case step_type::agent: return (s.agent.agent.empty() ? "agent" : s.agent.agent) + ": " + first_line(s.agent.prompt);
    case step_type::recipe: return "recipe " + s.call.recipe;
    case step_type::gate: return "approval: " + first_line(s.approval.prompt);
    case step_type::loop: break;
  }
  return {};
}

struct planner {
  const run_options& options;
  engine::render_scope scope;
  std::vector<planned_step> out;
  std::string stage;

  // A foreach's item count when the plan can know it: a literal list, or a template that
  // reads only values the run starts with (`{{files}}` of the context or --set).
  std::optional<std::size_t> known_items(const step& s) const {
    if (!s.foreach) return std::nullopt;
    const auto& items = s.foreach->items;
    if (items.is_array()) return std::nullopt;  // describe() counts it already
    const auto* text = items.is_string() ? &items.get_string() : engine::lines_text(items);
    if (!text || !unset_name(std::string(*text), scope).empty()) return std::nullopt;
    const auto rendered = engine::render_value(items, scope);
    if (!rendered.ok()) return std::nullopt;
    const auto found = engine::foreach_items(items, rendered.value);
    if (const auto* list = std::get_if<boost::json::array>(&found)) return list->size();
    return std::nullopt;
  }
  static std::string fmt_items(std::size_t n) { return " (" + std::to_string(n) + (n == 1 ? " item)" : " items)"); }

  void add(const step& s, const std::string& path, int depth, bool inside_loop) {
    planned_step p;
    p.step = path;
    p.depth = depth;
    p.type = std::string(engine::type_name(s));
    p.what = describe(s);
    if (const auto n = known_items(s); n) p.what += fmt_items(*n);
    p.stage = stage;
    if (!engine::tags_allow(s.when_tags, options.include_tags, options.exclude_tags)) {
      p.verdict = plan_verdict::skipped;
      p.reason = "tag filter";
    } else if (!s.condition.empty()) {
      // Loop variables and body outputs only exist while the loop runs.
      const auto unset = inside_loop ? std::string("the loop's values") : unset_name(s.condition, scope);
      if (!unset.empty()) {
        p.verdict = plan_verdict::at_run_time;
        p.reason = "condition reads " + unset + ": " + s.condition;
      } else {
        const auto verdict = engine::check_condition(s, scope);
        p.verdict = !verdict.error.empty() ? plan_verdict::error : verdict.run ? plan_verdict::runs : plan_verdict::skipped;
        p.reason = !verdict.error.empty() ? verdict.error : "condition " + s.condition;
      }
    }
    out.push_back(std::move(p));
    for (const auto& child : s.steps) add(child, path + "/" + child.id, depth + 1, true);
  }
};

}  // namespace

std::string_view to_string(plan_verdict v) noexcept {
  switch (v) {
    case plan_verdict::runs: return "runs";
    case plan_verdict::skipped: return "skipped";
    case plan_verdict::at_run_time: return "decided at run time";
    case plan_verdict::error: return "error";
  }
  return "runs";
}

std::vector<planned_step> plan_run(const recipe& r, const run_options& options) {
  const auto declared = declared_names(r);
  boost::json::object builtins;
  builtins["recipe"] = {{"name", r.name}, {"version", r.version}, {"description", r.description}};
  builtins["session"] = {{"id", options.session_id}, {"working_dir", options.working_dir}};
  const auto mode = options.templates == template_mode::strict ? engine::undefined_mode::strict : engine::undefined_mode::lenient;
  planner p{options, engine::render_scope{r.context, &declared, mode, &builtins, nullptr}, {}, {}};
  for (const auto& s : r.steps) p.add(s, s.id, 0, false);
  for (const auto& st : r.stages) {
    p.stage = st.name;
    const auto first = p.out.size();
    for (const auto& s : st.steps) p.add(s, s.id, 0, false);
    if (st.condition.empty()) continue;
    // A stage condition decides for all of the stage's steps.
    planned_step verdict;
    if (const auto unset = unset_name(st.condition, p.scope); !unset.empty()) {
      verdict.verdict = plan_verdict::at_run_time;
      verdict.reason = "stage condition reads " + unset + ": " + st.condition;
    } else {
      const auto v = engine::check_expression(st.condition, "stage condition", p.scope);
      if (v.run) continue;
      verdict.verdict = v.error.empty() ? plan_verdict::skipped : plan_verdict::error;
      verdict.reason = v.error.empty() ? "stage condition " + st.condition : v.error;
    }
    for (auto i = first; i < p.out.size(); ++i)
      if (p.out[i].verdict == plan_verdict::runs || verdict.verdict != plan_verdict::at_run_time) {
        p.out[i].verdict = verdict.verdict;
        p.out[i].reason = verdict.reason;
      }
  }
  return std::move(p.out);
}

bool stage_gate_runs_after(const stage& st, const recipe& r) { return engine::stage_gate_after(st, r); }

std::vector<std::vector<std::size_t>> dag_waits_for(const std::vector<step>& steps) {
  return engine::dag_dependencies(steps);
}

}  // namespace arun
