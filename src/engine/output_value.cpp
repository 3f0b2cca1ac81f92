#include "output_value.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

namespace arun::engine {

std::string_view trim(std::string_view text) noexcept {
  constexpr std::string_view space = " \t\r\n\f\v";
  const auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

boost::json::value output_value(std::string_view text) {
  const auto t = trim(text);
  if (t.empty()) return boost::json::string();
  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 256;  // Boost's default of 32 is too shallow for real JSON output
  auto v = parse_json_exact(t, ec, opts);
  if (!ec) return v;
  return boost::json::string(t);
}

}  // namespace arun::engine
