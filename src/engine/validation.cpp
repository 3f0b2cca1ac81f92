#include <arun/validation.hpp>

#include "dag_order.hpp"
#include "scheduler/foreach_lines.hpp"
#include "template_checks.hpp"

#include "condition/condition.hpp"
#include "shell/shell_lexer.hpp"
#include "shell/shell_render.hpp"
#include "template/reference.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>

namespace arun {
namespace {

const engine::name_set builtin_names = {"recipe", "session", "step", "stage", "_approval_message", "_loop_index",
                                "_loop_iteration"};

diagnostic make(severity level, const source_location& where, std::string message, std::string key = {},
                std::string hint = {}) {
  diagnostic d;
  d.level = level;
  d.where = where;
  d.message = std::move(message);
  d.key = std::move(key);
  d.hint = std::move(hint);
  return d;
}

// Every string inside a JSON value (rendered type-preserving: sub-recipe context, update_context).
void collect_strings(std::string_view key, const boost::json::value& v,
                     std::vector<std::pair<std::string_view, std::string>>& out) {
  if (const auto* s = v.if_string()) out.emplace_back(key, std::string(*s));
  if (const auto* a = v.if_array())
    for (const auto& item : *a) collect_strings(key, item, out);
  if (const auto* o = v.if_object())
    for (const auto& kv : *o) collect_strings(key, kv.value(), out);
}

// The text fields of a step that are rendered as templates, with the key they came from.
std::vector<std::pair<std::string_view, std::string>> template_fields(const step& s) {
  std::vector<std::pair<std::string_view, std::string>> fields = {
      {"command", s.command}, {"prompt", s.agent.prompt}, {s.has("cwd") ? "cwd" : "working_dir", s.working_dir},
      {"condition", s.condition}, {"approval_prompt", s.approval.prompt}, {"recipe", s.call.recipe},
      // An agent step renders these too (step_preparation.cpp), so their references are checked
      // here rather than failing the step when it starts.
      {"agent", s.agent.agent}, {"model", s.agent.model}, {"mode", s.agent.mode}};
  for (const auto& [name, value] : s.env) fields.emplace_back("env", value);
  if (s.foreach && s.foreach->items.is_string()) fields.emplace_back("foreach", std::string(s.foreach->items.get_string()));
  if (const auto* lines = s.foreach ? engine::lines_text(s.foreach->items) : nullptr) fields.emplace_back("foreach", std::string(*lines));
  if (s.loop_while) {
    fields.emplace_back("while_condition", s.loop_while->condition);
    fields.emplace_back("break_when", s.loop_while->break_when);
    collect_strings("update_context", s.loop_while->update_context, fields);
  }
  collect_strings(s.at("sub_context").line ? "sub_context" : "context", s.call.context, fields);
  return fields;
}

// Names longer than this are refused before std::regex sees them: its matcher recurses once
// per character and a value of some 50 KB would overflow the stack.
constexpr std::size_t max_name_length = 256;

void check_ids(const recipe& r, std::vector<diagnostic>& out) {
  static const std::regex id_pattern("[A-Za-z0-9_.-]+");
  std::map<std::string, source_location, std::less<>> seen;
  for_each_step(r, [&](const step& s, int) {
    if (s.id.empty()) return;  // the loader reported the missing id
    if (s.id.size() > max_name_length)
      out.push_back(make(severity::error, s.at("id"), "a step id is longer than 256 characters", "id"));
    else if (!std::regex_match(s.id, id_pattern))
      out.push_back(make(severity::error, s.at("id"),
                         "step id '" + s.id + "' may only use letters, digits, '_', '.' and '-'", "id"));
    auto [it, fresh] = seen.emplace(s.id, s.at("id"));
    if (!fresh)
      out.push_back(make(severity::error, s.at("id"),
                         "step id '" + s.id + "' is used twice; ids must be unique (first at line " +
                             std::to_string(it->second.line) + ")",
                         "id"));
  });
}

// Stage names name their gates (`stage:NAME`): two stages of one name would share a gate, and
// approving one would approve the other.
void check_stage_names(const recipe& r, std::vector<diagnostic>& out) {
  static const std::regex name_pattern("[A-Za-z0-9_.-]+");
  std::map<std::string, source_location, std::less<>> seen;
  for (const auto& st : r.stages) {
    if (st.name.empty() && st.name_at.line == 0) continue;  // the loader reported the missing name
    const auto& at = st.name_at.line ? st.name_at : st.where;
    if (st.name.size() > max_name_length || !std::regex_match(st.name, name_pattern))
      out.push_back(make(severity::error, at,
                         "stage name '" + st.name + "' may only use letters, digits, '_', '.' and '-' (it names the stage's gate)",
                         "name"));
    auto [it, fresh] = seen.emplace(st.name, at);
    if (!fresh)
      out.push_back(make(severity::error, at,
                         "stage name '" + st.name + "' is used twice (first at line " + std::to_string(it->second.line) +
                             ", column " + std::to_string(it->second.column) + "); stage names must be unique",
                         "name"));
  }
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

// A name a step stores its output into must be one a template can read back: an identifier,
// and not a built-in (`output: session` was stored and then hidden by {{session}}). A loop
// variable is local to its loop, where it hides a built-in of the same name.
void check_stored_name(const step& s, std::string_view key, const std::string& name, std::vector<diagnostic>& out,
                       bool loop_variable = false) {
  static const std::regex identifier("[A-Za-z_][A-Za-z0-9_]*");
  const auto where = s.at(key);
  if (name.size() > max_name_length || !std::regex_match(name, identifier))
    out.push_back(make(severity::error, where,
                       "step '" + s.id + "': '" + std::string(key) + "' must be a name of letters, digits and '_' " +
                           "(not starting with a digit), not '" + name + "'",
                       std::string(key)));
  else if (loop_variable && builtin_names.contains(name) && !name.starts_with('_'))
    // Inside its loop the variable wins, as the Python runner has it (`as: recipe` over a
    // list of recipes): worth a word, not a refusal.
    out.push_back(make(severity::warning, where,
                       "step '" + s.id + "': the loop variable '" + name + "' hides the built-in {{" + name +
                           "}} inside the loop",
                       std::string(key), "a name of its own (say '" + name + "_item') keeps both readable"));
  else if (builtin_names.contains(name))
    out.push_back(make(severity::error, where,
                       "step '" + s.id + "': '" + std::string(key) + "' cannot be '" + name +
                           "': it is a built-in, and {{" + name + "}} would read the built-in",
                       std::string(key)));
}

// What the older runners refuse at load time and arun used to accept and then did nothing
// useful with: empty ids and bodies, unreadable names, contradictory model settings.
void check_empty_and_names(const recipe& r, std::vector<diagnostic>& out) {
  for_each_step(r, [&](const step& s, int) {
    if (s.id.empty() && s.has("id")) out.push_back(make(severity::error, s.at("id"), "a step id is empty", "id"));
    if (s.type == step_type::bash && s.has("command") && blank(s.command))
      out.push_back(make(severity::error, s.at("command"), "step '" + s.id + "': 'command' is empty", "command"));
    if (s.type == step_type::agent && s.has("prompt") && blank(s.agent.prompt))
      out.push_back(make(severity::error, s.at("prompt"), "agent step '" + s.id + "': 'prompt' is empty", "prompt"));
    if (s.output) check_stored_name(s, "output", *s.output, out);
    if (s.output_exit_code) check_stored_name(s, "output_exit_code", *s.output_exit_code, out);
    if (s.foreach) {
      for (const char* key : {"as", "foreach_var"})
        if (s.has(key)) check_stored_name(s, key, s.foreach->as, out, true);
      if (s.foreach->collect) check_stored_name(s, "collect", *s.foreach->collect, out);
    }
    // update_context keys are loop locals too, which now win over built-ins: never one of them.
    if (s.loop_while)
      for (const auto& kv : s.loop_while->update_context)
        if (builtin_names.contains(kv.key()))
          out.push_back(make(severity::error, s.at("update_context"),
                             "step '" + s.id + "': update_context cannot set '" + std::string(kv.key()) +
                                 "': it is a built-in, and {{" + std::string(kv.key()) + "}} would read the built-in",
                             "update_context"));
    const auto& a = s.agent;
    if (!a.model_role.empty() && (!a.model.empty() || !a.provider.empty() || !a.provider_preferences.is_null()))
      out.push_back(make(severity::error, s.at("model_role"),
                         "step '" + s.id + "': 'model_role' chooses the model; give it or 'provider'/'model'/" +
                             "'provider_preferences', not both",
                         "model_role"));
  });
  for (const auto& st : r.stages)
    if (st.approval.required && blank(st.approval.prompt))
      out.push_back(make(severity::error, st.where,
                         "stage '" + st.name + "' requires approval but has no prompt: write 'approval: {prompt: ...}' " +
                             "(or 'approval_message')",
                         "approval"));
}

void check_dependencies(const recipe& r, std::vector<diagnostic>& out) {
  std::map<std::string, const step*, std::less<>> by_id;
  for_each_step(r, [&](const step& s, int) { by_id.emplace(s.id, &s); });
  std::vector<std::string_view> ids;
  for (const auto& [id, s] : by_id) ids.push_back(id);
  for_each_step(r, [&](const step& s, int) {
    for (const auto& dep : s.depends_on)
      if (!by_id.contains(dep)) {
        auto d = make(severity::error, s.at("depends_on"),
                      "step '" + s.id + "' depends on '" + dep + "', which no step has as id", "depends_on",
                      did_you_mean(dep, ids));
        d.snippet = dep;  // the caret under the name, in a list of several
        out.push_back(std::move(d));
      }
  });
  // Cycles: depth-first search, reporting each cycle once with its path.
  enum class mark { unseen, active, done };
  std::map<std::string, mark, std::less<>> state;
  std::vector<std::string> path;
  std::function<void(const step&)> visit = [&](const step& s) {
    state[s.id] = mark::active;
    path.push_back(s.id);
    for (const auto& dep : s.depends_on) {
      auto target = by_id.find(dep);
      if (target == by_id.end()) continue;
      if (state[dep] == mark::active) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), dep); it != path.end(); ++it) cycle += *it + " -> ";
        out.push_back(make(severity::error, s.at("depends_on"), "depends_on forms a cycle: " + cycle + dep, "depends_on"));
      } else if (state[dep] == mark::unseen) {
        visit(*target->second);
      }
    }
    path.pop_back();
    state[s.id] = mark::done;
  };
  for (const auto& [id, s] : by_id)
    if (state[id] == mark::unseen) visit(*s);
}

