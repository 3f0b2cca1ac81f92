#pragma once
/// Load and validation diagnostics: every one names the file, line, column and key.

#include <arun/recipe.hpp>

#include <string>
#include <vector>

namespace arun {

enum class severity { error, warning };

struct diagnostic {
  severity level = severity::error;
  source_location where;
  std::string message;  ///< what is wrong and what was expected
  std::string key;      ///< the offending key, when there is one
  std::string hint;     ///< a suggestion ("did you mean 'command'?"), may be empty
};

/// "FILE:LINE:COLUMN: error: MESSAGE (did you mean ...?)"
std::string format_diagnostic(const diagnostic& d);

bool has_errors(const std::vector<diagnostic>& ds) noexcept;

}  // namespace arun
