#pragma once
// Text arun read from a file it does not control (a session's state.json, its events) on its
// way to a terminal: control characters are shown escaped, never sent, so no file can move the
// cursor, retitle the window or hide a line (docs/security.md, "Paths arun deletes or follows").

#include <string>
#include <string_view>

namespace arun::io {

/// `text` with every C0 control character (tab and newline too: a listing is one line per
/// entry), DEL, C1 control (U+0080..U+009F) and byte that is not UTF-8 written as `\xNN`
/// (`\n`, `\t`, `\r` and `\e` for the usual ones); any other UTF-8 stays as it is.
std::string printable_text(std::string_view text);

}  // namespace arun::io