// docs/reference/recipe.md, "depends_on and execution: dag": under execution: dag a step also waits
// for the steps whose outputs it reads; such waiting must not go round in a circle.
void check_dag_order(const recipe& r, std::vector<diagnostic>& out) {
  if (r.execution != execution_mode::dag) return;
  const bool reported = std::any_of(out.begin(), out.end(), [](const diagnostic& d) {
    return d.message.find("depends_on forms a cycle") != std::string::npos;
  });
  if (reported) return;  // one report per cycle
  auto check = [&](const std::vector<step>& steps) {
    const auto cycle = engine::dag_cycle(steps, engine::dag_dependencies(steps));
    if (cycle.empty()) return;
    const auto first = cycle.substr(0, cycle.find(' '));
    const auto it = std::find_if(steps.begin(), steps.end(), [&](const step& s) { return s.id == first; });
    out.push_back(make(severity::error, it == steps.end() ? r.where : it->where,
                       "execution: dag: these steps wait for each other (by depends_on or by reading each "
                       "other's outputs): " + cycle,
                       "execution", "break the cycle, or run the recipe sequentially"));
  };
  check(r.steps);
  for (const auto& st : r.stages) check(st.steps);
}

// Fields that would silently do nothing where they are written.
void check_ineffective_fields(const recipe& r, std::vector<diagnostic>& out) {
  for_each_step(r, [&](const step& s, int) {
    if (s.retry && (s.foreach || s.loop_while) && !s.steps.empty())
      out.push_back(make(severity::warning, s.at("retry"),
                         "'retry' on loop step '" + s.id + "' has no effect: a loop with a steps body is not retried",
                         "retry", "put the retry on the steps inside the loop"));
    if (s.parallel_group && r.execution == execution_mode::dag)
      out.push_back(make(severity::warning, s.at("parallel_group"),
                         "'parallel_group' of step '" + s.id + "' has no effect under execution: dag",
                         "parallel_group", "under dag every step starts as soon as what it waits for has finished"));
  });
}

