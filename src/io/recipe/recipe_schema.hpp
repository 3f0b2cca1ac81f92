#pragma once
// The recipe JSON Schema (schema/recipe.schema.json, the one editors use) as a check the
// loader runs: a recipe the reader accepts but the schema refuses is an error, so the schema
// and the validator cannot drift apart unnoticed.

#include "recipe/schema_violations.hpp"

#include <arun/diagnostics.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// The schema's JSON text, as compiled in.
std::string_view recipe_schema_text();

/// The violations of `document` (a recipe as JSON, YAML 1.2 typing), most specific first: a
/// violation inside a value is reported rather than its enclosing ones. Keys the schema does
/// not know are not violations here: the reader reports them (with suggestions).
std::vector<schema_violation> check_recipe_schema(const boost::json::value& document);

/// The same check on a recipe file's text, as diagnostics (code "schema") at the values the
/// schema refuses. For text the reader accepted: the reader and validation explain their own
/// refusals better, so this runs after them, and only finds where they and the schema differ.
std::vector<diagnostic> schema_diagnostics(std::string_view yaml_text, const std::string& file);

/// The same for the file's `document` as the loader converted it (load_limits::documents):
/// the text is parsed again only to place violations, when there are any.
std::vector<diagnostic> schema_diagnostics(boost::json::value document, std::string_view yaml_text,
                                           const std::string& file);

}  // namespace arun::io
