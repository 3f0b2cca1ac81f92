#pragma once
// Static look at the sub-recipes a recipe calls (docs/reference/recipe.md, "Sub-recipe steps";
// docs/reference/templates.md, "Undefined references"): every `recipe:` step is resolved and
// loaded, so that `validate` reports missing ones and the names the children declare count as
// declared in the parent.

#include "recipe/discovery.hpp"
#include "recipe/recipe_loader.hpp"

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>
#include <arun/validation.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace arun::io {

struct sub_recipe_scan {
  std::set<std::string, std::less<>> declared;  ///< names declared by the children (and theirs)
  std::vector<diagnostic> diagnostics;          ///< sub-recipes that cannot be found or loaded
  bool dynamic_calls = false;                   ///< a `recipe:` is a template: unknown until run time
  std::vector<recipe> children;                 ///< every sub-recipe loaded, once each (for agent checks)
};

/// Resolves one `recipe:` reference made from `caller_file`; empty with `error` set if it fails.
/// With `sources` (a resumed session), a path reference to a file removed since the session
/// started resolves to where it was, so its saved copy is used.
std::string resolve_sub_recipe(const std::string& reference, const std::string& caller_file,
                               const discovery_options& discovery, const std::vector<std::string>& roots,
                               std::string& error, recipe_sources* sources = nullptr);

/// The recipes `recipe:` steps call, resolved and loaded on demand, each file once (for views
/// of the call tree such as `graph --expand`).
class sub_recipe_cache {
public:
  sub_recipe_cache(const recipe& top, discovery_options discovery, load_limits limits = {});
  /// The recipe `call` (a step of `caller`) runs; null when its reference is a template or it
  /// does not resolve or load (validation reports why).
  const recipe* find(const recipe& caller, const step& call);

private:
  discovery_options discovery_;
  load_limits limits_;
  std::vector<std::string> roots_;
  std::map<std::string, std::unique_ptr<recipe>> by_path_;  // null: tried, does not load
};

/// Loads every sub-recipe reachable from `top` (each file once; cycles are the run's business).
/// With `check` (the top's validation options), every sub-recipe is also validated once per
/// call against the names that call passes it, so that a reference nothing along the call
/// chain declares is an error before the first step runs, not in the middle of the run.
sub_recipe_scan scan_sub_recipes(const recipe& top, const discovery_options& discovery, const load_limits& limits = {},
                                 const validation_options* check = nullptr);

}  // namespace arun::io
