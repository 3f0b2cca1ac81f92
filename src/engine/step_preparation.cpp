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

prepared_bash prepare_bash(const step& s, const render_scope& scope) {
  prepared_bash p;
  auto& inv = p.invocation;
  inv.instance_id = s.id;
  auto fail = [&](std::string what, std::string why) {
    p.error = what + ": " + why;
    return p;
  };
  // Environment strings and paths end at a NUL byte: refuse rather than cut (SPEC §5.3).
  const auto nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  auto shell = render_shell(s.command, scope);
  p.warnings = std::move(shell.warnings);
  if (!shell.ok()) return fail("command", shell.error);
  inv.command = std::move(shell.script);
  for (const auto& [name, value] : s.env) {
    auto rendered = render_text(value, scope);
    p.warnings.insert(p.warnings.end(), rendered.warnings.begin(), rendered.warnings.end());
    if (!rendered.ok()) return fail("env " + name, rendered.error);
    if (nul(rendered.text)) return fail("env " + name, "the rendered value contains a NUL byte");
    inv.env.emplace_back(name, std::move(rendered.text));
  }
  auto wd = render_text(s.working_dir, scope);
  p.warnings.insert(p.warnings.end(), wd.warnings.begin(), wd.warnings.end());
  if (!wd.ok()) return fail("working_dir", wd.error);
  if (nul(wd.text)) return fail("working_dir", "the rendered value contains a NUL byte");
  inv.working_dir = std::move(wd.text);
  export_limits limits;
  if (s.max_env_value_bytes) limits.max_value_bytes = *s.max_env_value_bytes;
  auto exports = plan_shell_exports(scope.context, shell.variables, limits, scope.locals);
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
                             const std::string& run_dir) {
  prepared_agent p;
  auto& inv = p.invocation;
  inv.instance_id = s.id;
  auto fail = [&](std::string what, std::string why) {
    p.error = what + ": " + why;
    return p;
  };
  const auto nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  // Renders one field into `out`; false (with p.error set) when it cannot be rendered.
  auto render_into = [&](const char* what, const std::string& text, const render_scope& in, std::string& out) {
    auto rendered = render_text(text, in);
    p.warnings.insert(p.warnings.end(), rendered.warnings.begin(), rendered.warnings.end());
    if (!rendered.ok()) {
      fail(what, rendered.error);
      return false;
    }
    out = std::move(rendered.text);
    return true;
  };
  if (!render_into("working_dir", s.working_dir, scope, inv.working_dir)) return p;
  if (nul(inv.working_dir)) return fail("working_dir", "the rendered value contains a NUL byte");
  for (const auto& [name, value] : s.env) {
    std::string text;
    if (!render_into(("env " + name).c_str(), value, scope, text)) return p;
    if (nul(text)) return fail("env " + name, "the rendered value contains a NUL byte");
    inv.env.emplace_back(name, std::move(text));
  }
  // SPEC §3.4: the agent's context gets working_directory and NONINTERACTIVE when absent.
  boost::json::object extra = scope.locals ? *scope.locals : boost::json::object{};
  if (!find_root(scope, "working_directory")) extra["working_directory"] = below(run_dir, inv.working_dir);
  if (!find_root(scope, "NONINTERACTIVE")) extra["NONINTERACTIVE"] = "1";
  const render_scope agent_scope{scope.context, scope.declared, scope.mode, scope.builtins, &extra};
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
