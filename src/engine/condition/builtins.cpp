#include "condition/builtins.hpp"

#include "condition/values.hpp"
#include "template/render.hpp"

#include <array>
#include <cmath>
#include <cstdint>

namespace arun::engine::detail {
namespace {

namespace json = boost::json;

constexpr std::array<builtin, 8> functions = {{
    {"int", 1, 1}, {"str", 1, 1}, {"float", 1, 1}, {"bool", 1, 1},
    {"len", 1, 1}, {"min", 1, SIZE_MAX}, {"max", 1, SIZE_MAX}, {"isinstance", 2, 2},
}};

constexpr std::array<builtin, 14> methods = {{
    {"strip", 0, 1}, {"lstrip", 0, 1}, {"rstrip", 0, 1}, {"lower", 0, 0}, {"upper", 0, 0},
    {"title", 0, 0}, {"startswith", 1, 1}, {"endswith", 1, 1}, {"replace", 2, 3}, {"split", 0, 2},
    {"join", 1, 1}, {"count", 1, 1}, {"find", 1, 1}, {"contains", 1, 1},
}};

template <std::size_t N>
const builtin* find_in(const std::array<builtin, N>& table, std::string_view name) {
  for (const auto& b : table)
    if (b.name == name) return &b;
  return nullptr;
}

builtin_result to_int(const json::value& v) {
  if (v.is_bool()) return json::value(std::int64_t{v.get_bool() ? 1 : 0});
  const auto n = numeric(v);
  if (!n) return "int() cannot convert " + describe_value(v);
  if (n->integral) return json::value(n->i);
  // ±2^63 are exact doubles; everything in [-2^63, 2^63) truncates into int64.
  if (!(n->d >= -9223372036854775808.0 && n->d < 9223372036854775808.0))
    return "int() cannot convert " + describe_value(v) + ": out of range";
  return json::value(static_cast<std::int64_t>(std::trunc(n->d)));
}

builtin_result to_float(const json::value& v) {
  if (v.is_bool()) return json::value(v.get_bool() ? 1.0 : 0.0);
  const auto n = numeric(v);
  if (!n) return "float() cannot convert " + describe_value(v);
  return json::value(n->as_double());
}

builtin_result length(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return json::value(std::int64_t{0});
    case json::kind::string: return json::value(static_cast<std::int64_t>(v.get_string().size()));
    case json::kind::array: return json::value(static_cast<std::int64_t>(v.get_array().size()));
    case json::kind::object: return json::value(static_cast<std::int64_t>(v.get_object().size()));
    default: return "len() needs a string, list or object, got " + describe_value(v);
  }
}

builtin_result extreme(std::string_view name, const std::vector<json::value>& args) {
  const json::array* list = nullptr;
  if (args.size() == 1) {
    list = args[0].if_array();
    if (!list) return std::string(name) + "() of one argument needs a list, got " + describe_value(args[0]);
    if (list->empty()) return std::string(name) + "() of an empty list";
  }
  const auto count = list ? list->size() : args.size();
  const auto at = [&](std::size_t i) -> const json::value& { return list ? (*list)[i] : args[i]; };
  std::size_t best = 0;
  for (std::size_t i = 1; i < count; ++i) {
    const auto c = order(at(i), at(best));
    if (!c)
      return std::string(name) + "() cannot compare " + describe_value(at(i)) + " with " + describe_value(at(best));
    if (name == "min" ? *c < 0 : *c > 0) best = i;
  }
  return at(best);
}

unsigned type_bit_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return type_null;
    case json::kind::bool_: return type_bool;
    case json::kind::int64:
    case json::kind::uint64: return type_int;
    case json::kind::double_: return type_float;
    case json::kind::string: return type_string;
    case json::kind::array: return type_list;
    case json::kind::object: return type_object;
  }
  return 0;
}

}  // namespace

const builtin* find_function(std::string_view name) { return find_in(functions, name); }
const builtin* find_method(std::string_view name) { return find_in(methods, name); }

builtin_result call_function(std::string_view name, std::vector<json::value>& args, unsigned type_mask) {
  if (name == "int") return to_int(args[0]);
  if (name == "float") return to_float(args[0]);
  if (name == "str") return json::value(json::string(value_text(args[0])));
  if (name == "bool") return json::value(truthy(args[0]));
  if (name == "len") return length(args[0]);
  if (name == "isinstance") return json::value((type_bit_of(args[0]) & type_mask) != 0);
  return extreme(name, args);
}

}  // namespace arun::engine::detail