// Gates in parallel groups and loop bodies ask once per instance, and a run that cannot ask
// waits at all of them (each decided by its instance id). On a loop step itself the meaning
// is unclear (once, or per item?), so the author says which.
void check_gates(const recipe& r, std::vector<diagnostic>& out) {
  for_each_step(r, [&](const step& s, int) {
    if (!s.approval.required || !(s.foreach || s.loop_while)) return;
    out.push_back(make(severity::error, s.at("requires_approval"),
                       "loop step '" + s.id + "' has requires_approval: it is unclear whether to ask once or per item",
                       "requires_approval",
                       "to ask once, put a gate step before the loop; to ask per item, give the loop a steps: body "
                       "with a gate step or a step with requires_approval"));
  });
}

// docs/agents.md, "Reference forms": `name`, `ns:name` or `ns:cat:name`, each segment
// [A-Za-z0-9_-]+. Whether the agent file exists is checked with agent steps (issue 5), not here.
void check_agent_references(const recipe& r, std::vector<diagnostic>& out) {
  static const std::regex agent_ref("[A-Za-z0-9_-]+(:[A-Za-z0-9_-]+){0,2}");
  for_each_step(r, [&](const step& s, int) {
    if (s.type != step_type::agent || s.agent.agent.empty()) return;
    if (!engine::find_references(s.agent.agent).empty()) return;  // rendered at run time
    if (s.agent.agent.size() > max_name_length || !std::regex_match(s.agent.agent, agent_ref))
      out.push_back(make(severity::error, s.at("agent"),
                         "agent reference '" + s.agent.agent + "' of step '" + s.id +
                             "' must be name, ns:name or ns:cat:name (letters, digits, '_' and '-')",
                         "agent"));
  });
}

