#pragma once
// SPEC §3.6 `parse_json`: finding the JSON value in a reply that may wrap it in prose or a
// Markdown fence.

#include <boost/json/value.hpp>

#include <optional>
#include <string_view>

namespace arun::engine {

/// The first JSON value found in `text`, trying in order:
/// 1. the whole text, trimmed (any JSON value, scalars included);
/// 2. the fenced blocks opened by ```` ```json ```` (any case) or a bare ```` ``` ````, in
///    order, each the content up to its closing fence (other languages' blocks are skipped;
///    a block without a closing fence is left to step 3);
/// 3. balanced `{…}` / `[…]` spans: from the first `{` or `[`, to its matching bracket
///    (brackets inside JSON strings ignored, escapes honoured); when that span is unbalanced
///    or does not parse, from the next opening bracket, up to 64 of them.
/// No value when nothing parses. Nesting up to 256 levels is accepted. The work is linear in
/// the size of `text` (at most 64 scans and parses of it), even for adversarial input.
std::optional<boost::json::value> extract_json(std::string_view text);

}  // namespace arun::engine
