#pragma once
// `foreach: {lines: TEXT}` (docs/reference/recipe.md, foreach): a loop over the lines of a
// text, as `xargs -d '\n'` and GNU parallel read their input.

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace arun::engine {

/// The lines of `text`, each without its `\n` and a `\r` before it (CRLF); lines that are
/// empty or only blanks are dropped, so a trailing newline adds no item and an empty text
/// has none. Other lines are kept exactly, inner and outer blanks included.
boost::json::array text_lines(std::string_view text);

/// The text of `foreach: {lines: TEXT}` when `items` has that form (the loader accepts no
/// other mapping), else null.
const boost::json::string* lines_text(const boost::json::value& items);

/// The items of a lines loop from its rendered value: a string's lines; null (nothing) gives
/// none, a number or boolean one line; a list or object is refused with the reason.
std::variant<boost::json::array, std::string> foreach_lines(const boost::json::value& rendered);

/// A foreach's items from its `foreach:` as written and that value rendered: a lines loop's
/// lines, else a list, or a string holding a JSON list; otherwise the reason it has none.
/// The run and the dry-run plan both take the items here.
std::variant<boost::json::array, std::string> foreach_items(const boost::json::value& written,
                                                            const boost::json::value& rendered);

}  // namespace arun::engine
