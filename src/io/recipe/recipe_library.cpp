#include "recipe/recipe_library.hpp"

#include "recipe/recipe_chain.hpp"
#include "recipe/sub_recipes.hpp"

#include <arun/validation.hpp>

#include <filesystem>

namespace arun::io {

namespace fs = std::filesystem;

recipe_library::recipe_library(discovery_options discovery, const std::string& top_path, load_limits limits)
    : discovery_(std::move(discovery)), roots_(recipe_roots(top_path, discovery_)), limits_(limits) {}

loaded_recipe recipe_library::load(std::string_view reference, const recipe& caller) {
  loaded_recipe out;
  const std::string ref(reference);
  const auto path = resolve_sub_recipe(ref, caller.source_path, discovery_, roots_, out.error, limits_.sources);
  if (path.empty()) return out;
  std::error_code ec;
  const auto key = fs::weakly_canonical(path, ec).string();
  if (auto it = by_path_.find(key); it != by_path_.end()) return it->second;

  auto loaded = load_recipe_chain(path, discovery_, limits_);
  std::vector<diagnostic> problems = std::move(loaded.diagnostics);
  if (loaded.value) {
    validation_options vo;
    // A sub-recipe reads what its caller's context holds at run time: names it does not
    // declare itself are checked when it runs (against the caller's names), not here.
    vo.lenient = true;
    auto children = scan_sub_recipes(*loaded.value, discovery_);
    vo.sub_recipe_names = std::move(children.declared);
    vo.dynamic_sub_recipes = children.dynamic_calls;
    for (auto& more : {validate_recipe(*loaded.value, vo), unsupported_features(*loaded.value)})
      problems.insert(problems.end(), more.begin(), more.end());
  }
  // The first error on the first line: progress and text results show only that line.
  std::string errors;
  for (const auto& d : problems)
    if (d.level == severity::error) errors += (errors.empty() ? " " : "\n  ") + format_diagnostic(d);
  if (!loaded.value || !errors.empty()) {
    out.error = "sub-recipe '" + ref + "' is not valid:" + errors;
  } else if (auto why = provide_secrets_ ? provide_secrets_(*loaded.value) : std::string(); !why.empty()) {
    out.error = "sub-recipe '" + ref + "': " + why;
  } else {
    out.value = std::make_shared<const recipe>(std::move(*loaded.value));
  }
  by_path_.emplace(key, out);
  return out;
}

}  // namespace arun::io
