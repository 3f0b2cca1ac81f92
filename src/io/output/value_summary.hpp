#pragma once
// Values and lines shortened for people: a step that prints a 2,000-item JSON list on one line
// shows in the progress as `[1,2,3,4,… (2,000 items, 9.0 KB)`, a long text as its beginning
// and its size. The full text stays in the step's log and the JSON result.

#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace arun::io {

/// Columns `text` takes: its UTF-8 code points (ids are ASCII; `·` and `…` are one each).
std::size_t display_columns(std::string_view text);
/// The first `columns` columns of `text`.
std::string_view first_columns(std::string_view text, std::size_t columns);

/// `512 bytes`, `9.1 KB`, `12 MB` (1024-based).
std::string byte_size(std::size_t bytes);
/// `2,000`.
std::string thousands(std::size_t n);

/// `line` itself when it has at most `columns` characters; else its beginning and what was
/// left out: a JSON array or object as `[1,2,… (2,000 items, 9.0 KB)`, other text as
/// `beginning… (9.0 KB)`. Never longer than `columns` plus the parenthesis.
std::string shortened_line(std::string_view line, std::size_t columns);

/// One line for a value: a string as shortened_line of its first line (with the number of
/// lines when it has several), anything else as shortened_line of its compact JSON.
std::string value_line(const boost::json::value& v, std::size_t columns);

}  // namespace arun::io
