#pragma once
// Character classes of the recipe languages (conditions, templates, retry rules). ASCII only,
// never the C locale's <cctype>, so a recipe reads the same on every machine.

namespace arun::engine {

inline bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

/// The six characters C's isspace accepts in the "C" locale.
inline bool is_c_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace arun::engine
