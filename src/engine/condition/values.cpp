#include "condition/values.hpp"

#include "ascii.hpp"
#include "output_value.hpp"
#include "template/render.hpp"

#include <arun/value_format.hpp>

#include <charconv>
#include <cmath>
#include <system_error>

namespace arun::engine::detail {
namespace {

namespace json = boost::json;

// `[+-]digits[.digits]` / `[+-].digits` with an optional exponent; sets `integral` when
// there is neither a point nor an exponent.
bool decimal_syntax(std::string_view s, bool& integral) {
  std::size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  std::size_t digits = 0;
  for (; i < s.size() && is_ascii_digit(s[i]); ++i) ++digits;
  integral = true;
  if (i < s.size() && s[i] == '.') {
    integral = false;
    for (++i; i < s.size() && is_ascii_digit(s[i]); ++i) ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    integral = false;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exponent = 0;
    for (; i < s.size() && is_ascii_digit(s[i]); ++i) ++exponent;
    if (exponent == 0) return false;
  }
  return i == s.size();
}

int compare_numbers(const number& a, const number& b) {
  if (a.integral && b.integral) return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  // long double holds every int64 and every double exactly, so mixed pairs compare exactly.
  const long double x = a.integral ? static_cast<long double>(a.i) : a.d;
  const long double y = b.integral ? static_cast<long double>(b.i) : b.d;
  return x < y ? -1 : (x > y ? 1 : 0);
}


value_or_error<json::value> checked(double d) {
  if (!std::isfinite(d)) return std::string("numeric overflow");
  return json::value(d);
}

value_or_error<json::value> integer_op(binary_op op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  switch (op) {
    case binary_op::add:
      if (__builtin_add_overflow(a, b, &r)) return checked(static_cast<double>(a) + static_cast<double>(b));
      return json::value(r);
    case binary_op::sub:
      if (__builtin_sub_overflow(a, b, &r)) return checked(static_cast<double>(a) - static_cast<double>(b));
      return json::value(r);
    case binary_op::mul:
      if (__builtin_mul_overflow(a, b, &r)) return checked(static_cast<double>(a) * static_cast<double>(b));
      return json::value(r);
    case binary_op::mod:
      if (b == -1) return json::value(std::int64_t{0});  // INT64_MIN % -1 is undefined in C++
      r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;  // Python: the result takes the divisor's sign
      return json::value(r);
    default: return checked(static_cast<double>(a) / static_cast<double>(b));
  }
}

value_or_error<json::value> double_op(binary_op op, double a, double b) {
  switch (op) {
    case binary_op::add: return checked(a + b);
    case binary_op::sub: return checked(a - b);
    case binary_op::mul: return checked(a * b);
    case binary_op::mod: {
      double r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return checked(r);
    }
    default: return checked(a / b);
  }
}

value_or_error<json::value> concatenate(const json::value& a, const json::value& b) {
  if (a.is_string()) {
    if (a.get_string().size() + b.get_string().size() > max_result_bytes)
      return std::string("'+' would build a string over 16 MiB");
    json::string s = a.get_string();
    s.append(b.get_string());
    return json::value(std::move(s));
  }
  if (a.get_array().size() + b.get_array().size() > max_result_bytes / 16)
    return std::string("'+' would build a list over 1 Mi items");
  json::array list = a.get_array();
  for (const auto& item : b.get_array()) list.push_back(item);
  return json::value(std::move(list));
}

}  // namespace

// "true"/"false" in any case (surrounding whitespace ignored), for bool-vs-string equality.
std::optional<bool> bool_string(std::string_view s) {
  s = trim(s);
  const auto equals_folded = [s](std::string_view word) {
    if (s.size() != word.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
      if ((s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]) != word[i]) return false;
    return true;
  };
  if (equals_folded("true")) return true;
  if (equals_folded("false")) return false;
  return std::nullopt;
}

std::optional<number> as_number(const json::value& v) {
  if (const auto* i = v.if_int64()) return number{true, *i, 0};
  if (const auto* u = v.if_uint64()) {
    if (*u <= static_cast<std::uint64_t>(INT64_MAX)) return number{true, static_cast<std::int64_t>(*u), 0};
    return number{false, 0, static_cast<double>(*u)};
  }
  if (const auto* d = v.if_double()) return number{false, 0, *d};
  return std::nullopt;
}

std::optional<number> numeric_string(std::string_view s) {
  s = trim(s);
  bool integral = true;
  if (!decimal_syntax(s, integral)) return std::nullopt;
  if (s[0] == '+') s.remove_prefix(1);  // from_chars takes no '+'
  const auto* end = s.data() + s.size();
  if (integral) {
    std::int64_t i = 0;
    if (const auto r = std::from_chars(s.data(), end, i); r.ec == std::errc() && r.ptr == end) return number{true, i, 0};
  }
  double d = 0;
  const auto r = std::from_chars(s.data(), end, d);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return number{false, 0, d};
}

std::optional<number> numeric(const json::value& v) {
  if (const auto* s = v.if_string()) return numeric_string(*s);
  return as_number(v);
}

json::value to_value(const number& n) { return n.integral ? json::value(n.i) : json::value(n.d); }

const char* type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "bool";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "list";
    case json::kind::object: return "object";
  }
  return "value";
}

