#include "cache/age.hpp"

#include "recipe/duration.hpp"

#include <cmath>

namespace arun::io {

std::optional<std::chrono::seconds> parse_age(std::string_view text, std::string& why) {
  const auto quoted = "'" + std::string(text) + "'";
  const auto seconds = parse_duration(text);
  if (!seconds) {
    why = quoted + ": expected " + std::string(duration_forms) + ", 7d (at most 100 years)";
    return std::nullopt;
  }
  // Ages are kept in whole seconds: a part of one counts as one.
  const auto whole = static_cast<std::int64_t>(std::ceil(*seconds));
  if (whole == 0) {
    why = quoted + ": must be more than zero, such as 7d";
    return std::nullopt;
  }
  return std::chrono::seconds(whole);
}

}  // namespace arun::io
