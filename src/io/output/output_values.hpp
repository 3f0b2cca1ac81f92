#pragma once
// Small conversions the output formats share: events (event_json), results (result_format)
// and progress lines (progress_printer) print durations, unset values and errors alike.

#include "output/event_json.hpp"

#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// A duration in seconds, with its fraction.
inline double seconds_of(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

/// The value, or JSON null when it is unset.
template <typename T>
boost::json::value value_or_null(const std::optional<T>& v) {
  if (v) return *v;
  return nullptr;
}

/// `s` as a JSON string with invalid UTF-8 replaced (sanitize_utf8), or null when it is empty.
inline boost::json::value text_or_null(const std::string& s) {
  if (s.empty()) return nullptr;
  return boost::json::string(sanitize_utf8(s));
}

/// The text up to its first newline (all of it when it has none): an error's summary line.
inline std::string_view first_line(std::string_view text) { return text.substr(0, text.find('\n')); }

}  // namespace arun::io
