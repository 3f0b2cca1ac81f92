#include "policy/json_extract.hpp"

#include "output_value.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <string>

namespace arun::engine {

namespace {

// Bounds step 3: each opening bracket tried costs a scan (and maybe a parse) of up to the
// rest of the text, so trying them all would be quadratic on input like 100 KB of `[`.
// Real replies put their JSON within the first few brackets.
constexpr int max_bracket_candidates = 64;

std::optional<boost::json::value> parse_whole(std::string_view text) {
  const auto t = trim(text);
  if (t.empty()) return std::nullopt;
  boost::system::error_code ec;
  boost::json::parse_options opts;
  opts.max_depth = 256;  // Boost's default of 32 is too shallow for real JSON output
  auto v = parse_json_exact(t, ec, opts);
  if (ec) return std::nullopt;
  return v;
}

bool is_json_info(std::string_view info) {
  info = trim(info);
  if (info.empty()) return true;
  if (info.size() != 4) return false;
  std::string lowered(info);
  for (auto& c : lowered)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return lowered == "json";
}

std::optional<boost::json::value> from_fences(std::string_view text) {
  constexpr std::string_view fence = "```";
  for (auto open = text.find(fence); open != std::string_view::npos;) {
    const auto info_start = open + fence.size();
    const auto eol = text.find('\n', info_start);
    if (eol == std::string_view::npos) return std::nullopt;
    const auto close = text.find(fence, eol + 1);
    if (close == std::string_view::npos) return std::nullopt;
    if (is_json_info(text.substr(info_start, eol - info_start)))
      if (auto v = parse_whole(text.substr(eol + 1, close - eol - 1))) return v;
    // Blocks are disjoint, so the fence step reads the text once in all.
    open = text.find(fence, close + fence.size());
  }
  return std::nullopt;
}

bool is_opening(char c) { return c == '{' || c == '['; }

// The end (one past the matching bracket) of the balanced span opened at `start`, or npos
// when the text ends first or a closing bracket does not match.
std::size_t balanced_end(std::string_view text, std::size_t start) {
  std::string open;  // the brackets still open, innermost last
  bool in_string = false;
  for (auto i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (is_opening(c)) {
      open.push_back(c);
    } else if (c == '}' || c == ']') {
      if (open.empty() || open.back() != (c == '}' ? '{' : '[')) return std::string_view::npos;
      open.pop_back();
      if (open.empty()) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool is_empty_container(const boost::json::value& v) {
  return (v.is_object() && v.get_object().empty()) || (v.is_array() && v.get_array().empty());
}

// Prose often mentions a bracket before the answer (`config = {} by default.` then the real
// list): of the complete top-level values, the last non-empty one wins, else the last empty one.
std::optional<boost::json::value> from_brackets(std::string_view text) {
  std::optional<boost::json::value> last, last_empty;
  auto start = text.find_first_of("{[");
  for (int tried = 0; start != std::string_view::npos && tried < max_bracket_candidates; ++tried) {
    if (const auto end = balanced_end(text, start); end != std::string_view::npos) {
      if (auto v = parse_whole(text.substr(start, end - start))) {
        (is_empty_container(*v) ? last_empty : last) = std::move(v);
        start = text.find_first_of("{[", end);  // the next top-level value, not one inside this
        continue;
      }
    }
    start = text.find_first_of("{[", start + 1);
  }
  return last ? last : last_empty;
}

}  // namespace

std::optional<boost::json::value> extract_json(std::string_view text) {
  if (auto v = parse_whole(text)) return v;
  if (auto v = from_fences(text)) return v;
  return from_brackets(text);
}

}  // namespace arun::engine
