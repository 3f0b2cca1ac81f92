// Content keys of leaf instances (step_result::content_key): what `resume --reload` compares
// to decide whether a recorded instance is still the work the edited recipe asks for. The
// key covers the step as written and the values it reads, not the whole context: an edit of
// one step re-runs that step and the steps that read what it changed, not every later one.
#include "scheduler/step_executor.hpp"

#include "condition/condition.hpp"
#include "shell/context_export.hpp"
#include "template/reference.hpp"

#include <arun/value_format.hpp>

#include <algorithm>
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
  read(s.agent.agent);
  read(s.agent.mode);
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
  // A bash script may read a variable through arun's context export without a template:
  // `$RECIPE_VAR_NAME`, or the name's upper-case alias (docs/reference/templates.md,
  // "The context in the environment").
  if (s.type == step_type::bash && sc.context) {
    for (const auto& kv : *sc.context) {
      // A name found inside a longer word counts too: a step run again needlessly is cheaper
      // than a stale result kept.
      if (s.command.find(shell_alias(kv.key())) != std::string::npos ||
          s.command.find("RECIPE_VAR_" + shell_name_part(kv.key())) != std::string::npos)
        names.emplace(kv.key());
    }
  }
  for (const auto& name : names) {
    // A secret counts by its name: its value must not be guessable from a key in the journal.
    const bool secret = rs_.options.secret_names.contains(name) ||
                        std::find(frame_.r.secrets.begin(), frame_.r.secrets.end(), name) != frame_.r.secrets.end();
    if (secret) {
      text += "\n" + name + " secret";
      continue;
    }
    const boost::json::value* value = nullptr;
    if (sc.locals) value = sc.locals->if_contains(name);
    if (!value && sc.context) value = sc.context->if_contains(name);
    if (!value && frame_.builtins.contains(name)) continue;  // session.id and the like
    text += "\n" + name + (value ? "=" + to_compact_json(*value) : " unset");
  }
  return content_hash(text);
}

}  // namespace arun::engine
