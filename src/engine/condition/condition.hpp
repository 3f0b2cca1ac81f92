#pragma once
// Conditions (docs/reference/conditions.md): a sandboxed expression language over the context.
// Parsing and evaluation are pure functions: no I/O, no logging, no exceptions for bad input.
//
// These rules hold (decisions; docs/reference/conditions.md documents them for users):
// - Lexing: identifiers are `[A-Za-z_][A-Za-z0-9_]*` (a dashed name needs `{{dash-name}}`);
//   numbers start with a digit (`1`, `1.5`, `2e3`); an integer literal too large for int64
//   becomes a double. Strings take `\\ \' \" \n \t \r \0`; any other backslash is kept, as
//   in Python. `!`, `=`, `|` and `&` alone are errors that say to use `not`, `==`, `or`, `and`.
// - `.name` on a list with a digit name (`x.0`) indexes it, as templates do. `[i]` takes an
//   integer on a list or string (negative counts from the end) and a string on an object;
//   any other pairing, or an index out of range, gives null. Strings index by byte.
// - `and`/`or` return the deciding operand, as Python does (`x or 'default'`); the
//   condition's result is that value's truthiness. Comparisons cannot be chained
//   (`1 < x < 3` is a parse error that says to use `and`).
// - `is` / `is not` compare without coercion: same JSON type (every number is one type) and
//   equal, so `x is None`, `flag is true`. `==` inside lists and objects compares numbers
//   numerically but does not apply the string coercions.
// - `in` on a list uses `==` (coercions included); on an object only a string needle can be
//   found (as a key); on a string a number or bool needle is searched as its text, a null
//   needle is not found, a list or object needle is a type error. `x in 5` is a type error.
// - Arithmetic works on numbers, and on a numeric string paired with a number (so an output
//   of "3\n" plus 1 is 4). Integers stay integers until they would overflow int64, then
//   become doubles; a non-finite result is an error. `/` always gives a double; `%` follows
//   Python's sign rule; dividing by zero is an error. `+` also concatenates two strings or
//   two lists. `*` does not repeat strings. Strings over 16 MiB and lists over 1 Mi items
//   are an error.
// - A numeric string is a whole decimal number after trimming whitespace (`" 3\n"`,
//   `"-1.5e3"`); `inf`, `nan` and hex are not numeric. Likewise `"true\n"` equals `true`
//   (whitespace is trimmed for the bool coercion of `==` too; truthiness does not trim).
// - Functions: `int(x)` truncates toward zero and accepts numbers, bools and numeric strings;
//   `float(x)` likewise; `str(x)` is the template text of x (null → "", true → "true");
//   `bool(x)` is truthiness; `len` counts bytes of a string, items of a list or object, and
//   is 0 for null; `min`/`max` take one non-empty list or two or more values, ordered as
//   `<` orders them. `isinstance(x, T)` takes T as a bare name or string, or a list of them:
//   `str int float bool list dict None` (also `none`, `null`, `NoneType`); bools are not
//   ints and ints are not floats.
// - Methods need a string receiver (anything else is a type error), work on bytes, and
//   change case in ASCII only. `strip/lstrip/rstrip([chars])`, `split([sep[, maxsplit]])`,
//   `replace(old, new[, count])`, `count`, `find` follow Python; `startswith`/`endswith`
//   take a string or a list of strings; `sep.join(list)` writes each item as its template
//   text; `s.contains(sub)` is `sub in s` for strings.
// - Function and method arity, unknown names, names containing `__` (identifiers,
//   attributes, functions, methods; not `{{ref}}` paths, which name context keys) and bad
//   `isinstance` types are parse errors; value type errors are evaluation errors.
// - A bare undefined identifier is null without a warning in every mode; `--strict` governs
//   only `{{ref}}`. A `{{ref}}` declared but unset is null with a warning (error if strict).
// - Nesting counts every `(` and `[` (groups, calls, lists, subscripts); more than 64 open at
//   once is an error. Columns are 1-based byte offsets into the condition text.

#include "template/reference.hpp"
#include "template/render.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::engine {

namespace detail {
struct node;
}

/// The longest condition text accepted (docs/reference/recipe.md, "Limits").
inline constexpr std::size_t max_condition_bytes = 8 * 1024;
/// The most brackets that may be open at once.
inline constexpr std::size_t max_condition_nesting = 64;

struct condition_error {
  std::string message;
  std::size_t column = 0;  ///< 1-based byte position in the condition text

  bool operator==(const condition_error&) const = default;
};

/// A parsed condition. Cheap to copy: copies share the immutable syntax tree.
class condition {
 public:
  condition(std::shared_ptr<const detail::node> root, std::vector<reference> references);

  /// The syntax tree (for the evaluator).
  const detail::node& root() const noexcept { return *root_; }
  /// Every `{{reference}}`, in source order, duplicates kept.
  const std::vector<reference>& references() const noexcept { return references_; }

 private:
  std::shared_ptr<const detail::node> root_;
  std::vector<reference> references_;
};

/// Parses `text`. Never throws for bad input: an error names the column and what was
/// expected there.
std::variant<condition, condition_error> parse_condition(std::string_view text);

/// Every `{{reference}}` the condition uses, in quoted literals too, in source order: for
/// static checks of undeclared names.
std::vector<reference> condition_references(const condition& c);

/// A bare name in a condition (`mode` in `mode == 'quick'`): a context name, null when unset.
struct bare_name {
  std::string name;
  std::size_t column = 0;  ///< 1-based byte position in the condition text
  bool compared = false;   ///< an operand of ==, !=, in, not in: maybe a string left unquoted
};

/// Every bare name the condition reads, in source order: for static checks of undeclared names.
std::vector<bare_name> condition_names(const condition& c);

struct condition_outcome {
  bool value = false;                     ///< the truthiness of the result; false on error
  std::vector<std::string> warnings;      ///< undefined references rendered as null
  std::optional<condition_error> error;   ///< the step fails when set
};

/// Evaluates against `scope.context` with the undefined rules of docs/reference/templates.md,
/// "Undefined references"; docs/reference/conditions.md, "Undefined names". Never throws;
/// `and`/`or` short-circuit, so the side not evaluated cannot warn or fail.
condition_outcome evaluate_condition(const condition& c, const render_scope& scope);

}  // namespace arun::engine
