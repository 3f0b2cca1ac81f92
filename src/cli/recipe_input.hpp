#pragma once
// Turning a RECIPE argument and the shared options into a checked recipe, printing every
// diagnostic on stderr. Shared by `run` and `validate`.

#include "agents/agent_cli.hpp"
#include "recipe/recipe_loader.hpp"

#include <arun/recipe.hpp>

#include <boost/json/array.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace arun::cli {

struct recipe_options {
  std::string recipe;                    ///< a file, or a name found by discovery
  std::vector<std::string> recipe_dirs;  ///< -R
  std::string working_dir;               ///< -C
  std::vector<std::string> sets;  ///< --set KEY=VALUE, in order
  /// resume: how many of `sets` are the run's own, kept in the session; a name nothing reads
  /// among them was reported when the run started, so it is not reported again
  std::size_t stored_sets = 0;
  std::vector<std::string> secrets;      ///< --secret KEY=VALUE, or KEY (the value read from stdin)
  std::vector<std::string> secret_files; ///< --secret-file KEY=PATH
  std::vector<std::string> secret_envs;  ///< --secret-env KEY: the value of $KEY
  /// run, resume: a secret the recipe names (`secrets:`) must have a value
  bool resolve_secrets = false;
  bool strict = false;
  bool lenient = false;
  std::size_t max_recipe_bytes = 1u << 20;  ///< docs/reference/recipe.md, "The file": larger recipe files are refused
  bool check_agents = false;               ///< set by add_agent_options (validate, run)
  std::vector<std::string> agent_dirs;     ///< --agent-dir, in order
  bool allow_missing_agents = false;       ///< unresolvable agents are warnings, not errors
  /// a session's copies of recipe files (docs/sessions.md, "Where sessions live")
  io::recipe_sources* sources = nullptr;
  std::string color = "auto";              ///< --color: auto, always or never
  bool check_shell = false;                ///< `bash -n` every bash script (validate)
  bool check_schema = false;               ///< the JSON Schema check of every file (validate)
  /// validate: a warning when the recipe has agent steps and this CLI is not installed.
  const io::agent_cli* check_agent_cli = nullptr;
  /// --limit NAME=N of run and resume: the NAMEs, each checked against the agent providers
  /// and the recipe's limit groups (a name that is neither limits nothing).
  std::vector<std::string> limit_names;
  /// The run's own agent provider, which a limit can name beside the presets' (claude,
  /// codex, copilot, fake); add_limit_checks fills both.
  std::vector<std::string> limit_providers;
  /// Diagnostics go to recipe_input::diagnostics as JSON instead of stderr as text
  /// (`--output-format json`).
  bool diagnostics_json = false;
};

/// Whether stderr gets colour: --color always/never, else a terminal without NO_COLOR or TERM=dumb.
bool stderr_color(const std::string& choice);

/// A secret's value and where it came from: "flag" (--secret), "file" (--secret-file, with
/// the file's absolute `path`), "env" (--secret-env or the recipe's `secrets:`). The session
/// keeps the name, the source and the path, never the value.
struct secret_value {
  std::string name, value, source, path;
};

struct recipe_input {
  std::optional<recipe> value;  ///< set when loading and validation found no error
  std::vector<recipe> sub_recipes;  ///< every sub-recipe it names by a fixed reference, loaded once each
  int exit_code = 0;            ///< 2, 3 or 4 when `value` is empty (docs/reference/exit-codes.md)
  std::string path;                ///< the recipe file RECIPE named; empty when none was found
  std::size_t errors = 0, warnings = 0;
  boost::json::array diagnostics;  ///< with recipe_options::diagnostics_json: every diagnostic
  std::vector<secret_value> secrets;  ///< in the recipe's context; to be masked everywhere
};

/// Loads, applies --set, validates (agent references too when `o.check_agents`). With `for_run`, features the engine cannot run yet are
/// errors too.
recipe_input load_recipe_input(const recipe_options& o, bool for_run);

/// The absolute directory of a recipe file (where its agents/ folder is looked for).
std::string recipe_directory(const std::string& path);

}  // namespace arun::cli
