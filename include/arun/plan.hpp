#pragma once
/// `--dry-run` (docs/reference/formats.md, "Dry-run plan"): what a run would do, without running
/// anything. Conditions are evaluated where they can be: against the initial context (with --set),
/// not against outputs that only running steps would produce.

#include <arun/engine.hpp>
#include <arun/recipe.hpp>

#include <string>
#include <vector>

namespace arun {

enum class plan_verdict {
  runs,        ///< no condition, or it holds against the initial context; tags allow it
  skipped,     ///< its condition is false, or a tag filter skips it
  at_run_time, ///< its condition reads values only earlier steps produce
  error,       ///< its condition cannot be evaluated: the step would fail
};

std::string_view to_string(plan_verdict v) noexcept;

struct planned_step {
  std::string step;   ///< the declared id, nested ids as `loop/child`
  int depth = 0;      ///< 0 for top-level steps, +1 per loop body
  std::string type;   ///< bash, agent, recipe, loop, gate
  std::string what;   ///< the command's first line, the sub-recipe, the loop, the prompt
  plan_verdict verdict = plan_verdict::runs;
  std::string reason;  ///< why skipped / decided at run time / the error
  std::string stage;   ///< the stage, when the recipe has stages
};

/// The plan of `r` under `options` (tags, template mode); pure.
std::vector<planned_step> plan_run(const recipe& r, const run_options& options);

/// `execution: dag` (docs/reference/recipe.md, "depends_on and execution: dag"): for each of
/// `steps`, the indices (into `steps`) of the steps it waits for — its depends_on and the steps
/// whose outputs it reads — sorted.
std::vector<std::vector<std::size_t>> dag_waits_for(const std::vector<step>& steps);

/// Whether stage `st`'s approval gate is asked after its steps rather than before: `when`
/// says so, or (automatic) its prompt reads outputs only the stage's own steps produce.
bool stage_gate_runs_after(const stage& st, const recipe& r);

}  // namespace arun
