#pragma once
// Validation-time check that every agent a recipe names can be found (SPEC §11.2).

#include "agent_resolution.hpp"

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <vector>

namespace arun::io {

/// One diagnostic per agent step (loop bodies and stages included) whose `agent` does not
/// resolve, at the `agent` key: an error, or a warning with `allow_missing`. References
/// containing `{{` are skipped (they are rendered at run time), as are empty ones (the agent
/// CLI's default agent).
std::vector<diagnostic> check_agent_references(const recipe& r, const agent_search& search, bool allow_missing);

}  // namespace arun::io
