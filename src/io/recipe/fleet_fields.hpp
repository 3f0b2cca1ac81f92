#pragma once
// The fields for runs of many agent steps: a step's `output_schema`, `schema_retries` and
// `limit_group`, the recipe's `limits` and `budget`. All are read when the recipe loads, with
// a position for every mistake: a schema that does not compile fails `validate`, not the
// first agent reply an hour into a run.

#include "recipe/yaml_fields.hpp"

#include <arun/recipe.hpp>

#include <string_view>

namespace arun::io {

class recipe_sources;

/// Whether `name` can name a limit (an agent CLI's provider, a `limit_group`): letters,
/// digits, '_', '.', ':' and '-', at least one.
bool valid_limit_name(std::string_view name);

/// `output_schema` of a bash or agent step: a mapping (the schema), true / false, or the path
/// of a JSON or YAML file, relative to the recipe file's directory, read through `sources`
/// when given (a session keeps a copy, as of the recipe). A schema from a file is part of the
/// step's definition_hash, so `resume --reload` runs the step again when the file changed.
void read_output_schema(const field_reader& f, step& s, recipe_sources* sources);

/// `schema_retries` of an agent step; without output_schema it is a warning.
void read_schema_retries(const field_reader& f, step& s);

/// `limit_group` of a bash or agent step.
void read_limit_group(const field_reader& f, step& s);

/// The recipe's `limits` (names to counts of children at once) and `budget`.
void read_limits(const field_reader& f, recipe& r);
void read_budget(const field_reader& f, recipe& r);

}  // namespace arun::io
