// The whitelisted string methods (docs/reference/conditions.md, "String methods"), byte-based and
// ASCII-cased, following Python's str methods where they exist.
#include "condition/builtins.hpp"

#include "condition/values.hpp"
#include "template/render.hpp"

#include <cstdint>
#include <optional>

namespace arun::engine::detail {
namespace {

namespace json = boost::json;

constexpr std::string_view whitespace = " \t\n\r\f\v";

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }

json::value text(std::string_view s) { return json::value(json::string(s)); }
json::value integer(std::size_t n) { return json::value(static_cast<std::int64_t>(n)); }

// The arguments of one method call, with typed access that names the method on errors.
struct call {
  std::string_view name;
  std::string_view s;
  const std::vector<json::value>& args;
  std::string error;

  std::optional<std::string_view> string_arg(std::size_t i) {
    if (const auto* str = args[i].if_string()) return std::string_view(*str);
    error = "." + std::string(name) + "() argument " + std::to_string(i + 1) + " must be a string, got " +
            describe_value(args[i]);
    return std::nullopt;
  }
  // An optional argument: absent or null gives `fallback`.
  std::optional<std::string_view> string_arg_or(std::size_t i, std::string_view fallback) {
    if (i >= args.size() || args[i].is_null()) return fallback;
    return string_arg(i);
  }
  // An optional count: absent or negative means "no limit".
  std::optional<std::size_t> limit_arg(std::size_t i) {
    if (i >= args.size()) return SIZE_MAX;
    const auto n = as_number(args[i]);
    if (!n || !n->integral) {
      error = "." + std::string(name) + "() argument " + std::to_string(i + 1) + " must be an integer, got " +
              describe_value(args[i]);
      return std::nullopt;
    }
    return n->i < 0 ? SIZE_MAX : static_cast<std::size_t>(n->i);
  }
  builtin_result failed() { return std::move(error); }
};

builtin_result strip(call& c) {
  const auto chars = c.string_arg_or(0, whitespace);
  if (!chars) return c.failed();
  auto s = c.s;
  const bool left = c.name != "rstrip", right = c.name != "lstrip";
  if (left) s.remove_prefix(std::min(s.size(), s.find_first_not_of(*chars)));
  if (right) {
    const auto last = s.find_last_not_of(*chars);
    s = last == std::string_view::npos ? std::string_view() : s.substr(0, last + 1);
  }
  return text(s);
}

builtin_result change_case(const call& c) {
  std::string out(c.s);
  bool previous_cased = false;
  for (auto& ch : out) {
    if (c.name == "lower") ch = to_lower(ch);
    else if (c.name == "upper") ch = to_upper(ch);
    else {  // title: a letter after a non-letter is upper-cased, every other letter lower-cased
      const bool cased = is_lower(ch) || is_upper(ch);
      ch = previous_cased ? to_lower(ch) : to_upper(ch);
      previous_cased = cased;
    }
  }
  return text(out);
}

builtin_result affix(call& c) {
  const bool start = c.name == "startswith";
  const auto matches = [&](std::string_view a) { return start ? c.s.starts_with(a) : c.s.ends_with(a); };
  if (const auto* list = c.args[0].if_array()) {
    for (const auto& item : *list) {
      if (!item.is_string())
        return "." + std::string(c.name) + "() list items must be strings, got " + describe_value(item);
      if (matches(item.get_string())) return json::value(true);
    }
    return json::value(false);
  }
  if (!c.args[0].is_string())
    return "." + std::string(c.name) + "() argument 1 must be a string or a list of strings, got " +
           describe_value(c.args[0]);
  return json::value(matches(c.args[0].get_string()));
}

std::size_t count_of(std::string_view s, std::string_view sub, std::size_t limit) {
  if (sub.empty()) return std::min(limit, s.size() + 1);
  std::size_t n = 0;
  for (auto at = s.find(sub); n < limit && at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

builtin_result replace(call& c) {
  const auto old_text = c.string_arg(0);
  const auto new_text = old_text ? c.string_arg(1) : std::nullopt;
  const auto limit = new_text ? c.limit_arg(2) : std::nullopt;
  if (!limit) return c.failed();
  const auto n = count_of(c.s, *old_text, *limit);
  // Sized before building, so a huge result is refused without being allocated.
  if (c.s.size() - n * old_text->size() + n * new_text->size() > max_result_bytes)
    return std::string(".replace() would build a string over 16 MiB");
  std::string out;
  std::size_t copied = 0;
  for (std::size_t done = 0; done < n; ++done) {
    const auto at = old_text->empty() ? copied + (done > 0) : c.s.find(*old_text, copied);
    out.append(c.s.substr(copied, at - copied)).append(*new_text);
    copied = at + old_text->size();
  }
  out.append(c.s.substr(std::min(copied, c.s.size())));
  return text(out);
}

json::value split_on(std::string_view s, std::string_view sep, std::size_t limit) {
  json::array parts;
  for (auto at = s.find(sep); parts.size() < limit && at != std::string_view::npos; at = s.find(sep)) {
    parts.push_back(text(s.substr(0, at)));
    s.remove_prefix(at + sep.size());
  }
  parts.push_back(text(s));
  return json::value(std::move(parts));
}

// Python's split(): runs of whitespace separate, leading and trailing whitespace gives no
// empty parts, and the part left after `limit` splits keeps its trailing whitespace.
json::value split_space(std::string_view s, std::size_t limit) {
  json::array parts;
  const auto skip_space = [&s] { s.remove_prefix(std::min(s.size(), s.find_first_not_of(whitespace))); };
  skip_space();
  while (!s.empty()) {
    const auto cut = parts.size() >= limit ? std::string_view::npos : s.find_first_of(whitespace);
    parts.push_back(text(s.substr(0, cut)));
    if (cut == std::string_view::npos) break;
    s.remove_prefix(cut);
    skip_space();
  }
  return json::value(std::move(parts));
}

builtin_result split(call& c) {
  const bool by_space = c.args.empty() || c.args[0].is_null();
  std::string_view sep;
  if (!by_space) {
    const auto given = c.string_arg(0);
    if (!given) return c.failed();
    if (given->empty()) return std::string(".split() separator is empty");
    sep = *given;
  }
  const auto limit = c.limit_arg(1);
  if (!limit) return c.failed();
  return by_space ? split_space(c.s, *limit) : split_on(c.s, sep, *limit);
}

builtin_result join(const call& c) {
  const auto* list = c.args[0].if_array();
  if (!list) return ".join() needs a list, got " + describe_value(c.args[0]);
  std::string out;
  for (std::size_t i = 0; i < list->size(); ++i) {
    if (i > 0) out += c.s;
    out += value_text((*list)[i]);
    if (out.size() > max_result_bytes) return std::string(".join() would build a string over 16 MiB");
  }
  return text(out);
}

builtin_result search(call& c) {
  const auto sub = c.string_arg(0);
  if (!sub) return c.failed();
  if (c.name == "count") return integer(count_of(c.s, *sub, SIZE_MAX));
  const auto at = c.s.find(*sub);
  if (c.name == "contains") return json::value(at != std::string_view::npos);
  return at == std::string_view::npos ? json::value(std::int64_t{-1}) : integer(at);
}

}  // namespace

builtin_result call_method(std::string_view name, const json::value& receiver, const std::vector<json::value>& args) {
  // A number, boolean or null acts as its text, as in a template (`count.strip() == '1'`,
  // smart-orchestrator's real guard); lists and objects have no such text to work on.
  if (receiver.is_array() || receiver.is_object())
    return "." + std::string(name) + "() needs a string, got " + describe_value(receiver);
  const std::string text = receiver.is_string() ? std::string() : value_text(receiver);
  call c{name, receiver.is_string() ? std::string_view(receiver.get_string()) : std::string_view(text), args, {}};
  if (name == "strip" || name == "lstrip" || name == "rstrip") return strip(c);
  if (name == "lower" || name == "upper" || name == "title") return change_case(c);
  if (name == "startswith" || name == "endswith") return affix(c);
  if (name == "replace") return replace(c);
  if (name == "split") return split(c);
  if (name == "join") return join(c);
  return search(c);  // count, find, contains
}

}  // namespace arun::engine::detail
