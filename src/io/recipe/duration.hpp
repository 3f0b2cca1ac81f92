#pragma once
// Durations as every recipe field and command-line option takes them (docs/reference/recipe.md,
// "Durations"): a number of seconds (`90`, `2.5`) or a text of numbers with units (`500ms`,
// `90s`, `5m`, `1h30m`, `1.5h`, `7d`, `2w`).

#include <optional>
#include <string_view>

namespace arun::io {

/// The seconds `text` says: a non-negative number (seconds), or one or more `NUMBER UNIT` parts
/// (units ms, s, m, h, d, w; each number whole or decimal) added up, with no blanks between
/// them. nullopt for anything else, or beyond 100 years.
std::optional<double> parse_duration(std::string_view text);

/// What a duration may be written as, for messages: "a number of seconds or a duration such as
/// 500ms, 90s, 5m, 1h30m".
inline constexpr std::string_view duration_forms = "a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m";

}  // namespace arun::io