// docs/reference/conditions.md, "Errors": condition syntax is checked at load time; the column is
// the condition's own.
void check_condition(const std::string& text, const source_location& where, std::string_view key,
                     std::vector<diagnostic>& out) {
  if (text.empty()) return;
  const auto parsed = engine::parse_condition(text);
  if (const auto* e = std::get_if<engine::condition_error>(&parsed))
    out.push_back(make(severity::error, where,
                       "invalid " + std::string(key) + " at column " + std::to_string(e->column) + ": " + e->message,
                       std::string(key)));
}

void check_conditions(const recipe& r, std::vector<diagnostic>& out) {
  for_each_step(r, [&](const step& s, int) {
    check_condition(s.condition, s.at("condition"), "condition", out);
    if (s.loop_while) {
      check_condition(s.loop_while->condition, s.at("while_condition"), "while_condition", out);
      check_condition(s.loop_while->break_when, s.at("break_when"), "break_when", out);
    }
  });
  for (const auto& st : r.stages) check_condition(st.condition, st.where, "condition", out);
}

// docs/reference/recipe.md, "Agent steps": provider_preferences entries use `provider` and `model`;
// `class` is ignored.
void check_provider_preferences(const step& s, std::vector<diagnostic>& out) {
  const auto& prefs = s.agent.provider_preferences;
  if (prefs.is_null()) return;
  const auto where = s.at("provider_preferences");
  const std::string owner = "provider_preferences of step '" + s.id + "'";
  const auto* list = prefs.if_array();
  if (!list) {
    out.push_back(make(severity::error, where, owner + " must be a list of {provider, model} mappings", "provider_preferences"));
    return;
  }
  for (const auto& entry : *list) {
    const auto* e = entry.if_object();
    if (!e) {
      out.push_back(make(severity::error, where, owner + ": each entry must be a mapping (provider, model)", "provider_preferences"));
      continue;
    }
    for (const auto& kv : *e) {
      const std::string key(kv.key());
      if ((key == "provider" || key == "model") && !kv.value().is_string())
        out.push_back(make(severity::error, where, owner + ": '" + key + "' must be a string", "provider_preferences"));
      else if (key == "class")
        out.push_back(make(severity::warning, where, owner + ": 'class' is accepted and ignored (arun picks by provider and model)",
                           "provider_preferences"));
      else if (key != "provider" && key != "model")
        out.push_back(make(severity::warning, where, owner + ": unknown key '" + key + "' is ignored (known: provider, model)",
                           "provider_preferences"));
    }
  }
}

