// What this version of the engine runs. Recipes that use anything else are refused before
// they start, so a recipe never runs differently from what it says.
#include <arun/validation.hpp>

namespace arun {
namespace {

void refuse(std::vector<diagnostic>& out, const source_location& where, const std::string& what, std::string key) {
  diagnostic d;
  d.where = where;
  d.message = what + " is not supported by this version of arun yet";
  d.key = std::move(key);
  out.push_back(std::move(d));
}

void check_step(const step& s, std::vector<diagnostic>& out) {
  const std::string of = " (step '" + s.id + "')";
  auto field = [&](bool used, const char* key) {
    if (used) refuse(out, s.at(key), "'" + std::string(key) + "'" + of, key);
  };
  if (s.type == step_type::agent) refuse(out, s.where, "agent steps" + of, "agent");
  if (s.type == step_type::recipe) refuse(out, s.where, "recipe steps" + of, "recipe");
  if (s.type == step_type::gate) refuse(out, s.where, "approval gates" + of, "requires_approval");
  field(s.retry.has_value(), "retry");
  if (s.on_error != on_error_policy::fail)
    for (const char* key : {"on_error", "continue_on_error", "nonfatal", "fatal"})
      field(s.has(key), key);
  field(!s.when_tags.empty(), "when_tags");
  field(s.parallel_group.has_value(), "parallel_group");
  field(s.parse_json, "parse_json");
  field(s.approval.required && s.type != step_type::gate, "requires_approval");
  field(s.output_exit_code.has_value(), "output_exit_code");
  field(s.foreach.has_value(), "foreach");
  field(s.loop_while.has_value(), "while_condition");
}

}  // namespace

std::vector<diagnostic> unsupported_features(const recipe& r) {
  std::vector<diagnostic> out;
  if (!r.stages.empty()) refuse(out, r.where, "'stages'", "stages");
  if (r.hooks_set) refuse(out, r.where, "'hooks'", "hooks");
  if (!r.extends.empty()) refuse(out, r.where, "'extends'", "extends");
  if (!r.context_validation.empty()) refuse(out, r.where, "'context_validation'", "context_validation");
  if (r.execution == execution_mode::dag) refuse(out, r.where, "'execution: dag'", "execution");
  for (const auto& s : r.steps) check_step(s, out);
  return out;
}

}  // namespace arun
