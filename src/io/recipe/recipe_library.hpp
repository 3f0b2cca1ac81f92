#pragma once
// The engine's recipe_source for a run: sub-recipes found by discovery or by path relative
// to the caller (docs/reference/recipe.md, "Sub-recipe steps", "extends"), loaded with their
// extends chain, validated, and kept for the rest of the run (a foreach calling one sub-recipe
// 1,000 times reads it once).

#include "recipe/discovery.hpp"
#include "recipe/recipe_loader.hpp"

#include <arun/run_services.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace arun::io {

class recipe_library final : public recipe_source {
public:
  /// `top_path` is the top-level recipe's file: relative paths must stay inside its roots.
  recipe_library(discovery_options discovery, const std::string& top_path, load_limits limits = {});

  loaded_recipe load(std::string_view reference, const recipe& caller) override;

  /// Fills a loaded sub-recipe's `secrets:` into its context; returns why it cannot (then
  /// the sub-recipe does not load), or empty.
  void provide_secrets(std::function<std::string(recipe&)> provide) { provide_secrets_ = std::move(provide); }

private:
  std::function<std::string(recipe&)> provide_secrets_;
  discovery_options discovery_;
  std::vector<std::string> roots_;
  load_limits limits_;
  std::map<std::string, loaded_recipe, std::less<>> by_path_;
};

}  // namespace arun::io