// recovery_on_failure (docs/agents.md, "auto_stage and recovery_on_failure"; `true`, `false`, or a
// mapping describing the agent call) and provider_preferences (docs/reference/recipe.md,
// "Agent steps").
void check_agent_options(const recipe& r, std::vector<diagnostic>& out) {
  for_each_step(r, [&](const step& s, int) {
    check_provider_preferences(s, out);
    const auto& spec = s.call.recovery_on_failure;
    if (spec.is_null() || spec.is_bool()) return;
    const auto where = s.at("recovery_on_failure");
    const std::string owner = "recovery_on_failure of step '" + s.id + "'";
    const auto* o = spec.if_object();
    if (!o) {
      out.push_back(make(severity::error, where, owner + " must be true or a mapping (agent, prompt, mode, model, timeout)",
                         "recovery_on_failure"));
      return;
    }
    for (const auto& kv : *o) {
      const std::string key(kv.key());
      const bool text_key = key == "agent" || key == "prompt" || key == "mode" || key == "model";
      if (text_key && !kv.value().is_string())
        out.push_back(make(severity::error, where, owner + ": '" + key + "' must be a string", "recovery_on_failure"));
      else if (key == "timeout" && !(kv.value().is_number() && kv.value().to_number<double>() >= 0))
        out.push_back(make(severity::error, where, owner + ": 'timeout' must be a number of seconds", "recovery_on_failure"));
      else if (!text_key && key != "timeout")
        out.push_back(make(severity::warning, where, owner + ": unknown key '" + key + "' is ignored (known: agent, prompt, mode, model, timeout)",
                           "recovery_on_failure"));
    }
  });
}

// How bash reads each reference of a bash `command`: the lexer the renderer uses, so heredoc
// lines and strings that start with '#' are not comments, and code positions are the ones the
// run refuses.
std::vector<engine::shell_position> shell_positions(std::string_view command, const std::vector<engine::reference_span>& spans) {
  std::vector<engine::text_range> ranges;
  for (const auto& s : spans) ranges.push_back({s.begin, s.end});
  auto positions = engine::lex_shell(command, ranges).positions;
  positions.resize(spans.size());
  return positions;
}

