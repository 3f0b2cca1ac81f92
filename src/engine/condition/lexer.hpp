#pragma once
// Tokens of a condition (private to the condition module).

#include "condition/condition.hpp"

#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::engine::detail {

enum class token_kind {
  end,         ///< after the last token
  number,      ///< `value`
  string,      ///< a quoted literal, escapes applied: `text`
  identifier,  ///< names and keywords: `text`
  ref,         ///< `{{ path }}`: `ref`
  dot_name,    ///< `.name` or `.0`: `text` is the name
  symbol,      ///< operators and brackets: `text`
};

struct token {
  token_kind kind = token_kind::end;
  std::size_t column = 0;  ///< 1-based
  std::string text;
  boost::json::value value;
  std::optional<reference> ref;
};

/// Splits `text` into tokens ending with one `end` token, or the first lexical error.
std::variant<std::vector<token>, condition_error> tokenize(std::string_view text);

/// How a token reads in a message: `'=='`, `name 'x'`, `end of condition`.
std::string describe(const token& t);

}  // namespace arun::engine::detail
