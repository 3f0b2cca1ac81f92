#pragma once
// Patterns over step instance ids (`fan[3]/review`): `*` matches any run of characters
// (slashes too), `?` one character, everything else itself. Brackets are literal, because
// every iteration id holds them: `fan[*]/review` means every iteration's review gate.

#include <string_view>

namespace arun::cli {

bool instance_glob_match(std::string_view pattern, std::string_view id);

}  // namespace arun::cli
