#pragma once
/// Load and validation diagnostics: every one names the file, line, column and key.

#include <arun/recipe.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

enum class severity { error, warning };

struct diagnostic {
  severity level = severity::error;
  source_location where;
  std::string message;  ///< what is wrong and what was expected
  std::string key;      ///< the offending key, when there is one
  std::string hint;     ///< a suggestion ("did you mean 'command'?"), may be empty
  /// The offending text inside the value at `where` (a `{{reference}}`) and which of its
  /// occurrences in that key's values it is (0: the first): a renderer that has the source
  /// points at it exactly, also inside block scalars and env values.
  std::string snippet;
  std::size_t occurrence = 0;
  std::size_t span = 0;  ///< columns to underline at `where`; 0: the token there
  /// Which check found it, a stable name for tools (docs/running.md lists them):
  /// "undefined-name", "unknown-key", "yaml-syntax", …
  std::string code;
};

/// "FILE:LINE:COLUMN: error: MESSAGE (did you mean ...?)"
std::string format_diagnostic(const diagnostic& d);

bool has_errors(const std::vector<diagnostic>& ds) noexcept;

/// Levenshtein distance (bytes).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// "did you mean 'X'?" for the nearest of `known` within edit distance 2, else empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& known);

}  // namespace arun
