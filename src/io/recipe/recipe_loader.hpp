#pragma once
// Loading a recipe file into the model, with file/line/column diagnostics.

#include "recipe/yaml_fields.hpp"

#include <arun/diagnostics.hpp>
#include <arun/recipe.hpp>

#include <boost/json/value.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// Recipe files as a session sees them (docs/sessions.md, "Where sessions live"): a new run hands
/// each file it reads to `read` so the session keeps a copy; a resumed run gets the copies from
/// `saved` instead of files that may have changed since.
class recipe_sources {
public:
  virtual ~recipe_sources() = default;
  /// The saved text of `path` (as the loader names it), if any.
  virtual std::optional<std::string> saved(const std::string& path) = 0;
  /// `path` was read from disk with this text.
  virtual void read(const std::string& path, std::string_view text) = 0;
};

struct load_limits {
  /// docs/reference/recipe.md, "The file": larger files are refused before parsing
  std::size_t max_bytes = 1u << 20;
  std::size_t max_nodes = 1'000'000;     ///< nodes visited, aliases expanded
  recipe_sources* sources = nullptr;     ///< a session's copies of the files (none: disk only)
  /// When set, each file the loader parses is also kept here as JSON (YAML 1.2 typing), by
  /// file name, so that `validate`'s schema check does not parse it a second time.
  std::map<std::string, boost::json::value>* documents = nullptr;
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
