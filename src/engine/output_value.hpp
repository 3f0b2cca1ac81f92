#pragma once
// docs/reference/recipe.md, "Outputs": how a step's printed output becomes a context value.

#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace arun::engine {

/// Surrounding whitespace removed.
std::string_view trim(std::string_view text) noexcept;

/// The text up to its first newline (all of it when it has none): an error's summary line.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The trimmed text as JSON when the whole of it parses as JSON (`5` -> 5), else a string.
boost::json::value output_value(std::string_view text);

}  // namespace arun::engine
