#pragma once
// Validation-time check that every agent a recipe names can be found (SPEC §11.2).

#include "agents/agent_cli.hpp"
#include "agents/agent_resolution.hpp"

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <optional>
#include <string>
#include <vector>

namespace arun::io {

/// One diagnostic per agent step (loop bodies and stages included) whose `agent` does not
/// resolve, at the `agent` key: an error, or a warning with `allow_missing`. References
/// containing `{{` are skipped (they are rendered at run time), as are empty ones (the agent
/// CLI's default agent).
std::vector<diagnostic> check_agent_references(const recipe& r, const agent_search& search, bool allow_missing);

/// When `recipes` have an agent step (or a recovery_on_failure agent) and `cli`'s program is
/// not on the PATH of `env`: a diagnostic at the first such step naming the CLI, the program
/// and where it was looked for. Nothing when no step needs an agent CLI, when an `env` sets
/// PATH (the agent gets that one), or when the program is a template placeholder.
std::optional<diagnostic> check_agent_cli(const std::vector<const recipe*>& recipes, const agent_cli& cli,
                                          const std::vector<std::string>& env, severity level);

}  // namespace arun::io
