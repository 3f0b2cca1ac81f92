#include "cache/age.hpp"

#include <cstdint>

namespace arun::io {

std::optional<std::chrono::seconds> parse_age(std::string_view text, std::string& why) {
  const auto quoted = "'" + std::string(text) + "'";
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const auto unit = text.substr(digits);
  std::int64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else if (unit == "w") scale = 7 * 86400;
  if (digits == 0 || scale == 0) {
    why = quoted + ": expected a number with s, m, h, d or w, such as 7d";
    return std::nullopt;
  }
  // Callers compare ages in system_clock's nanoseconds, which span ±292 years: a longer age
  // would overflow there, and is a typo rather than an age anyway.
  constexpr std::int64_t max_seconds = std::int64_t{100} * 365 * 86400;
  std::int64_t n = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    n = n * 10 + (text[i] - '0');
    if (n > max_seconds) break;
  }
  if (n == 0) {
    why = quoted + ": must be more than zero, such as 7d";
    return std::nullopt;
  }
  if (n > max_seconds / scale) {
    why = quoted + ": too large (at most 100 years)";
    return std::nullopt;
  }
  return std::chrono::seconds(n * scale);
}

}  // namespace arun::io
