#pragma once
// JSON text arun writes to files and stdout: always valid UTF-8, with bytes that are not UTF-8
// kept exactly through an escape, and read back to the same bytes.

#include <boost/json/object.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// arun::to_compact_json, with every byte of a string that is not part of a valid UTF-8
/// sequence written as the escape `\udcXY` (XY: the byte, 80..ff) — Python's
/// `surrogateescape` convention (PEP 383): `json.loads(text)` then
/// `.encode('utf-8', 'surrogateescape')` gives the exact bytes back. A step that prints
/// `caf\xe9` has the output "caf\udce9" in state.json, the journal and `--output-format json`.
std::string to_json_text(const boost::json::value& v);

/// The same escape applied to finished JSON text (raw bytes can only be inside its strings).
std::string escape_invalid_utf8(std::string_view json_text);

/// Parses JSON text, turning `\udc80`..`\udcff` escapes back into the bytes they stand for.
/// Raw invalid UTF-8 inside strings is accepted too (files written before the escape).
boost::json::value parse_json_text(std::string_view text, boost::system::error_code& ec,
                                   boost::json::parse_options options = {});

/// The string member `key` of `o`; `fallback` when it is missing or not a string.
std::string string_member(const boost::json::object& o, std::string_view key, std::string fallback = {});
/// The same without a copy: a view into `o`, empty when missing or not a string.
std::string_view string_view_member(const boost::json::object& o, std::string_view key);
/// The number member `key` of `o` as a count: none when it is missing, not a number, negative
/// or past 2^53 (a file's value is never cast out of range).
std::optional<std::uint64_t> count_member(const boost::json::object& o, std::string_view key);

}  // namespace arun::io
