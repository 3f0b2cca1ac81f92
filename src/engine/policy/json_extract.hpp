#pragma once
// `parse_json` (docs/reference/recipe.md, "parse_json"): finding the JSON value in a reply that may
// wrap it in prose or a Markdown fence.

#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace arun::engine {

/// The JSON value in `text`, trying in order:
/// 1. the whole text, trimmed (any JSON value, scalars included);
/// 2. the fenced blocks opened by ```` ```json ```` (any case) or a bare ```` ``` ````, in
///    order, each the content up to its closing fence (other languages' blocks are skipped;
///    a block without a closing fence is left to step 3);
/// 3. balanced `{…}` / `[…]` spans: from each `{` or `[` to its matching bracket (brackets
///    inside JSON strings ignored, escapes honoured), the next search starting after a span
///    that parsed, or at the next opening bracket when it did not (up to 64 spans). Of the
///    top-level values found, the last non-empty one is taken, else the last empty one: prose
///    that mentions `{}` before the answer does not hide it.
/// No value when nothing parses. Nesting up to 256 levels is accepted. The work is linear in
/// the size of `text` (at most 64 scans and parses of it), even for adversarial input.
std::optional<boost::json::value> extract_json(std::string_view text);

}  // namespace arun::engine
