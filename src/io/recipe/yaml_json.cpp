#include "recipe/yaml_json.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>

namespace arun::io {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// YAML 1.2 core schema: [-+]?[0-9]+ is an integer; [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
// a float. Checked by hand: std::regex made number detection the slowest part of loading.
bool is_core_int(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

bool is_core_float(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  std::size_t i = 0, digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    std::size_t fraction = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++fraction;
    if (digits == 0 && fraction == 0) return false;
  } else if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    std::size_t exponent = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exponent;
    if (exponent == 0) return false;
  }
  return i == s.size();
}

// Numbers keep their exact value or stay text: an integer too large for 64 bits (an id, a
// hash) stays the string it was written as, and so does a float outside double's range
// (1e400, 1e-400), instead of becoming an approximation, infinity, 0 or null.
boost::json::value number_or_string(const std::string& s) {
  if (is_core_int(s)) {
    const char* first = s.data() + (s[0] == '+');
    const char* last = s.data() + s.size();
    std::int64_t i = 0;
    if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last) return i;
    std::uint64_t u = 0;
    if (auto [p, ec] = std::from_chars(first, last, u); ec == std::errc() && p == last) return u;
    return boost::json::string(s);
  }
  if (is_core_float(s)) {
    errno = 0;
    const double d = std::strtod(s.c_str(), nullptr);
    if (errno == ERANGE) return boost::json::string(s);
    return d;
  }
  const auto l = lower(s);
  if (l == ".inf" || l == "+.inf") return std::numeric_limits<double>::infinity();
  if (l == "-.inf") return -std::numeric_limits<double>::infinity();
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, s[1] == 'x' ? 16 : 8);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  return boost::json::string(s);
}

}  // namespace

boost::json::value scalar_to_json(const yaml::node& scalar) {
  const std::string& s = scalar.Scalar();
  if (scalar.Tag() == "!") return boost::json::string(s);  // quoted: always a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  const auto l = lower(s);
  if (l == "true") return true;
  if (l == "false") return false;
  return number_or_string(s);
}

boost::json::value yaml_to_json(const yaml::node& node, std::size_t& budget) {
  if (budget == 0) throw yaml_too_large("document expands to too many nodes");
  --budget;
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return scalar_to_json(node);
    case YAML::NodeType::Sequence: {
      boost::json::array a;
      for (const auto& item : node) a.push_back(yaml_to_json(item, budget));
      return a;
    }
    case YAML::NodeType::Map: {
      boost::json::object o;
      for (const auto& kv : node) o[kv.first.Scalar()] = yaml_to_json(kv.second, budget);
      return o;
    }
    default:
      return nullptr;
  }
}

}  // namespace arun::io
