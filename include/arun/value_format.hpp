#pragma once
/// How values are written as text: in templates (docs/reference/templates.md, "How values render")
/// and in every JSON arun prints.
/// Numbers never come out as `1.5E0` (Boost.JSON's own serializer does that).

#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>

namespace arun {

/// Shortest round-trip text of a double, always with a decimal point or exponent:
/// 1.5 -> "1.5", 100000.0 -> "100000.0", 1e300 -> "1e+300". NaN and infinities -> "null".
std::string format_number(double d);

/// Compact JSON (no spaces) using format_number for doubles.
std::string to_compact_json(const boost::json::value& v);

/// `text` on one line for people: control characters escaped (`\n`, `\t`, `\r`, `\xNN`), cut
/// after `most` characters (UTF-8 code points) with `…`. With a `quote` character, that
/// character and the backslash are escaped too (the text goes between such quotes).
std::string one_line_text(std::string_view text, std::size_t most, char quote = 0);

/// A foreach item as a failed iteration names it: a string as its text, anything else as its
/// compact JSON, through one_line_text (at most 60 characters).
std::string item_label(const boost::json::value& item);

/// JSON text parsed as boost::json::parse does, with every number kept exact: a double is
/// read correctly rounded (Boost 1.81's fast path can be one unit off), and a number a double
/// does not hold exactly — more digits than it keeps (123456789012345678901234567890), out of
/// its range (1e400) — becomes a string of its text, never a rounded number or null
/// (docs/reference/formats.md, "Numbers"). Integers within int64/uint64 stay integers. On a
/// syntax error, `ec` is set and the value is null.
boost::json::value parse_json_exact(std::string_view text, boost::system::error_code& ec,
                                    const boost::json::parse_options& options = {});

/// A stable fingerprint of `text` (64-bit FNV-1a, 16 hex digits): the same in every run and
/// on every machine, for content keys kept in sessions.
std::string content_hash(std::string_view text);

}  // namespace arun
