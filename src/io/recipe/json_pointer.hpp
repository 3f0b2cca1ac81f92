#pragma once
// JSON pointers as valijson reads them: the tokens of a `$ref` and the value they name. Shared
// by the output_schema compiler (which follows $refs to check them) and its messages (which
// follow them to the keyword that failed).

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::io {

/// The tokens of a $ref's JSON pointer, decoded as valijson decodes them (~1, ~0, then %XX;
/// empty tokens are skipped); nullopt when it cannot be decoded.
inline std::optional<std::vector<std::string>> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer.front() != '/') return std::nullopt;
  std::size_t at = 1;
  while (at <= pointer.size()) {
    const auto end = std::min(pointer.find('/', at), pointer.size());
    std::string token(pointer.substr(at, end - at));
    for (auto [from, to] : {std::pair{"~1", "/"}, {"~0", "~"}})
      for (auto n = token.find(from); n != std::string::npos; n = token.find(from, n + 1)) token.replace(n, 2, to);
    for (auto n = token.find('%'); n != std::string::npos; n = token.find('%', n + 1)) {
      unsigned value = 0;
      const char* first = token.data() + n + 1;
      if (n + 3 > token.size()) return std::nullopt;
      if (auto [p, ec] = std::from_chars(first, first + 2, value, 16); ec != std::errc() || p != first + 2) return std::nullopt;
      token.replace(n, 3, 1, static_cast<char>(value));
    }
    if (!token.empty()) tokens.push_back(std::move(token));
    at = end + 1;
  }
  return tokens;
}

/// The value at `tokens` below `root`, found as valijson finds it (an array index is the
/// token's leading digits); null when there is none.
template <class Value>
Value* value_at(Value& root, const std::vector<std::string>& tokens) {
  Value* v = &root;
  for (const auto& token : tokens) {
    if (auto* o = v->if_object()) {
      v = o->if_contains(token);
    } else if (auto* a = v->if_array()) {
      std::size_t index = 0;
      const auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      v = ec == std::errc() && p != token.data() && index < a->size() ? &(*a)[index] : nullptr;
    } else {
      v = nullptr;
    }
    if (!v) return nullptr;
  }
  return v;
}

}  // namespace arun::io
