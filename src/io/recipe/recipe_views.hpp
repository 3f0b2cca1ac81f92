#pragma once
// Static views of a recipe (docs/cli.md, "arun explain"): `explain` (the plan as text) and `graph`
// (DOT or Mermaid). Pure formatting of the model.

#include <arun/recipe.hpp>

#include <boost/json/object.hpp>

#include <functional>
#include <string>

namespace arun::io {

/// The plan: steps with their types, conditions, loops, groups, sub-recipe calls, gates,
/// context defaults and documentation fields.
std::string explain_recipe(const recipe& r);

/// The same plan as a JSON document: the header, `recipe` (name, version, file, execution,
/// context defaults, …), `steps` and `stages`, each step `{step_id, type, …, steps}` with only
/// the keys it uses (docs/running.md, "Machine-readable output").
boost::json::object explain_to_json(const recipe& r);

enum class graph_format { dot, mermaid };

/// The recipe a `recipe:` step of `caller` calls, for `graph --expand`; null when it is known
/// only at run time (a template) or does not load.
using sub_recipe_lookup = std::function<const recipe*(const recipe& caller, const step& call)>;

struct graph_options {
  graph_format format = graph_format::dot;
  sub_recipe_lookup expand;  ///< set: sub-recipes are drawn inside their call, as clusters
  int max_depth = 6;         ///< sub-recipe levels drawn (recursion.max_depth's default)
};

/// The flow as it runs: a condition is a decision whose skip edge leads to what follows
/// (the next decision, when that step has a condition too); a parallel group fans out from
/// a fork and in to a join; `execution: dag` steps follow their dependencies, not their
/// order; a loop is one node with its body in a cluster; a stage is a cluster with its gate;
/// sequential `depends_on` is a dashed edge (it orders nothing).
std::string graph_recipe(const recipe& r, const graph_options& options);

}  // namespace arun::io
