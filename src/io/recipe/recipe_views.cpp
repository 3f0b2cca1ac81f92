#include "recipe/recipe_views.hpp"

#include "files/text_lines.hpp"

#include <arun/plan.hpp>

#include <arun/value_format.hpp>

#include <fmt/format.h>

#include <functional>
#include <map>

namespace arun::io {
namespace {

std::string_view type_name(const step& s) {
  switch (s.type) {
    case step_type::bash: return "bash";
    case step_type::agent: return "agent";
    case step_type::recipe: return "recipe";
    case step_type::loop: return "loop";
    case step_type::gate: return "approval gate";
  }
  return "?";
}

// Seconds for people: 600 -> "600s", 2.5 -> "2.5s".
std::string seconds_text(double s) { return fmt::format("{:g}s", s); }

std::string retry_text(const retry_policy& r) {
  const char* kind = r.backoff == backoff_kind::linear ? "linear" : r.backoff == backoff_kind::constant ? "constant" : "exponential";
  return fmt::format("{} attempts, {} backoff {}..{}{}", r.max_attempts, kind, seconds_text(r.initial_delay),
                     seconds_text(r.max_delay), r.jitter > 0 ? fmt::format(", jitter {:g}", r.jitter) : "");
}

void explain_steps(const std::vector<step>& steps, int depth, std::string& out) {
  const std::string pad(static_cast<std::size_t>(depth) * 4 + 2, ' ');
  int n = 0;
  for (const auto& s : steps) {
    out += fmt::format("{}{}. {} [{}]{}\n", pad, ++n, s.id, type_name(s), s.name.empty() ? "" : " " + s.name);
    const std::string more = pad + "     ";
    if (!s.description.empty()) out += more + one_line(s.description) + "\n";
    if (!s.condition.empty()) out += more + "only when: " + one_line(s.condition) + "\n";
    if (s.type == step_type::bash) out += more + "command: " + one_line(s.command) + "\n";
    if (s.type == step_type::agent)
      out += more + "agent: " + (s.agent.agent.empty() ? "(default)" : s.agent.agent) +
             (s.agent.mode.empty() ? "" : ", mode " + s.agent.mode) + "; prompt: " + one_line(s.agent.prompt, 56) + "\n";
    if (s.type == step_type::recipe) out += more + "calls recipe: " + s.call.recipe + "\n";
    if (s.approval.required) out += more + "needs approval" + (s.approval.prompt.empty() ? "" : ": " + one_line(s.approval.prompt)) + "\n";
    if (s.foreach)
      out += more + fmt::format("for each {} in {}, {} at a time{}\n", s.foreach->as, to_compact_json(s.foreach->items),
                                s.foreach->max_concurrent == 0 ? std::string("all") : std::to_string(s.foreach->max_concurrent),
                                s.foreach->collect ? ", collected into " + *s.foreach->collect : "");
    if (s.loop_while) out += more + "while: " + one_line(s.loop_while->condition) + "\n";
    if (s.parallel_group) out += more + "parallel group: " + *s.parallel_group + "\n";
    if (!s.depends_on.empty()) {
      std::string deps;
      for (const auto& d : s.depends_on) deps += (deps.empty() ? "" : ", ") + d;
      out += more + "after: " + deps + "\n";
    }
    if (s.output) out += more + "output -> " + *s.output + "\n";
    if (s.timeout) out += more + "timeout: " + seconds_text(s.timeout->count()) + "\n";
    if (s.retry) out += more + "retry: " + retry_text(*s.retry) + "\n";
    if (s.output_schema) {
      // The schema's required fields and types are what a reader checks a reply against.
      out += more + "output schema (" + s.output_schema->origin() + "): " +
             one_line(to_compact_json(s.output_schema->document()), 96) +
             (s.type == step_type::agent ? fmt::format("; asked again up to {} times", s.schema_retries) : "") + "\n";
    }
    if (!s.limit_group.empty()) out += more + "limit group: " + s.limit_group + "\n";
    if (s.on_error != on_error_policy::fail)
      out += more + "on error: " + (s.on_error == on_error_policy::continue_run ? "continue" : "skip remaining") + "\n";
    if (!s.when_tags.empty()) {
      std::string tags;
      for (const auto& t : s.when_tags) tags += (tags.empty() ? "" : ", ") + t;
      out += more + "tags: " + tags + "\n";
    }
    explain_steps(s.steps, depth + 1, out);
  }
}

}  // namespace

std::string explain_recipe(const recipe& r) {
  std::string out = fmt::format("recipe {} {}\n", r.name, r.version);
  if (!r.description.empty()) out += "  " + r.description + "\n";
  out += "  file: " + r.source_path + "\n";
  if (!r.author.empty()) out += "  author: " + r.author + "\n";
  out += std::string("  execution: ") + (r.execution == execution_mode::dag ? "dag" : "sequential") + "\n";
  if (r.default_step_timeout) out += "  default step timeout: " + seconds_text(r.default_step_timeout->count()) + "\n";
  if (!r.limits.empty()) {
    std::string limits;
    for (const auto& [group, n] : r.limits) limits += fmt::format("{}{} {}", limits.empty() ? "" : ", ", group, n);
    out += "  limits (children at once): " + limits + "\n";
  }
  if (!r.budget.empty()) {
    std::string budget;
    if (r.budget.cost_usd) budget = fmt::format("${:g}", *r.budget.cost_usd);
    if (r.budget.tokens) budget += fmt::format("{}{} tokens", budget.empty() ? "" : ", ", *r.budget.tokens);
    out += "  budget: " + budget + " (no new agent call once spent)\n";
  }
  if (r.rate_limiting.max_concurrent_llm)
    out += fmt::format("  agents at once: {}\n", *r.rate_limiting.max_concurrent_llm);
  if (r.rate_limiting.min_delay_ms) out += fmt::format("  between agent starts: at least {} ms\n", *r.rate_limiting.min_delay_ms);
  if (!r.context.empty()) {
    out += "context defaults:\n";
    for (const auto& kv : r.context) out += fmt::format("  {} = {}\n", std::string(kv.key()), one_line(to_compact_json(kv.value())));
  }
  for (const auto* doc : {&r.inputs, &r.parameters})
    if (!doc->is_null()) out += std::string(doc == &r.inputs ? "inputs: " : "parameters: ") + one_line(to_compact_json(*doc), 200) + "\n";
  if (!r.steps.empty()) {
    out += "steps:\n";
    explain_steps(r.steps, 0, out);
  }
  for (const auto& st : r.stages) {
    out += "stage " + st.name + (st.description.empty() ? "" : ": " + st.description) + "\n";
    if (!st.condition.empty()) out += "  only when: " + one_line(st.condition) + "\n";
    if (st.approval.required)
      out += std::string("  needs approval ") + (stage_gate_runs_after(st, r) ? "after" : "before") + " the stage" +
             (st.approval.prompt.empty() ? "" : ": " + one_line(st.approval.prompt)) + "\n";
    explain_steps(st.steps, 0, out);
  }
  if (r.output) out += "final output: " + *r.output + "\n";
  return out;
}

}  // namespace arun::io
