#include "scheduler/foreach_lines.hpp"

#include "template/render.hpp"

#include <arun/value_format.hpp>

namespace arun::engine {

boost::json::array text_lines(std::string_view text) {
  boost::json::array out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    auto line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r\f\v") != std::string_view::npos) out.emplace_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

const boost::json::string* lines_text(const boost::json::value& items) {
  const auto* o = items.if_object();
  const auto* text = o ? o->if_contains("lines") : nullptr;
  return text ? text->if_string() : nullptr;
}

std::variant<boost::json::array, std::string> foreach_lines(const boost::json::value& rendered) {
  if (rendered.is_array() || rendered.is_object())
    return "foreach {lines: …} needs a text, got " + std::string(rendered.is_array() ? "a list" : "an object") +
           ": to loop over a list, write foreach: \"{{name}}\"";
  if (rendered.is_null()) return boost::json::array();
  return text_lines(value_text(rendered));
}

std::variant<boost::json::array, std::string> foreach_items(const boost::json::value& written,
                                                            const boost::json::value& rendered) {
  if (lines_text(written)) return foreach_lines(rendered.as_object().at("lines"));
  if (const auto* a = rendered.if_array()) return *a;
  if (const auto* s = rendered.if_string()) {
    // Numbers as written (docs/reference/formats.md, "Numbers"): a list text a step printed
    // keeps 1e400 and 123456789012345678901234567890 as their text, never null or rounded.
    boost::system::error_code ec;
    auto parsed = parse_json_exact(*s, ec, {});
    if (!ec && parsed.is_array()) return std::move(parsed.as_array());
    return "foreach needs a list, got a string that is not a JSON list" +
           std::string(s->find('\n') != boost::json::string::npos ? " (for its lines, write foreach: {lines: \"{{text}}\"})" : "");
  }
  return "foreach needs a list, got " + std::string(rendered.is_null() ? "null (no value)" : to_string(rendered.kind()));
}

}  // namespace arun::engine
