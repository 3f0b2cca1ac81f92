#pragma once
// Value rules of conditions (docs/reference/conditions.md, "Comparisons", "Truthiness"):
// truthiness, the coercions of `==`, ordering, `in` and arithmetic. Private to the condition
// module.

#include "condition/ast.hpp"

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace arun::engine::detail {

/// The largest string or list a condition may build (`+`, `replace`, `join`, `split`).
inline constexpr std::size_t max_result_bytes = 16 * 1024 * 1024;

/// A JSON number: an int64, or a double (also for uint64 beyond int64).
struct number {
  bool integral = true;
  std::int64_t i = 0;
  double d = 0;

  double as_double() const { return integral ? static_cast<double>(i) : d; }
};

/// The number a JSON number holds; nullopt for every other kind.
std::optional<number> as_number(const boost::json::value& v);
/// A whole decimal number after trimming whitespace (`" 3\n"`, `"-1.5e3"`); not inf/nan/hex.
std::optional<number> numeric_string(std::string_view s);
/// A number, or a numeric string read as one.
std::optional<number> numeric(const boost::json::value& v);
boost::json::value to_value(const number& n);

/// `null`, `bool`, `number`, `string`, `list`, `object`.
const char* type_name(const boost::json::value& v);
/// The type with a short excerpt of the value, for messages: `string 'abc'`, `number 5`, `list`.
std::string describe_value(const boost::json::value& v);

/// "true"/"false" in any case (surrounding whitespace ignored): bool-vs-string equality, and
/// the boolean literals of a condition (`TRUE`, as the Python dialect reads it).
std::optional<bool> bool_string(std::string_view s);

/// Truthiness (docs/reference/conditions.md, "Truthiness").
bool truthy(const boost::json::value& v);

/// `is`: the same type (numbers compared numerically) and structurally equal.
bool strict_equal(const boost::json::value& a, const boost::json::value& b);
/// `==` with the coercions of docs/reference/conditions.md, "Comparisons", at the top level.
bool loose_equal(const boost::json::value& a, const boost::json::value& b);
/// Ordering: <0, 0 or >0; nullopt when docs/reference/conditions.md, "Comparisons", calls the pair
/// a type error.
std::optional<int> order(const boost::json::value& a, const boost::json::value& b);

/// A result, or an error message (the caller adds the column).
template <typename T>
using value_or_error = std::variant<T, std::string>;

/// `needle in haystack` (docs/reference/conditions.md, "Comparisons", plus the `in` decisions of
/// condition.hpp).
value_or_error<bool> contains(const boost::json::value& needle, const boost::json::value& haystack);
/// `a op b` for `+ - * / %`.
value_or_error<boost::json::value> arithmetic(binary_op op, const boost::json::value& a, const boost::json::value& b);
/// Unary minus applied `times` times (the operand must be numeric even when `times` is even).
value_or_error<boost::json::value> negate(const boost::json::value& v, std::size_t times);

}  // namespace arun::engine::detail
