#include "sub_recipes.hpp"

#include "recipe_chain.hpp"

#include <arun/validation.hpp>

#include <filesystem>

namespace arun::io {
namespace fs = std::filesystem;

std::string resolve_sub_recipe(const std::string& reference, const std::string& caller_file,
                               const discovery_options& discovery, const std::vector<std::string>& roots,
                               std::string& error, recipe_sources* sources) {
  const auto caller_dir = fs::absolute(caller_file).parent_path().string();
  if (is_path_reference(reference) && sources) {
    // Resume: the session's copy stands in for a file removed since the run started.
    std::error_code ec;
    const auto candidate = fs::weakly_canonical(fs::path(caller_dir) / reference, ec).string();
    if (!ec && !fs::exists(candidate, ec) && sources->saved(candidate)) return candidate;
  }
  if (is_path_reference(reference)) {
    auto path = resolve_inside(reference, caller_dir, roots, error);
    return path.value_or(std::string());
  }
  if (auto why = invalid_name_reason(reference); !why.empty()) {
    error = "sub-recipe '" + reference + "': " + why;
    return {};
  }
  auto found = find_recipe(reference, discovery, caller_dir);
  if (found.path.empty()) {
    std::string dirs;
    for (const auto& d : found.looked_in) dirs += (dirs.empty() ? "" : ", ") + d;
    error = "sub-recipe '" + reference + "' not found (looked for " + reference + ".yaml and " + reference +
            ".yml in " + (dirs.empty() ? std::string("no directory") : dirs) + ")";
    return {};
  }
  // Found by name, it is held to the rule a path is held to: a symlink in a search directory
  // must not lead outside it and the recipe's roots.
  auto allowed = roots;
  allowed.push_back(found.looked_in.back());
  std::string outside;
  if (auto inside = resolve_inside(found.path, caller_dir, allowed, outside)) return *inside;
  error = "sub-recipe '" + reference + "': " + outside + ", and the directory it was found in";
  return {};
}

sub_recipe_scan scan_sub_recipes(const recipe& top, const discovery_options& discovery, const load_limits& limits) {
  sub_recipe_scan scan;
  const auto roots = recipe_roots(top.source_path, discovery);
  std::set<std::string> loaded;
  std::vector<recipe> pending = {top};
  while (!pending.empty()) {
    const recipe current = std::move(pending.back());
    pending.pop_back();
    for_each_step(current, [&](const step& s, int) {
      if (s.type != step_type::recipe) return;
      if (s.call.recipe.find("{{") != std::string::npos) {
        scan.dynamic_calls = true;
        return;
      }
      std::string error;
      const auto path = resolve_sub_recipe(s.call.recipe, current.source_path, discovery, roots, error, limits.sources);
      if (path.empty()) {
        diagnostic d;
        d.where = s.at("recipe");
        d.message = error + " (step '" + s.id + "')";
        d.key = "recipe";
        scan.diagnostics.push_back(std::move(d));
        return;
      }
      const auto key = fs::weakly_canonical(path).string();
      if (!loaded.insert(key).second) return;
      auto child = load_recipe_chain(path, discovery, limits);
      if (!child.value) {
        diagnostic d;
        d.where = s.at("recipe");
        d.message = "sub-recipe " + path + " of step '" + s.id + "' does not load (arun validate " + path + ")";
        d.key = "recipe";
        scan.diagnostics.push_back(std::move(d));
        return;
      }
      for (const auto& name : declared_names(*child.value)) scan.declared.insert(name);
      scan.children.push_back(*child.value);
      pending.push_back(std::move(*child.value));
    });
  }
  return scan;
}

}  // namespace arun::io
