#include <arun/context_set.hpp>
#include <arun/value_format.hpp>

#include <boost/json/error.hpp>
#include <boost/json/parse.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace arun {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether a JSON number token means what a JSON value holds: an integer within int64 or
// uint64, or a float within double's range (not overflowing to infinity or underflowing to 0).
bool exact_number(std::string_view token) {
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  const std::string text(token);
  if (text.find_first_of(".eE") == std::string::npos) {
    errno = 0;
    if (text.starts_with('-'))
      (void)std::strtoll(text.c_str(), nullptr, 10);
    else
      (void)std::strtoull(text.c_str(), nullptr, 10);
    return errno != ERANGE;
  }
  errno = 0;
  (void)std::strtod(text.c_str(), nullptr);
  return errno != ERANGE;
}

// The first number token inside a JSON text (outside strings) that exact_number refuses.
std::string inexact_number_in(std::string_view json) {
  for (std::size_t i = 0; i < json.size();) {
    if (json[i] == '"') {
      for (++i; i < json.size() && json[i] != '"'; ++i)
        if (json[i] == '\\') ++i;
      ++i;
      continue;
    }
    if (json[i] == '-' || is_digit(json[i])) {
      auto end = i + 1;
      while (end < json.size() && (is_digit(json[end]) || std::string_view(".eE+-").find(json[end]) != std::string_view::npos))
        ++end;
      const auto token = json.substr(i, end - i);
      if (!exact_number(token)) return std::string(token);
      i = end;
      continue;
    }
    ++i;
  }
  return {};
}

}  // namespace

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
  // Read as step outputs are (docs/reference/formats.md, "Numbers"): Boost.JSON's own parser
  // rounds some decimals one unit off (1795664842.1989675 became …677).
  auto parsed = parse_json_exact(raw, ec, opts);
  // Strings typed as JSON only when quoted: `--set name=bob` is the string "bob". A number
  // that a double would change (an integer past 64 bits, 1e999, 1e-999) is kept as the text
  // it was: `--set id=123456789012345678901234567890` is that string, never 1.2345678901234568e+29.
  const auto first = raw.find_first_not_of(" \t\r\n");
  const bool bare_number = !ec && (parsed.is_number() || (parsed.is_string() && first != std::string_view::npos && raw[first] != '"'));
  if (bare_number && !exact_number(raw)) ec = boost::json::error::exponent_overflow;
  if (!ec && !bare_number) {
    if (const auto inexact = inexact_number_in(raw); !inexact.empty()) {
      error = "--set " + std::string(text.substr(0, eq)) + ": the number " + inexact +
              " does not fit a 64-bit integer or a double exactly; quote it to keep it as text";
      return std::nullopt;
    }
  }
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
