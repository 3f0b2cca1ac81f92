#pragma once
// The whitelisted functions and string methods (docs/reference/conditions.md, "Functions",
// "String methods"), private to the condition module.

#include "condition/ast.hpp"

#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::engine::detail {

struct builtin {
  std::string_view name;
  std::size_t min_args;
  std::size_t max_args;
};

/// The function or method called `name`, or null when it is not whitelisted.
const builtin* find_function(std::string_view name);
const builtin* find_method(std::string_view name);

/// A result, or an error message (the caller adds the column).
using builtin_result = std::variant<boost::json::value, std::string>;

/// Calls a whitelisted function on evaluated arguments; arity was checked by the parser.
/// `type_mask` is isinstance's set of types.
builtin_result call_function(std::string_view name, std::vector<boost::json::value>& args, unsigned type_mask);

/// Calls a whitelisted string method; arity was checked by the parser.
builtin_result call_method(std::string_view name, const boost::json::value& receiver,
                           const std::vector<boost::json::value>& args);

}  // namespace arun::engine::detail
