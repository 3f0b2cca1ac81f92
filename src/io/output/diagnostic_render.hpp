#pragma once
// Diagnostics shown the way a good compiler shows them: `file:line:col: error: message`, the
// source line with the offending span underlined, `help:` lines, sorted by position, and a
// count at the end. Colour is the caller's choice (a terminal, --color, NO_COLOR).

#include <arun/diagnostics.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace arun::io {

class recipe_sources;

/// The text of the files diagnostics name, each read once; a resumed session's saved copy
/// stands in for a file changed or removed since.
class source_files {
public:
  explicit source_files(recipe_sources* saved = nullptr) : saved_(saved) {}
  /// Null when the file cannot be read (or names no file, such as `--set`).
  const std::string* text(const std::string& file);

private:
  recipe_sources* saved_;
  std::map<std::string, std::optional<std::string>> cache_;
};

/// Moves each diagnostic that carries a `snippet` from the start of its value onto the
/// snippet itself (its `occurrence`-th appearance from there), and underlines exactly it.
void point_at_snippets(std::vector<diagnostic>& ds, source_files& files);

/// One diagnostic: its line, then (when `source` holds its line) the line and the underline,
/// then `help:`. Ends with a newline.
std::string render_diagnostic(const diagnostic& d, const std::string* source, bool color);

/// All of them, sorted by file and position, then "N errors, M warnings" (nothing when empty).
std::string render_diagnostics(std::vector<diagnostic> ds, source_files& files, bool color);

/// One diagnostic for editors and CI: `{file, line, column, end_column, severity, code,
/// message, help, key?}`; line and columns are null for a diagnostic without a position, help
/// is null without a hint, end_column is exclusive (what the text form underlines).
boost::json::object diagnostic_to_json(const diagnostic& d, const std::string* source);

/// All of them, pointed at their snippets and sorted as render_diagnostics sorts them.
boost::json::array diagnostics_to_json(std::vector<diagnostic> ds, source_files& files);

}  // namespace arun::io
