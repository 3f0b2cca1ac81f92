#include <arun/context_set.hpp>

#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>

#include <cmath>

namespace arun {

std::optional<set_assignment> parse_set(std::string_view text, std::string& error) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    error = "--set takes KEY=VALUE, got '" + std::string(text) + "'";
    return std::nullopt;
  }
  set_assignment a;
  std::string_view key = text.substr(0, eq);
  while (true) {
    const auto dot = key.find('.');
    const auto part = key.substr(0, dot);
    if (part.empty()) {
      error = "--set key '" + std::string(text.substr(0, eq)) + "' has an empty name segment";
      return std::nullopt;
    }
    a.path.emplace_back(part);
    if (dot == std::string_view::npos) break;
    key.remove_prefix(dot + 1);
  }
  const auto raw = text.substr(eq + 1);
  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 256;
  auto parsed = boost::json::parse(raw, ec, {}, opts);
  // Strings typed as JSON only when quoted: `--set name=bob` is the string "bob".
  // 1e999 parses as infinity, which no JSON can hold: keep such text as a string.
  if (!ec && parsed.is_double() && !std::isfinite(parsed.get_double())) ec = boost::json::error::exponent_overflow;
  a.value = ec ? boost::json::value(boost::json::string(raw)) : std::move(parsed);
  return a;
}

void apply_set(boost::json::object& context, const set_assignment& a) {
  boost::json::object* target = &context;
  for (std::size_t i = 0; i + 1 < a.path.size(); ++i) {
    auto& slot = (*target)[a.path[i]];
    if (!slot.is_object()) slot = boost::json::object();
    target = &slot.as_object();
  }
  (*target)[a.path.back()] = a.value;
}

}  // namespace arun
