#include "recipe/duration.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace arun::io {
namespace {

// Longer than any age a person means: a typo in the units.
constexpr double most_seconds = 100.0 * 365 * 86400;

constexpr std::array<std::pair<std::string_view, double>, 6> units = {
    {{"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}}};

// A whole or decimal number of digits at the start of `text` (no sign, no exponent), and its
// length; 0 when there is none.
std::pair<double, std::size_t> leading_number(std::string_view text) {
  std::size_t n = 0, dots = 0;
  while (n < text.size() && (std::isdigit(static_cast<unsigned char>(text[n])) || (text[n] == '.' && dots++ == 0))) ++n;
  if (n == 0 || text[0] == '.' || text[n - 1] == '.') return {0, 0};
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + n, value);
  if (ec != std::errc() || end != text.data() + n) return {0, 0};
  return {value, n};
}

}  // namespace

std::optional<double> parse_duration(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  double total = 0;
  bool first = true;
  while (!text.empty()) {
    const auto [value, length] = leading_number(text);
    if (length == 0) return std::nullopt;
    text.remove_prefix(length);
    if (first && text.empty()) {  // a bare number: seconds
      total = value;
      break;
    }
    first = false;
    // The longest unit that matches: "ms" before "m".
    const auto* unit = static_cast<const std::pair<std::string_view, double>*>(nullptr);
    for (const auto& u : units)
      if (text.starts_with(u.first) && (!unit || u.first.size() > unit->first.size())) unit = &u;
    if (!unit) return std::nullopt;
    total += value * unit->second;
    text.remove_prefix(unit->first.size());
  }
  if (!std::isfinite(total) || total > most_seconds) return std::nullopt;
  return total;
}

}  // namespace arun::io
