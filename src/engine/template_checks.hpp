#pragma once
// validate's checks of template text that is not a reference (docs/reference/templates.md,
// "Text that is not a reference") and of foreach text that cannot become a list
// (docs/reference/recipe.md, foreach).

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun {

/// A step's text fields that are rendered as templates, with the key each came from.
using template_field_list = std::vector<std::pair<std::string_view, std::string>>;

/// Each `{{` that starts no reference, in every field `fields_of` lists for a step and in the
/// stages, the recipe's env and its hooks: a warning pointing at the `{{` (`--strict` makes
/// it an error). A foreach whose text holds no reference and is no JSON list renders to
/// that text at run time and fails there: an error.
void check_template_syntax(const recipe& r, const std::function<template_field_list(const step&)>& fields_of,
                           std::vector<diagnostic>& out);

}  // namespace arun
