#pragma once
/// Recipe-wide checks that need more than one field (docs/reference/recipe.md;
/// docs/reference/templates.md, "Undefined references") and what this version of the engine can
/// run. Pure: no files are read.

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

struct validation_options {
  /// `--set` keys count as declared (docs/reference/templates.md, "Undefined references")
  std::set<std::string, std::less<>> set_keys;
  bool strict = false;   ///< unknown keys are errors (the loader's warnings are upgraded by the caller)
  bool lenient = false;  ///< undeclared references are warnings
  /// Names declared by the sub-recipes the recipe calls (docs/reference/templates.md,
  /// "Undefined references"), found by the caller.
  std::set<std::string, std::less<>> sub_recipe_names;
  /// Some `recipe:` is a template, so its outputs are unknown: undeclared names only warn.
  bool dynamic_sub_recipes = false;
};

/// Unique ids, id syntax, depends_on targets and cycles, gates where they cannot run, and
/// every {{reference}} against the names the recipe declares.
std::vector<diagnostic> validate_recipe(const recipe& r, const validation_options& options = {});

/// The names a recipe declares anywhere: context keys, outputs, collect and
/// output_exit_code names, loop variables, and the built-ins (docs/reference/recipe.md,
/// "Built-in variables").
std::set<std::string, std::less<>> declared_names(const recipe& r, const validation_options& options = {});

/// The script a bash step with `command` runs, each {{reference}} rewritten to its variable
/// expansion (values are stand-ins), for static checks such as `bash -n`; nullopt when the
/// command cannot be rewritten (validation reports why).
std::optional<std::string> bash_script_preview(const std::string& command);

/// Whether bash's reading of `script` ends where the text ends: false when a quote, `$( )`,
/// backticks, a heredoc or a trailing backslash is still open, so text appended to the script
/// would be read as part of it (`validate` then checks the script with a bash of its own).
bool bash_script_closed(std::string_view script);

/// Fields this version of the engine cannot run yet: `run` refuses such recipes (exit 2)
/// instead of running them differently from what they say.
std::vector<diagnostic> unsupported_features(const recipe& r);

}  // namespace arun
