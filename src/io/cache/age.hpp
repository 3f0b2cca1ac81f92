#pragma once
// How old a cached output may be: a step's `cache.max_age` and `arun cache clear
// --older-than` read durations as every other field and option does.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// A duration as parse_duration reads it (`90`, `90s`, `15m`, `1h30m`, `7d`, `2w`), more than
/// zero, in whole seconds (rounded up). nullopt with `why` set (naming the text) for anything
/// else, zero, or more than 100 years.
std::optional<std::chrono::seconds> parse_age(std::string_view text, std::string& why);

}  // namespace arun::io
