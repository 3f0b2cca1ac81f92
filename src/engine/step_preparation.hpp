#pragma once
// Turning a declared bash step into what the runner executes, against the current context:
// the condition (docs/reference/conditions.md), the shell rendering of `command`
// (docs/reference/templates.md, "Templates in bash commands"), the context export
// (docs/reference/templates.md, "The context in the environment"), rendered `env` values and
// `working_dir` (docs/reference/recipe.md, "Fields of every step"). Pure: nothing runs here.

#include "shell/context_export.hpp"
#include "template/render.hpp"

#include <arun/recipe.hpp>
#include <arun/step_runner.hpp>

#include <string>
#include <vector>

namespace arun::engine {

struct condition_verdict {
  bool run = true;
  std::vector<std::string> warnings;
  std::string error;  ///< the condition could not be evaluated: the step fails
};

/// Evaluates the step's `condition` (an empty one means run).
condition_verdict check_condition(const step& s, const render_scope& scope);

/// Evaluates a condition expression such as `while_condition` or `break_when`; `what` names it
/// in errors. An empty text is true.
condition_verdict check_expression(const std::string& text, std::string_view what, const render_scope& scope);

struct prepared_bash {
  bash_invocation invocation;
  std::vector<std::string> warnings;
  std::string error;  ///< the step cannot run (an undefined reference, a non-integer in arithmetic, ...)
};

/// The recipe's own `env`, which comes before each step's.
using env_list = std::vector<std::pair<std::string, std::string>>;

/// Renders the step; `invocation.timeout` and `on_line` are left for the caller.
/// `context_table` is the export table of `scope.context` when the caller keeps one.
prepared_bash prepare_bash(const step& s, const render_scope& scope, const env_list& recipe_env = {},
                           const context_export_table* context_table = nullptr);

/// Ends every agent prompt so a nested agent never waits for an answer (docs/agents.md,
/// "Running agent steps").
inline constexpr std::string_view non_interactive_footer = "Proceed autonomously. Do not ask questions.";
/// Appended to the prompt when a `parse_json` step's reply held no JSON (docs/agents.md,
/// "Output, JSON and flaky agents").
inline constexpr std::string_view json_only_reminder =
    "IMPORTANT: your previous reply to this prompt contained no valid JSON. Reply with only the "
    "JSON value that was asked for: no prose before or after it, no Markdown code fence.";

struct prepared_agent {
  agent_invocation invocation;
  std::vector<std::string> warnings;
  std::string error;
};

/// Renders an agent call of step `s` (its own `agent` fields, or its `recovery_on_failure`):
/// `working_dir` and `env` from the step, then agent, model and prompt, which also see
/// `working_directory` (the step's directory below `run_dir`) and `NONINTERACTIVE` ("1") when
/// the scope has neither. The prompt gets `MODE: <mode>` in front and the non-interactive
/// footer at the end. `invocation.timeout` and `on_line` are left for the caller.
prepared_agent prepare_agent(const agent_call& call, const step& s, const render_scope& scope,
                             const std::string& run_dir, const env_list& recipe_env = {});

}  // namespace arun::engine
