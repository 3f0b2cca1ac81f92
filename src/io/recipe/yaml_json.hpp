#pragma once
// YAML nodes to JSON values with YAML 1.2 core scalar typing (docs/reference/recipe.md,
// "The file"), bounded in the number of nodes visited so alias bombs cannot expand.

#include <boost/json/value.hpp>
#include "recipe/yaml_tree.hpp"

#include <cstddef>
#include <stdexcept>

namespace arun::io {

/// Thrown when the conversion visits more nodes than allowed (an alias bomb).
struct yaml_too_large : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Plain scalars: true/false (any case) -> bool, numbers -> number, null/~/empty -> null,
/// everything else (yes/no/on/off included) -> string. Quoted scalars are always strings.
boost::json::value scalar_to_json(const yaml::node& scalar);

/// Converts a whole tree; `budget` is decremented per node visited.
boost::json::value yaml_to_json(const yaml::node& node, std::size_t& budget);

}  // namespace arun::io
