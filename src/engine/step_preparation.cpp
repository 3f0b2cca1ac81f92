#include "step_preparation.hpp"

#include "condition/condition.hpp"
#include "shell/context_export.hpp"
#include "shell/shell_render.hpp"

#include <variant>

namespace arun::engine {

condition_verdict check_condition(const step& s, const render_scope& scope) {
  return check_expression(s.condition, "condition", scope);
}

condition_verdict check_expression(const std::string& text, std::string_view what, const render_scope& scope) {
  condition_verdict v;
  if (text.empty()) return v;
  const auto parsed = parse_condition(text);
  const std::string name(what);
  if (const auto* e = std::get_if<condition_error>(&parsed)) {
    v.error = "invalid " + name + " at column " + std::to_string(e->column) + ": " + e->message;
    return v;
  }
  auto outcome = evaluate_condition(std::get<condition>(parsed), scope);
  v.warnings = std::move(outcome.warnings);
  if (outcome.error) {
    v.error = name + " failed at column " + std::to_string(outcome.error->column) + ": " + outcome.error->message;
    return v;
  }
  v.run = outcome.value;
  return v;
}

namespace {

// Environment strings and paths end at a NUL byte: refuse rather than cut
// (docs/reference/templates.md, "Size limits").
bool has_nul(const std::string& text) { return text.find('\0') != std::string::npos; }

// The step's `env` values and `working_dir`, rendered into `env` and `working_dir`; warnings
// are added to `warnings`. The error (`env NAME: why`, `working_dir: why`) or empty.
std::string render_placement(const step& s, const render_scope& scope, const env_list& recipe_env,
                             std::vector<std::string>& warnings, std::vector<std::pair<std::string, std::string>>& env,
                             std::string& working_dir) {
  auto render = [&](const std::string& what, const std::string& text, std::string& out) -> std::string {
    auto rendered = render_text(text, scope);
    warnings.insert(warnings.end(), rendered.warnings.begin(), rendered.warnings.end());
    if (!rendered.ok()) return what + ": " + rendered.error;
    if (has_nul(rendered.text)) return what + ": the rendered value contains a NUL byte";
    out = std::move(rendered.text);
    return {};
  };
  // The recipe's env first: the step's own, applied after it, wins for a name both set.
  for (const auto& [name, value] : recipe_env) {
    std::string text;
    if (auto error = render("env " + name, value, text); !error.empty()) return error;
    env.emplace_back(name, std::move(text));
  }
  for (const auto& [name, value] : s.env) {
    std::string text;
    if (auto error = render("env " + name, value, text); !error.empty()) return error;
    env.emplace_back(name, std::move(text));
  }
  return render("working_dir", s.working_dir, working_dir);
}

}  // namespace

prepared_bash prepare_bash(const step& s, const render_scope& scope, const env_list& recipe_env,
                           const context_export_table* context_table) {
  prepared_bash p;
  auto& inv = p.invocation;
  inv.instance_id = s.id;
  auto shell = render_shell(s.command, scope);
  p.warnings = std::move(shell.warnings);
  if (!shell.ok()) {
    p.error = "command: " + shell.error;
    return p;
  }
  inv.command = std::move(shell.script);
  p.error = render_placement(s, scope, recipe_env, p.warnings, inv.env, inv.working_dir);
  if (!p.error.empty()) return p;
  export_limits limits;
  if (s.max_env_value_bytes) limits.max_value_bytes = *s.max_env_value_bytes;
  auto exports = plan_shell_exports(scope.context, shell.variables, limits, scope.locals, context_table);
  p.warnings.insert(p.warnings.end(), exports.warnings.begin(), exports.warnings.end());
  for (auto& v : exports.variables) inv.exports.push_back({std::move(v.name), std::move(v.value), v.by_file});
  return p;
}

namespace {

std::string below(const std::string& base, const std::string& dir) {
  if (dir.empty()) return base;
  if (dir.front() == '/' || base.empty()) return dir;
  return base.back() == '/' ? base + dir : base + "/" + dir;
}

}  // namespace

prepared_agent prepare_agent(const agent_call& call, const step& s, const render_scope& scope,
                             const std::string& run_dir, const env_list& recipe_env) {
  prepared_agent p;
  auto& inv = p.invocation;
  inv.instance_id = s.id;
  // Renders one field into `out`; false (with p.error set) when it cannot be rendered.
  auto render_into = [&](const char* what, const std::string& text, const render_scope& in, std::string& out) {
    auto rendered = render_text(text, in);
    p.warnings.insert(p.warnings.end(), rendered.warnings.begin(), rendered.warnings.end());
    if (!rendered.ok()) {
      p.error = std::string(what) + ": " + rendered.error;
      return false;
    }
    out = std::move(rendered.text);
    return true;
  };
  p.error = render_placement(s, scope, recipe_env, p.warnings, inv.env, inv.working_dir);
  if (!p.error.empty()) return p;
  // docs/agents.md, "Running agent steps": the agent's context gets working_directory and
  // NONINTERACTIVE when absent.
  boost::json::object extra = scope.locals ? *scope.locals : boost::json::object{};
  if (!find_root(scope, "working_directory")) extra["working_directory"] = below(run_dir, inv.working_dir);
  if (!find_root(scope, "NONINTERACTIVE")) extra["NONINTERACTIVE"] = "1";
  const render_scope agent_scope{scope.context, scope.declared, scope.mode, scope.builtins, &extra, scope.outputs};
  inv.provider = call.provider;
  inv.provider_preferences = call.provider_preferences;
  std::string mode, prompt;
  if (!render_into("agent", call.agent, agent_scope, inv.agent) || !render_into("model", call.model, agent_scope, inv.model) ||
      !render_into("mode", call.mode, agent_scope, mode) || !render_into("prompt", call.prompt, agent_scope, prompt))
    return p;
  inv.prompt.reserve(prompt.size() + mode.size() + non_interactive_footer.size() + 16);
  if (!mode.empty()) inv.prompt.append("MODE: ").append(mode).append("\n\n");
  inv.prompt.append(prompt);
  inv.prompt.append("\n\n").append(non_interactive_footer);
  return p;
}

}  // namespace arun::engine
