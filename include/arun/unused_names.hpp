#pragma once
/// Names given to arun that nothing uses: a `limits:` key or `--limit NAME` that is neither
/// an agent provider nor a `limit_group` (the fan-out it was meant to cap runs uncapped), a
/// `--set KEY` the recipe never reads, a top-level `output:` naming no variable. Each is a
/// warning with the nearest name ("did you mean"), an error under `--strict` (the caller
/// upgrades warnings). docs/running.md, "Names nothing uses". Pure: no files are read.

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <boost/json/object.hpp>

#include <set>
#include <string>
#include <vector>

namespace arun {

struct name_use {
  const recipe* top = nullptr;
  /// The sub-recipes `top` calls by a fixed reference: their limit groups and what they read
  /// count too (a child starts from its parent's context).
  std::vector<const recipe*> called;
  /// Some `recipe:` is a template: what that child reads, declares and limits is unknown, so
  /// nothing is checked.
  bool dynamic_calls = false;
  /// Every name the recipe declares (validation's declared_names, sub-recipes' names included).
  std::set<std::string, std::less<>> declared;
  std::vector<std::string> set_keys;       ///< `--set KEY=…`: the KEY (before any '.'), as given
  /// `top`'s context as written, before --set added its keys; none: `top->context`.
  const boost::json::object* context_before_set = nullptr;
  std::vector<std::string> limit_options;  ///< `--limit NAME=N`: the NAME, as given
  /// The agent providers a limit can name (claude, codex, copilot, fake, the run's own).
  std::vector<std::string> providers;
};

/// The root names `r` reads anywhere: {{reference}} roots, bare names of conditions, and
/// `RECIPE_VAR_NAME` written in a command, an env value or a hook (every context key is
/// exported so; docs/reference/templates.md).
std::set<std::string, std::less<>> names_read(const recipe& r);

/// The diagnostics of the names `u` gives that nothing uses, as warnings.
std::vector<diagnostic> unused_name_diagnostics(const name_use& u);

}  // namespace arun