void check_references(const recipe& r, const validation_options& options, std::vector<diagnostic>& out) {
  auto declared = declared_names(r, options);
  declared.insert(options.sub_recipe_names.begin(), options.sub_recipe_names.end());
  const bool calls_recipes = options.dynamic_sub_recipes;
  // A sub-recipe chosen at run time may declare outputs no one can see now: only warn then.
  const bool soft = options.lenient || r.lenient_templates || calls_recipes;
  // Names a user could have meant: declared ones, not the engine's own underscore names.
  std::vector<std::string_view> candidates;
  for (const auto& n : declared)
    if (!n.starts_with('_')) candidates.push_back(n);
  // How often each reference text was seen in one owner's key so far: the renderer finds the
  // n-th one in the source (a key such as `env` holds several values).
  std::map<std::pair<std::string, std::string>, std::size_t> seen;
  // `not_here`: a declared name not defined in this text (a loop's own `as` in its `foreach`,
  // where the loop has not started): neither listed nor suggested.
  // `variable`: the env entry the text is the value of (`BASH_ENV`: a program runs it as code).
  auto check_text = [&](std::string_view key, const std::string& text, const source_location& where,
                        const std::string& owner, std::string_view not_here = {}, std::string_view variable = {}) {
    const auto spans = engine::find_references(text);
    const bool runs_code = !variable.empty() && engine::variable_runs_code(variable);
    const bool shell = key == "command" || key == "hooks";
    const auto positions = shell ? shell_positions(text, spans) : std::vector<engine::shell_position>(spans.size());
    for (std::size_t k = 0; k < spans.size(); ++k) {
      const auto& span = spans[k];
      const auto snippet = text.substr(span.begin, span.end - span.begin);
      const auto occurrence = seen[{owner + "\n" + std::string(key), snippet}]++;
      const bool in_comment = positions[k].quoting == engine::shell_quoting::comment;
      if ((positions[k].code || runs_code) && !in_comment) {
        // Templates never reach a code position (docs/reference/templates.md, "Code positions").
        const std::string runner = positions[k].code ? positions[k].code_in : "the program reading " + std::string(variable);
        auto d = make(severity::error, where, engine::code_position_error(runner, span.ref) + ", in " + owner,
                      std::string(key), engine::code_position_hint(span.ref));
        d.snippet = snippet;
        d.occurrence = occurrence;
        d.code = "code-position";
        out.push_back(std::move(d));
      }
      if (declared.contains(span.ref.root)) continue;
      std::vector<std::string_view> here;
      std::string defined;
      for (const auto& n : candidates) {
        if (n == not_here) continue;
        here.push_back(n);
        defined += (defined.empty() ? "" : ", ") + std::string(n);
      }
      auto hint = did_you_mean(span.ref.root, here);
      // In a condition a `{{name}}` nothing declares is null, as a bare name is: the same rule
      // (see check_names below), an error only for a likely typo.
      const bool in_condition = key == "condition" || key == "while_condition" || key == "break_when";
      const bool typo = !hint.empty() && span.ref.root.size() >= 4;
      if (hint.empty())
        hint = calls_recipes ? "it may be an output of a sub-recipe"
                             : "declare it in context, or pass --set " + span.ref.root + "=...";
      // In a shell comment it is left as written and changes nothing: real recipes of the
      // older runners explain their templates in comments (`# {{variable}} is substituted ...`).
      if (in_comment) hint = "it is in a shell comment, which arun leaves as written";
      const bool warn = soft || in_comment || (in_condition && !typo);
      auto d = make(warn ? severity::warning : severity::error, where,
                    "undefined variable '" + span.ref.root + "' in {{" + span.ref.text() + "}} of " + owner +
                        (in_condition ? (typo ? ": it is null at run time" : ": null unless a caller or --set provides it")
                                      : " (defined: " + defined + ")"),
                    std::string(key), std::move(hint));
      d.snippet = snippet;
      d.occurrence = occurrence;
      out.push_back(std::move(d));
    }
  };
  // Bare names in conditions: `modee == 'quick'` and `mode == quick` read a name nothing
  // declares, which is null at run time and silently skips the step.
  auto check_names = [&](std::string_view key, const std::string& text, const source_location& where,
                         const std::string& owner) {
    if (text.empty()) return;
    const auto parsed = engine::parse_condition(text);
    const auto* c = std::get_if<engine::condition>(&parsed);
    if (!c) return;  // check_conditions reports the syntax error
    for (const auto& bare : engine::condition_names(*c)) {
      // `x is none` reads as the Python runner reads it: an unset name, null.
      if (declared.contains(bare.name) || bare.name == "none") continue;
      // A name within two edits of a declared one is a likely typo: an error. One nothing
      // resembles is a warning: sub-recipe fragments of the older runners name what only
      // their callers declare, and those runners ran them with it null (docs/reference/conditions.md).
      auto hint = did_you_mean(bare.name, candidates);
      // A name of three letters or fewer is within two edits of almost any short name (a
      // loop's `f`, an `id`): too weak a sign to refuse the recipe on.
      const bool typo = !hint.empty() && bare.name.size() >= 4;
      if (hint.empty())
        hint = bare.compared ? "to compare with the text " + bare.name + ", quote it: '" + bare.name + "'"
                             : "declare it in context, or pass --set " + bare.name + "=...";
      auto d = make(soft || !typo ? severity::warning : severity::error, where,
                    "undefined name '" + bare.name + "' in the " + std::string(key) + " of " + owner +
                        (typo ? ": it is null at run time" : ": null unless a caller or --set provides it"),
                    std::string(key), std::move(hint));
      d.snippet = bare.name;
      // The n-th time the name's text appears in the condition (inside longer words too, as
      // the renderer searches the source).
      const std::string_view before = std::string_view(text).substr(0, bare.column - 1);
      for (auto at = before.find(bare.name); at != std::string_view::npos; at = before.find(bare.name, at + 1))
        ++d.occurrence;
      out.push_back(std::move(d));
    }
  };
  for_each_step(r, [&](const step& s, int) {
    std::size_t env_entry = 0;  // template_fields lists the env values in their order
    for (const auto& [key, text] : template_fields(s))
      check_text(key, text, s.at(key), "step '" + s.id + "'", key == "foreach" ? std::string_view(s.foreach->as) : "",
                 key == "env" ? std::string_view(s.env[env_entry++].first) : "");
    const std::string owner = "step '" + s.id + "'";
    check_names("condition", s.condition, s.at("condition"), owner);
    if (s.loop_while) {
      check_names("while_condition", s.loop_while->condition, s.at("while_condition"), owner);
      check_names("break_when", s.loop_while->break_when, s.at("break_when"), owner);
    }
  });
  for (const auto& st : r.stages) {
    check_names("condition", st.condition, st.where, "stage '" + st.name + "'");
    check_text("condition", st.condition, st.where, "stage '" + st.name + "'");
    check_text("approval", st.approval.prompt, st.where, "stage '" + st.name + "'");
  }
  for (const auto& [name, value] : r.env) check_text("env", value, r.env_where, "the recipe's env", {}, name);
  // The hooks' values have no recorded position: their diagnostics stay at the recipe's start.
  const auto before_hooks = out.size();
  for (const auto* hook : {&r.hooks.pre_step, &r.hooks.post_step, &r.hooks.on_error})
    check_text("hooks", *hook, r.where, "the hooks");
  for (auto i = before_hooks; i < out.size(); ++i) out[i].snippet.clear();
}

}  // namespace

