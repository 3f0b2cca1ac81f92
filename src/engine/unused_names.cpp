#include <arun/unused_names.hpp>

#include "dag_order.hpp"
#include "template/reference.hpp"

#include <cctype>
#include <string_view>

namespace arun {
namespace {

diagnostic unused(source_location where, std::string message, std::string key, std::string hint) {
  diagnostic d;
  d.level = severity::warning;
  d.where = std::move(where);
  d.message = std::move(message);
  d.key = std::move(key);
  d.hint = std::move(hint);
  d.code = "unused-name";
  return d;
}

// Names a user could have meant: not the engine's own underscore names.
std::vector<std::string_view> candidates(const engine::name_set& names) {
  std::vector<std::string_view> out;
  for (const auto& n : names)
    if (!n.starts_with('_')) out.push_back(n);
  return out;
}

std::string listed(const engine::name_set& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void add_references(std::string_view text, engine::name_set& out) {
  for (const auto& span : engine::find_references(text)) out.insert(span.ref.root);
}

// `$RECIPE_VAR_whom` read by a command reads the context key `whom` (every key is exported).
void add_exported(std::string_view text, engine::name_set& out) {
  constexpr std::string_view prefix = "RECIPE_VAR_";
  for (auto at = text.find(prefix); at != std::string_view::npos; at = text.find(prefix, at + 1)) {
    const auto begin = at + prefix.size();
    auto end = begin;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    if (end > begin) out.emplace(text.substr(begin, end - begin));
  }
}

// The names a recipe declares as inputs rather than computes: context keys (as written,
// before --set), context_validation keys, secrets and the documentation-only `inputs` and
// `parameters` (a mapping of names, or a list of names or of mappings with a `name`).
void add_inputs(const recipe& r, const boost::json::object& context, engine::name_set& out) {
  for (const auto& kv : context) out.emplace(kv.key());
  for (const auto& [name, check] : r.context_validation) out.insert(name);
  out.insert(r.secrets.begin(), r.secrets.end());
  for (const auto* doc : {&r.inputs, &r.parameters}) {
    if (const auto* o = doc->if_object())
      for (const auto& kv : *o) out.emplace(kv.key());
    if (const auto* a = doc->if_array())
      for (const auto& item : *a) {
        if (const auto* s = item.if_string()) out.emplace(*s);
        const auto* o = item.if_object();
        if (const auto* name = o ? o->if_contains("name") : nullptr; name && name->is_string())
          out.emplace(name->get_string());
      }
  }
}

engine::name_set limit_names(const name_use& u) {
  engine::name_set known(u.providers.begin(), u.providers.end());
  std::vector<const recipe*> all = {u.top};
  all.insert(all.end(), u.called.begin(), u.called.end());
  for (const auto* r : all)
    for_each_step(*r, [&](const step& s, int) {
      if (!s.limit_group.empty()) known.insert(s.limit_group);
    });
  return known;
}

std::string limit_hint(std::string_view name, const engine::name_set& known) {
  auto hint = did_you_mean(name, candidates(known));
  if (hint.empty())
    hint = "a limit names an agent provider or a step's limit_group (known here: " + listed(known) +
           "); give a step 'limit_group: " + std::string(name) + "' to put it under this limit";
  return hint;
}

// docs/reference/recipe.md, limits: a name that is neither leaves the fan-out it was meant
// to cap uncapped.
void check_limits(const name_use& u, std::vector<diagnostic>& out) {
  // A recipe chosen at run time may bring the limit_group a limit names.
  if ((u.top->limits.empty() && u.limit_options.empty()) || u.dynamic_calls) return;
  const auto known = limit_names(u);
  for (const auto& [name, count] : u.top->limits) {
    if (known.contains(name)) continue;
    auto d = unused(u.top->limits_where,
                    "'limits' names '" + name + "', which is no agent provider and no step's limit_group: it limits nothing",
                    "limits", limit_hint(name, known));
    d.snippet = name;  // a renderer with the source points at the key inside the mapping
    out.push_back(std::move(d));
  }
  engine::name_set seen;
  for (const auto& name : u.limit_options) {
    if (known.contains(name) || !seen.insert(name).second) continue;
    source_location where;
    where.file = "--limit";
    out.push_back(unused(where,
                         "--limit " + name + ": no agent provider and no step's limit_group is named '" + name +
                             "': it limits nothing",
                         "limit", limit_hint(name, known)));
  }
}

// --set KEY on a recipe that never reads KEY: a misspelt name leaves the default in place.
void check_sets(const name_use& u, std::vector<diagnostic>& out) {
  if (u.set_keys.empty() || u.dynamic_calls) return;
  auto read = names_read(*u.top);
  add_inputs(*u.top, u.context_before_set ? *u.context_before_set : u.top->context, read);
  for (const auto* child : u.called) {
    read.merge(names_read(*child));
    add_inputs(*child, child->context, read);
  }
  engine::name_set seen;
  for (const auto& key : u.set_keys) {
    if (read.contains(key) || !seen.insert(key).second) continue;
    auto hint = did_you_mean(key, candidates(read));
    if (hint.empty())
      hint = "no {{" + key + "}}, condition or context key names it; a program a step starts may still read $RECIPE_VAR_" + key;
    source_location where;
    where.file = "--set";
    out.push_back(unused(where, "--set " + key + ": the recipe reads no '" + key + "'", "set", std::move(hint)));
  }
}

// docs/reference/recipe.md: `output: NAME` names the variable reported as the final output;
// a name nothing sets reports null whatever the run did.
void check_output(const name_use& u, std::vector<diagnostic>& out) {
  if (!u.top->output || u.dynamic_calls || u.declared.contains(*u.top->output)) return;
  const auto& name = *u.top->output;
  auto hint = did_you_mean(name, candidates(u.declared));
  if (hint.empty()) hint = "name a step's output (or collect) variable, or a context key";
  auto d = unused(u.top->where,
                  "the recipe's output '" + name + "' names no step output or context variable: the run's output "
                      "would be null",
                  "output", std::move(hint));
  // The recipe keeps no position of its `output` key: a renderer with the source finds the
  // line (written otherwise, say quoted, it points at the recipe's start).
  d.snippet = "output: " + name;
  out.push_back(std::move(d));
}

}  // namespace

std::set<std::string, std::less<>> names_read(const recipe& r) {
  engine::name_set out;
  auto add_steps = [&](const std::vector<step>& steps) {
    for (const auto& s : steps) out.merge(engine::names_read(s));
  };
  add_steps(r.steps);
  for (const auto& st : r.stages) {
    out.merge(engine::names_in_condition(st.condition));
    add_references(st.approval.prompt, out);
    add_steps(st.steps);
  }
  for (const auto& [name, value] : r.env) add_references(value, out), add_exported(value, out);
  for (const auto* hook : {&r.hooks.pre_step, &r.hooks.post_step, &r.hooks.on_error})
    add_references(*hook, out), add_exported(*hook, out);
  for_each_step(r, [&](const step& s, int) {
    add_exported(s.command, out);
    for (const auto& [name, value] : s.env) add_exported(value, out);
  });
  return out;
}

std::vector<diagnostic> unused_name_diagnostics(const name_use& u) {
  std::vector<diagnostic> out;
  if (!u.top) return out;
  check_limits(u, out);
  check_sets(u, out);
  check_output(u, out);
  return out;
}

}  // namespace arun
