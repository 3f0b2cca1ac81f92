#include "template/reference.hpp"

#include "ascii.hpp"

#include <charconv>

namespace arun::engine {
namespace {

bool is_ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '-'; }

std::optional<std::size_t> to_index(std::string_view digits) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// A small cursor over the path text.
struct path_parser {
  std::string_view s;
  std::size_t i = 0;

  bool done() const { return i >= s.size(); }
  std::string_view take_while(bool (*pred)(char)) {
    const auto start = i;
    while (i < s.size() && pred(s[i])) ++i;
    return s.substr(start, i - start);
  }

  // `.name` or `.0`
  std::optional<path_segment> dotted() {
    ++i;
    if (i < s.size() && is_ascii_digit(s[i])) {
      const auto digits = take_while(is_ascii_digit);
      if (i < s.size() && is_ident_char(s[i])) return std::nullopt;  // `.0abc`
      auto index = to_index(digits);
      if (!index) return std::nullopt;
      return path_segment{std::string(digits), index, true};
    }
    if (i >= s.size() || !is_ident_start(s[i])) return std::nullopt;
    return path_segment{std::string(take_while(is_ident_char)), std::nullopt, true};
  }

  // `[0]`, `['key']` or `["key"]`
  std::optional<path_segment> bracketed() {
    ++i;
    if (i < s.size() && (s[i] == '\'' || s[i] == '"')) {
      const char quote = s[i++];
      const auto close = s.find(quote, i);
      if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ']') return std::nullopt;
      path_segment seg{std::string(s.substr(i, close - i)), std::nullopt, true};
      i = close + 2;
      return seg;
    }
    const auto digits = take_while(is_ascii_digit);
    if (digits.empty() || i >= s.size() || s[i] != ']') return std::nullopt;
    ++i;
    auto index = to_index(digits);
    if (!index) return std::nullopt;
    return path_segment{std::string(digits), index, false};
  }
};

}  // namespace

std::string_view trim_spaces(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

std::string reference::text() const {
  std::string t = root;
  for (const auto& seg : path) {
    if (seg.index && !seg.key_allowed)
      t += "[" + seg.key + "]";
    else if (seg.index || (!seg.key.empty() && is_ident_start(seg.key[0]) &&
                           seg.key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
                               std::string::npos))
      t += "." + seg.key;
    else
      t += "['" + seg.key + "']";
  }
  return t;
}

std::optional<reference> parse_reference(std::string_view text) {
  path_parser p{trim_spaces(text)};
  if (p.done() || !is_ident_start(p.s[0])) return std::nullopt;
  reference ref;
  ref.root = std::string(p.take_while(is_ident_char));
  while (!p.done()) {
    std::optional<path_segment> seg;
    if (p.s[p.i] == '.')
      seg = p.dotted();
    else if (p.s[p.i] == '[')
      seg = p.bracketed();
    if (!seg) return std::nullopt;
    ref.path.push_back(std::move(*seg));
  }
  return ref;
}

std::vector<reference_span> find_references(std::string_view text) {
  std::vector<reference_span> found;
  std::size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string_view::npos) {
    const auto close = text.find("}}", pos + 2);
    if (close == std::string_view::npos) break;
    // The innermost pair: `{{{x}}}` is a brace then `{{x}}`.
    const auto inner_open = text.rfind("{{", close);
    if (auto ref = parse_reference(text.substr(inner_open + 2, close - inner_open - 2)))
      found.push_back({inner_open, close + 2, std::move(*ref)});
    pos = close + 2;
  }
  return found;
}

std::optional<reference> sole_reference(std::string_view text) {
  const auto t = trim_spaces(text);
  const auto refs = find_references(t);
  if (refs.size() != 1 || refs[0].begin != 0 || refs[0].end != t.size()) return std::nullopt;
  return refs[0].ref;
}

const boost::json::value* step_into(const boost::json::value& v, const path_segment& seg) {
  if (const auto* arr = v.if_array(); arr && seg.index) return *seg.index < arr->size() ? &(*arr)[*seg.index] : nullptr;
  if (const auto* obj = v.if_object(); obj && seg.key_allowed) {
    const auto it = obj->find(seg.key);
    return it == obj->end() ? nullptr : &it->value();
  }
  return nullptr;
}

lookup_result lookup(const boost::json::object& context, const reference& ref) {
  const auto root = context.find(ref.root);
  if (root == context.end()) return {lookup_status::root_unset, nullptr};
  const boost::json::value* v = &root->value();
  for (const auto& seg : ref.path)
    if ((v = step_into(*v, seg)) == nullptr) return {lookup_status::path_missing, nullptr};
  return {lookup_status::found, v};
}

}  // namespace arun::engine
