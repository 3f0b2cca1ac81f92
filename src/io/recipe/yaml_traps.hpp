#pragma once
// Help for the YAML mistakes people make in recipes, which yaml-cpp reports in its own terms
// ("illegal map value", "illegal block entry"): what went wrong in recipe words and the fix.

#include "recipe/yaml_tree.hpp"

#include <string>
#include <string_view>

namespace arun::io {

/// A help line for yaml-cpp's parse error `message` at `mark` in `source`, or empty.
std::string yaml_error_hint(std::string_view source, const YAML::Mark& mark, std::string_view message);

/// A help line for a value that YAML read as a mapping or list where a string was expected:
/// an unquoted `{{name}}` is a flow mapping. Empty when `node` is not such a value.
std::string unquoted_template_hint(const yaml::node& node);

}  // namespace arun::io
