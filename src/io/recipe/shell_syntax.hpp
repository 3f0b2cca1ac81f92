#pragma once
// `validate` runs `bash -n` on every bash step's script, as it will run (each {{reference}}
// rewritten to its variable expansion), so a shell syntax error is found before the run, at
// its line in the recipe. `bash -n` reads and never executes.

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <vector>

namespace arun::io {

/// One error per bash step whose script bash refuses, pointing at the offending line. Scripts
/// whose templates cannot be rewritten (the engine reports those) are skipped; identical
/// scripts are checked once; a few bash processes run at a time.
std::vector<diagnostic> check_shell_syntax(const std::vector<const recipe*>& recipes);

}  // namespace arun::io
