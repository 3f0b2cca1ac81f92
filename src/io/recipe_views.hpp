#pragma once
// Static views of a recipe (SPEC §13): `explain` (the plan as text) and `graph` (DOT or
// Mermaid). Pure formatting of the model.

#include <arun/recipe.hpp>

#include <boost/json/object.hpp>

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

/// Steps as nodes in order; conditions as diamonds with a skip edge; parallel groups and
/// loops as clusters (subgraphs); sub-recipe calls and approval gates with their own
/// shapes; depends_on as dashed edges.
std::string graph_recipe(const recipe& r, graph_format format);

}  // namespace arun::io
