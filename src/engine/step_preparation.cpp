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

}  // namespace arun::engine
