#include "output/value_summary.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace arun::io {
std::string_view first_columns(std::string_view text, std::size_t columns) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (count++ == columns) return text.substr(0, i);
  }
  return text;
}

std::size_t display_columns(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string byte_size(std::size_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  const double kb = bytes / 1024.0;
  if (kb < 1024) return fmt::format("{:.1f} KB", kb);
  return fmt::format("{:.1f} MB", kb / 1024.0);
}

std::string thousands(std::size_t n) {
  auto digits = std::to_string(n);
  for (auto i = digits.size(); i > 3; i -= 3) digits.insert(i - 3, ",");
  return digits;
}

std::string shortened_line(std::string_view line, std::size_t columns) {
  if (display_columns(line) <= columns) return std::string(line);
  std::string what = byte_size(line.size());
  const auto start = line.find_first_not_of(" \t");
  if (start != std::string_view::npos && (line[start] == '[' || line[start] == '{')) {
    boost::system::error_code ec;
    const auto v = boost::json::parse(line, ec);
    if (!ec && v.is_array()) what = thousands(v.get_array().size()) + " items, " + what;
    if (!ec && v.is_object()) what = thousands(v.get_object().size()) + " keys, " + what;
  }
  return fmt::format("{}… ({})", first_columns(line, columns), what);
}

std::string value_line(const boost::json::value& v, std::size_t columns) {
  if (const auto* s = v.if_string()) {
    const std::string_view text = *s;
    const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) +
                       (text.empty() || text.back() == '\n' ? 0 : 1);
    if (lines <= 1) return shortened_line(text.substr(0, text.find('\n')), columns);
    const auto first = text.substr(0, text.find('\n'));
    return fmt::format("{}… ({} lines, {})", first_columns(first, columns), thousands(lines), byte_size(text.size()));
  }
  return shortened_line(to_compact_json(v), columns);
}

}  // namespace arun::io
