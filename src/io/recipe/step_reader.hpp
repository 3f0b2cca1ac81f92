#pragma once
// Reading one step (docs/reference/recipe.md, "Steps") out of its YAML mapping: common fields,
// aliases, type inference and the fields of each step type. Cross-step rules (unique ids,
// depends_on, references) are the validator's.

#include "recipe/recipe_loader.hpp"
#include "recipe/yaml_fields.hpp"

#include <arun/recipe.hpp>

namespace arun::io {

/// Reads the step at `node`; `std::nullopt` when it is not a mapping. Nested `steps` are read
/// recursively (depth-limited by the document's own nesting limit). Files a step names
/// (`output_schema`) are read through `sources` when given.
std::optional<step> read_step(const yaml::node& node, diagnostic_sink& sink, recipe_sources* sources = nullptr);

/// Reads a `retry` block (docs/reference/recipe.md, "retry").
std::optional<retry_policy> read_retry(const field_reader& f);

}  // namespace arun::io
