#include "recipe/recipe_chain.hpp"

#include <algorithm>
#include <filesystem>

namespace arun::io {
namespace fs = std::filesystem;

namespace {

diagnostic error_at(const source_location& where, std::string message) {
  diagnostic d;
  d.where = where;
  d.message = std::move(message);
  d.key = "extends";
  d.code = "extends";
  return d;
}

std::string canonical_or_same(const std::string& path) {
  std::error_code ec;
  auto c = fs::canonical(path, ec);
  return ec ? path : c.string();
}

// The parent file: a path (kept inside the allowed roots), or a name next to the child
// (NAME.yaml/.yml), then by discovery. Empty with `error` set when there is none.
std::string find_parent(const recipe& child, const discovery_options& discovery,
                        const std::vector<std::string>& roots, std::string& error) {
  const auto dir = fs::absolute(child.source_path).parent_path();
  if (is_path_reference(child.extends)) {
    auto path = resolve_inside(child.extends, dir.string(), roots, error);
    return path.value_or(std::string());
  }
  if (auto why = invalid_name_reason(child.extends); !why.empty()) {
    error = why;
    return {};
  }
  error = "no such recipe next to this file or in the recipe search path";
  for (const auto& candidate : {child.extends + ".yaml", child.extends + ".yml"}) {
    std::error_code ec;
    const auto p = dir / candidate;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return find_recipe(child.extends, discovery, dir.string()).path;
}

load_result load_chain(const std::string& path, const discovery_options& discovery, const load_limits& limits,
                       std::vector<std::string>& chain, const std::vector<std::string>& roots) {
  auto loaded = load_recipe_file(path, limits);
  if (!loaded.value || loaded.value->extends.empty()) return loaded;
  const auto& child = *loaded.value;
  std::string why;
  const auto parent_path = find_parent(child, discovery, roots, why);
  if (parent_path.empty()) {
    loaded.diagnostics.push_back(error_at(child.extends_where, "extends '" + child.extends + "': " + why));
    loaded.value.reset();
    return loaded;
  }
  const auto key = canonical_or_same(parent_path);
  if (std::find(chain.begin(), chain.end(), key) != chain.end()) {
    std::string names;
    for (const auto& c : chain) names += fs::path(c).filename().string() + " -> ";
    loaded.diagnostics.push_back(error_at(child.extends_where, "extends forms a cycle: " + names + fs::path(key).filename().string()));
    loaded.value.reset();
    return loaded;
  }
  chain.push_back(key);
  auto parent = load_chain(parent_path, discovery, limits, chain, roots);
  loaded.diagnostics.insert(loaded.diagnostics.end(), parent.diagnostics.begin(), parent.diagnostics.end());
  if (!parent.value) {
    loaded.value.reset();
    return loaded;
  }
  const bool mixed = (!parent.value->stages.empty() && !child.steps.empty()) ||
                     (!parent.value->steps.empty() && !child.stages.empty());
  if (mixed) {
    loaded.diagnostics.push_back(error_at(child.extends_where, "extends '" + child.extends +
                                                                   "': one of the two uses stages and the other steps; use the same form"));
    loaded.value.reset();
    return loaded;
  }
  loaded.value = merge_extended(std::move(*parent.value), std::move(*loaded.value));
  return loaded;
}

// Steps with the same id replace the parent's in place; new ones are appended.
void merge_steps(std::vector<step>& base, std::vector<step>&& overrides) {
  for (auto& s : overrides) {
    auto it = std::find_if(base.begin(), base.end(), [&](const step& b) { return b.id == s.id; });
    if (it != base.end())
      *it = std::move(s);
    else
      base.push_back(std::move(s));
  }
}

}  // namespace

recipe merge_extended(recipe parent, recipe child) {
  recipe merged = std::move(child);
  boost::json::object context = std::move(parent.context);
  for (auto& kv : merged.context) context[kv.key()] = std::move(kv.value());
  merged.context = std::move(context);
  // env merges like context: the child's value of a name wins, the parent's others stay first.
  auto env = std::move(parent.env);
  for (auto& entry : merged.env) {
    auto same = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == entry.first; });
    if (same != env.end()) same->second = std::move(entry.second);
    else env.emplace_back(std::move(entry));
  }
  merged.env = std::move(env);
  for (auto& name : parent.secrets)  // the parent's secrets stay secrets
    if (std::find(merged.secrets.begin(), merged.secrets.end(), name) == merged.secrets.end())
      merged.secrets.push_back(std::move(name));
  if (merged.secrets_where.line == 0) merged.secrets_where = parent.secrets_where;
  merge_steps(parent.steps, std::move(merged.steps));
  merged.steps = std::move(parent.steps);
  if (merged.stages.empty()) merged.stages = std::move(parent.stages);
  if (!merged.hooks_set) merged.hooks = parent.hooks, merged.hooks_set = parent.hooks_set;
  if (!merged.recursion_set) merged.recursion = parent.recursion, merged.recursion_set = parent.recursion_set;
  if (merged.description.empty()) merged.description = parent.description;
  if (merged.tags.empty()) merged.tags = parent.tags;
  if (!merged.default_step_timeout) merged.default_step_timeout = parent.default_step_timeout;
  if (!merged.output) merged.output = parent.output;
  merged.resources = inherit_resources(merged.resources, parent.resources);
  if (merged.execution == execution_mode::sequential) merged.execution = parent.execution;
  for (auto& cv : parent.context_validation)
    if (std::none_of(merged.context_validation.begin(), merged.context_validation.end(),
                     [&](const auto& m) { return m.first == cv.first; }))
      merged.context_validation.push_back(cv);
  // limits merge per name (the child's count wins); a budget is inherited whole.
  for (auto& [name, count] : parent.limits) merged.limits.emplace(name, count);
  if (merged.limits_where.line == 0) merged.limits_where = parent.limits_where;
  if (merged.budget.empty()) merged.budget = parent.budget, merged.budget_where = parent.budget_where;
  if (!merged.rate_limiting.max_concurrent_llm) merged.rate_limiting.max_concurrent_llm = parent.rate_limiting.max_concurrent_llm;
  if (!merged.rate_limiting.min_delay_ms) merged.rate_limiting.min_delay_ms = parent.rate_limiting.min_delay_ms;
  auto& backoff = merged.rate_limiting.backoff;
  const auto& inherited = parent.rate_limiting.backoff;
  if (!backoff.max_retries) backoff.max_retries = inherited.max_retries;
  if (!backoff.initial_delay) backoff.initial_delay = inherited.initial_delay;
  if (!backoff.max_delay) backoff.max_delay = inherited.max_delay;
  if (!backoff.multiplier) backoff.multiplier = inherited.multiplier;
  merged.extends.clear();  // the chain is resolved
  return merged;
}

load_result load_recipe_chain(const std::string& path, const discovery_options& discovery, const load_limits& limits) {
  std::vector<std::string> chain = {canonical_or_same(path)};
  return load_chain(path, discovery, limits, chain, recipe_roots(path, discovery));
}

}  // namespace arun::io
