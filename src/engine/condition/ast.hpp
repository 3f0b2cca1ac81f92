#pragma once
// The syntax tree of a condition (private to the condition module). Chains of one
// precedence level (`a + b - c`, `a and b and c`, `x.y[0].z()`) are one node with a list of
// operands, so the tree is only as deep as the bracket nesting, which the parser bounds:
// evaluation recursion is bounded too.

#include "template/reference.hpp"

#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arun::engine::detail {

enum class node_kind {
  literal,        ///< `value`
  text_template,  ///< a quoted string holding `{{ref}}`s: `name` is its text, rendered at run time
  ref,            ///< `{{ref}}`: `ref`
  identifier,     ///< a bare context name: `name`
  list,           ///< `[a, b]`: `children`
  call,           ///< `name(children…)`; `type_mask` holds isinstance's types
  negate,         ///< `-` applied `repeat` times to `children[0]`
  logical_not,    ///< `not` applied `repeat` times to `children[0]`
  arithmetic,     ///< `children[0] ops[0] children[1] ops[1] …` (+ - * / %), left to right
  comparison,     ///< `children[0] ops[0] children[1]`
  logical_and,    ///< `children` joined by `and`
  logical_or,     ///< `children` joined by `or`
  postfix,        ///< `children[0]` followed by the steps `children[1…]`
  step_attribute, ///< `.name`
  step_subscript, ///< `[children[0]]`
  step_method,    ///< `.name(children…)`
};

enum class binary_op { add, sub, mul, div, mod, eq, ne, lt, le, gt, ge, in, not_in, is, is_not };

struct op_at {
  binary_op op;
  std::size_t column;
};

/// Bits of isinstance's type set.
enum type_bit : unsigned {
  type_null = 1u << 0,
  type_bool = 1u << 1,
  type_int = 1u << 2,
  type_float = 1u << 3,
  type_string = 1u << 4,
  type_list = 1u << 5,
  type_object = 1u << 6,
};

struct node {
  node_kind kind = node_kind::literal;
  std::size_t column = 0;  ///< 1-based start (for errors)
  boost::json::value value;
  std::string name;
  std::optional<reference> ref;
  std::vector<node> children;
  std::vector<op_at> ops;
  std::size_t repeat = 0;
  unsigned type_mask = 0;
};

/// Text of an operator, for messages.
const char* op_text(binary_op op);

}  // namespace arun::engine::detail
