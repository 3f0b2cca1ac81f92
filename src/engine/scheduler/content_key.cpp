// Content keys of leaf instances (step_result::content_key): what `resume --reload` compares
// to decide whether a recorded instance is still the work the edited recipe asks for. The
// key covers the step as written and the values it reads, not the whole context: an edit of
// one step re-runs that step and the steps that read what it changed, not every later one.
#include "scheduler/step_executor.hpp"

#include "condition/condition.hpp"
#include "template/reference.hpp"

#include <arun/value_format.hpp>

#include <set>
#include <variant>

namespace arun::engine {

std::string step_executor::content_key(const step& s, scope sc) const {
  if (s.definition_hash.empty()) return {};  // not loaded from a file: nothing to compare
  std::set<std::string, std::less<>> names;
  auto read = [&](std::string_view text) {
    for (const auto& span : find_references(text)) names.insert(span.ref.root);
  };
  read(s.command);
  read(s.agent.prompt);
  read(s.agent.model);
  read(s.working_dir);
  read(s.approval.prompt);
  for (const auto& [name, value] : s.env) read(value);
  for (const auto& [name, value] : frame_.r.env) read(value);
  if (!s.condition.empty()) {
    const auto parsed = parse_condition(s.condition);
    if (const auto* c = std::get_if<condition>(&parsed)) {
      for (const auto& bare : condition_names(*c)) names.insert(bare.name);
      for (const auto& ref : condition_references(*c)) names.insert(ref.root);
    }
  }
  std::string text = s.definition_hash;
  for (const auto& [name, value] : frame_.r.env) text += "\nenv " + name + "=" + value;
  // The loop's own values (the item, its index) always: a list edited under the same index
  // is other work, whether or not the command names the variable.
  if (sc.locals) text += "\nlocals " + to_compact_json(*sc.locals);
  for (const auto& name : names) {
    const boost::json::value* value = nullptr;
    if (sc.locals) value = sc.locals->if_contains(name);
    if (!value && sc.context) value = sc.context->if_contains(name);
    if (!value && frame_.builtins.contains(name)) continue;  // session.id and the like
    text += "\n" + name + (value ? "=" + to_compact_json(*value) : " unset");
  }
  return content_hash(text);
}

}  // namespace arun::engine
