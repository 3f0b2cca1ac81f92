#pragma once
// Validation-time check that every agent a recipe names can be found (docs/agents.md,
// "Resolution order").

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
/// PATH (the agent gets that one), or when the program is a template placeholder. With
/// `must_run` (agent_step_that_must_run): an error at that step, as the run cannot succeed.
std::optional<diagnostic> check_agent_cli(const std::vector<const recipe*>& recipes, const agent_cli& cli,
                                          const std::vector<std::string>& env, severity level,
                                          const step* must_run = nullptr);

/// An agent step of `r` that runs whenever the run does not fail before it: a top-level step
/// with no condition, no tags and no `--include-tags` filter, no loop, no on_error that
/// accepts its failure, and no `cache:` (a warm cache starts no CLI). Without its agent CLI
/// such a run cannot succeed, so the CLI's absence is an error before anything runs
/// (docs/agents.md, "Choosing the CLI"), not a warning. Null: none. `leaves_run_here` false
/// (`--executor slurm`): only `executor: local` steps count, as the others start their CLI on
/// a node, which may have it when this machine does not.
const step* agent_step_that_must_run(const recipe& r, bool tag_filter, bool leaves_run_here);

}  // namespace arun::io
