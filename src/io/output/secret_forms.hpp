#pragma once
// The forms in which a secret value can appear in text arun reads from a step or writes itself
// (docs/watching.md#secrets): what secret_masker masks.

#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// Every form of `value` to mask, each non-empty and listed once: the value, its other line
/// ending, each line of at least `min_line` characters (spaces trimmed, PEM armour lines left
/// out), and each of those as JSON text escapes it (the forms of json_string_forms).
std::vector<std::string> secret_forms(std::string_view value, std::size_t min_line);

/// `text` as it appears inside a JSON string written by common serialisers, quotes left out:
/// Boost.JSON's (arun's own), all-ASCII `\uXXXX` (Python's json.dumps) in lower and upper case,
/// `/` written `\/`, and the JSON form of the JSON form (a step's JSON text kept inside a JSON
/// string). `text` itself is not among them unless it needs no escape.
std::vector<std::string> json_string_forms(std::string_view text);

}  // namespace arun::io
