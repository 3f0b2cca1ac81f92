#pragma once
// How old a cached output may be: a step's `cache.max_age` and `arun cache clear
// --older-than` read the same short forms, so a recipe and the command line agree.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// `90` (seconds), `90s`, `15m`, `12h`, `7d`, `2w`: a positive whole number with an optional
/// unit. nullopt with `why` set (naming the text, e.g. "'7x': expected a number with s, m,
/// h, d or w, such as 7d") for anything else, zero, or more than 100 years.
std::optional<std::chrono::seconds> parse_age(std::string_view text, std::string& why);

}  // namespace arun::io