std::string describe_value(const json::value& v) {
  if (v.is_null() || v.is_array() || v.is_object()) return type_name(v);
  if (!v.is_string()) return std::string(type_name(v)) + " " + to_compact_json(v);
  const std::string_view s = v.get_string();
  if (s.size() <= 24) return "string '" + std::string(s) + "'";
  return "string '" + std::string(s.substr(0, 24)) + "...'";
}

bool truthy(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return false;
    case json::kind::bool_: return v.get_bool();
    case json::kind::array: return !v.get_array().empty();
    case json::kind::object: return !v.get_object().empty();
    case json::kind::string: {
      const std::string_view s = v.get_string();
      for (std::string_view falsy : {"", "false", "False", "0", "none", "None"})
        if (s == falsy) return false;
      return true;
    }
    default: return as_number(v)->as_double() != 0;
  }
}

bool strict_equal(const json::value& a, const json::value& b) {
  const auto na = as_number(a), nb = as_number(b);
  if (na || nb) return na && nb && compare_numbers(*na, *nb) == 0;
  if (a.kind() != b.kind()) return false;
  if (const auto* list = a.if_array()) {
    const auto& other = b.get_array();
    if (list->size() != other.size()) return false;
    for (std::size_t i = 0; i < list->size(); ++i)
      if (!strict_equal((*list)[i], other[i])) return false;
    return true;
  }
  if (const auto* obj = a.if_object()) {
    const auto& other = b.get_object();
    if (obj->size() != other.size()) return false;
    for (const auto& kv : *obj) {
      const auto it = other.find(kv.key());
      if (it == other.end() || !strict_equal(kv.value(), it->value())) return false;
    }
    return true;
  }
  return a == b;
}

bool loose_equal(const json::value& a, const json::value& b) {
  if (b.is_string() && !a.is_string()) return loose_equal(b, a);
  if (const auto* s = a.if_string(); s && !b.is_string()) {
    if (const auto n = as_number(b)) {
      const auto parsed = numeric_string(*s);
      return parsed && compare_numbers(*parsed, *n) == 0;
    }
    if (b.is_bool()) return bool_string(*s) == b.get_bool();
    if (b.is_array() || b.is_object()) return to_compact_json(b) == std::string_view(*s);
  }
  return strict_equal(a, b);
}

std::optional<int> order(const json::value& a, const json::value& b) {
  if (a.is_string() && b.is_string()) {
    const int c = std::string_view(a.get_string()).compare(b.get_string());  // bytewise
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  auto na = as_number(a), nb = as_number(b);
  if (!na && nb && a.is_string()) na = numeric_string(a.get_string());
  if (na && !nb && b.is_string()) nb = numeric_string(b.get_string());
  if (!na || !nb) return std::nullopt;
  return compare_numbers(*na, *nb);
}

value_or_error<bool> contains(const json::value& needle, const json::value& haystack) {
  switch (haystack.kind()) {
    case json::kind::null: return false;
    case json::kind::array:
      for (const auto& item : haystack.get_array())
        if (loose_equal(needle, item)) return true;
      return false;
    case json::kind::object:
      return needle.is_string() && haystack.get_object().contains(needle.get_string());
    case json::kind::string:
      if (needle.is_null()) return false;
      if (needle.is_array() || needle.is_object())
        return std::string("'in' cannot look for ") + (needle.is_array() ? "a list" : "an object") + " in a string";
      return std::string_view(haystack.get_string()).find(value_text(needle)) != std::string_view::npos;
    default:
      return "'in' needs a string, list, object or null on its right, got " + describe_value(haystack);
  }
}

value_or_error<json::value> arithmetic(binary_op op, const json::value& a, const json::value& b) {
  if (op == binary_op::add && ((a.is_string() && b.is_string()) || (a.is_array() && b.is_array())))
    return concatenate(a, b);
  auto na = as_number(a), nb = as_number(b);
  if (!na && nb && a.is_string()) na = numeric_string(a.get_string());
  if (na && !nb && b.is_string()) nb = numeric_string(b.get_string());
  if (!na || !nb)
    return "'" + std::string(op_text(op)) + "' cannot combine " + describe_value(a) + " and " + describe_value(b);
  if ((op == binary_op::div || op == binary_op::mod) && nb->as_double() == 0)
    return std::string(op == binary_op::div ? "division by zero" : "modulo by zero");
  if (na->integral && nb->integral) return integer_op(op, na->i, nb->i);
  return double_op(op, na->as_double(), nb->as_double());
}

value_or_error<json::value> negate(const json::value& v, std::size_t times) {
  const auto n = numeric(v);
  if (!n || v.is_bool()) return "'-' needs a number, got " + describe_value(v);
  if (times % 2 == 0) return to_value(*n);
  if (!n->integral) return json::value(-n->d);
  if (n->i == INT64_MIN) return json::value(-static_cast<double>(n->i));
  return json::value(-n->i);
}

const char* op_text(binary_op op) {
  switch (op) {
    case binary_op::add: return "+";
    case binary_op::sub: return "-";
    case binary_op::mul: return "*";
    case binary_op::div: return "/";
    case binary_op::mod: return "%";
    case binary_op::eq: return "==";
    case binary_op::ne: return "!=";
    case binary_op::lt: return "<";
    case binary_op::le: return "<=";
    case binary_op::gt: return ">";
    case binary_op::ge: return ">=";
    case binary_op::in: return "in";
    case binary_op::not_in: return "not in";
    case binary_op::is: return "is";
    case binary_op::is_not: return "is not";
  }
  return "?";
}

}  // namespace arun::engine::detail
