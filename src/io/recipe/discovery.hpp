#pragma once
// Finding recipes by name and checking relative recipe paths (docs/running.md;
// docs/reference/recipe.md, "Sub-recipe steps").

#include <optional>
#include <string>
#include <vector>

namespace arun::io {

struct discovery_options {
  std::vector<std::string> recipe_dirs;  ///< -R DIR, in order
  std::string working_dir;               ///< -C (default: the current directory)
  std::string home;                      ///< $HOME
  std::string recipe_path_env;           ///< $ARUN_RECIPE_PATH, colon-separated
  std::string package_recipe_dir;        ///< $AMPLIHACK_PACKAGE_RECIPE_DIR (amplihack's installed recipes)
  std::vector<std::string> shipped_dirs; ///< arun's own examples (command_line_discovery), searched last
};

/// The options from the environment ($HOME, $ARUN_RECIPE_PATH, $AMPLIHACK_PACKAGE_RECIPE_DIR)
/// plus the given ones.
discovery_options discovery_from_environment(std::vector<std::string> recipe_dirs, std::string working_dir);

/// The same, plus the example recipes shipped with the running arun (install_layout.hpp):
/// for a recipe named on the command line and for `arun list`, never for a sub-recipe (a
/// missing sub-recipe must not quietly become one of arun's examples).
discovery_options command_line_discovery(std::vector<std::string> recipe_dirs, std::string working_dir);

/// The search order of docs/running.md: -R dirs, $ARUN_RECIPE_PATH, the calling recipe's directory
/// (when given), ./recipes, ./.claude/recipes, ./amplifier-bundle/recipes, then (as amplihack
/// looks) amplifier-bundle/recipes in each directory above `.` up to its git work tree's root,
/// $AMPLIHACK_PACKAGE_RECIPE_DIR, ~/.amplihack/.claude/recipes, and arun's shipped examples.
std::vector<std::string> search_dirs(const discovery_options& o, const std::string& caller_dir = {});

/// Why `name` cannot be a recipe name (contains '/', '..', starts with '.', empty), or empty.
std::string invalid_name_reason(const std::string& name);

struct found_recipe {
  std::string path;                    ///< empty when not found
  std::vector<std::string> looked_in;  ///< for the error message
};

/// The first NAME.yaml / NAME.yml in the search order.
found_recipe find_recipe(const std::string& name, const discovery_options& o, const std::string& caller_dir = {});

/// Whether a reference written in a recipe is a path (contains '/', ends in .yaml/.yml)
/// rather than a name. Unlike looks_like_path, the current directory plays no part.
bool is_path_reference(const std::string& ref);

/// Whether a RECIPE argument is a path (contains '/', ends in .yaml/.yml, or names an
/// existing file) rather than a name to discover (docs/running.md).
bool looks_like_path(const std::string& arg);

/// Resolves `relative` against `caller_dir`, symlinks included, and checks the result stays
/// inside one of `roots`. Returns the canonical path, or nullopt with `error` set.
std::optional<std::string> resolve_inside(const std::string& relative, const std::string& caller_dir,
                                          const std::vector<std::string>& roots, std::string& error);

/// The roots a relative recipe path (sub-recipe or extends parent) must stay inside, for the
/// top-level recipe at `top_path` (docs/reference/recipe.md, "Sub-recipe steps"): its directory,
/// its git work tree, the working directory and the -R directories.
std::vector<std::string> recipe_roots(const std::string& top_path, const discovery_options& discovery);

/// The git work tree containing `dir` (searching upward for `.git`), or empty.
std::string git_work_tree(const std::string& dir);

}  // namespace arun::io
