#pragma once
// `extends` (docs/reference/recipe.md, "extends"): loading a recipe together with its chain of
// parents, merged.

#include "recipe/discovery.hpp"
#include "recipe/recipe_loader.hpp"

#include <arun/recipe.hpp>

#include <string>

namespace arun::io {

/// Loads `path`; when it `extends` a parent (looked up next to the child file, then by
/// discovery), loads the chain and merges it: context merges (child wins), steps with the
/// same id replace the parent's in place, new ones are appended, hooks and recursion are
/// inherited unless set. A cycle is an error naming the chain.
load_result load_recipe_chain(const std::string& path, const discovery_options& discovery,
                              const load_limits& limits = {});

/// The merge itself (pure): `child` over `parent`.
recipe merge_extended(recipe parent, recipe child);

}  // namespace arun::io
