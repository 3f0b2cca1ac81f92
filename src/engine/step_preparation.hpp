#pragma once
// Turning a declared bash step into what the runner executes, against the current context:
// the condition (SPEC §5.5), the shell rendering of `command` (§5.3), the context export
// (§5.4), rendered `env` values and `working_dir` (§3.3). Pure: nothing runs here.

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

/// Renders the step; `invocation.timeout` and `on_line` are left for the caller.
prepared_bash prepare_bash(const step& s, const render_scope& scope);

}  // namespace arun::engine