std::set<std::string, std::less<>> declared_names(const recipe& r, const validation_options& options) {
  engine::name_set names = builtin_names;
  for (const auto& kv : r.context) names.emplace(kv.key());
  names.insert(r.secrets.begin(), r.secrets.end());
  // A variable context_validation checks is one the caller or --set provides.
  for (const auto& [name, check] : r.context_validation) names.insert(name);
  for (const auto& k : options.set_keys) names.emplace(k.substr(0, k.find('.')));
  for_each_step(r, [&](const step& s, int) {
    if (s.output) names.insert(*s.output);
    if (s.output_exit_code) names.insert(*s.output_exit_code);
    if (s.foreach) {
      names.insert(s.foreach->as);
      if (s.foreach->collect) names.insert(*s.foreach->collect);
    }
    if (s.loop_while)
      for (const auto& kv : s.loop_while->update_context) names.emplace(kv.key());
    // docs/reference/recipe.md, "Agent steps": an agent's context has these when the recipe does
    // not set them.
    if (s.type == step_type::agent || !s.call.recovery_on_failure.is_null()) names.insert({"working_directory", "NONINTERACTIVE"});
  });
  return names;
}

std::vector<diagnostic> validate_recipe(const recipe& r, const validation_options& options) {
  std::vector<diagnostic> out;
  // Each check's diagnostics carry its code (docs/running.md, "Diagnostics as JSON").
  auto run = [&](std::string_view code, auto&& check) {
    const auto first = out.size();
    check();
    for (auto i = first; i < out.size(); ++i)
      if (out[i].code.empty()) out[i].code = code;
  };
  run("step-id", [&] { check_ids(r, out); });
  run("stage-name", [&] { check_stage_names(r, out); });
  run("invalid-value", [&] { check_empty_and_names(r, out); });
  run("depends-on", [&] { check_dependencies(r, out); });
  run("depends-on", [&] { check_dag_order(r, out); });
  run("approval", [&] { check_gates(r, out); });
  run("ineffective-field", [&] { check_ineffective_fields(r, out); });
  run("condition-syntax", [&] { check_conditions(r, out); });
  run("agent-reference", [&] { check_agent_references(r, out); });
  run("agent-options", [&] { check_agent_options(r, out); });
  run("undefined-name", [&] { check_references(r, options, out); });
  run("template-syntax", [&] { check_template_syntax(r, template_fields, out); });
  return out;
}

}  // namespace arun
