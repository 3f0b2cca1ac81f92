#pragma once
// Loading a recipe file into the model, with file/line/column diagnostics.

#include "recipe/yaml_fields.hpp"

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

struct load_limits {
  std::size_t max_bytes = 1u << 20;      ///< SPEC §1: larger files are refused before parsing
  std::size_t max_nodes = 1'000'000;     ///< nodes visited, aliases expanded
};

struct load_result {
  std::optional<recipe> value;  ///< set when there are no errors
  std::vector<diagnostic> diagnostics;
};

/// Reads and loads `path`. A missing or unreadable file is an error diagnostic.
load_result load_recipe_file(const std::string& path, const load_limits& limits = {});

/// Loads recipe text; `file` names it in diagnostics.
load_result load_recipe_text(std::string_view text, const std::string& file,
                             const load_limits& limits = {});

}  // namespace arun::io
