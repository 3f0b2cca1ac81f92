#include "recipe/yaml_traps.hpp"

#include "files/text_lines.hpp"

#include <algorithm>

namespace arun::io {
namespace {

// Where the keys of the line's mapping start: after its indentation and any `- `.
std::size_t key_column(std::string_view line) {
  std::size_t at = line.find_first_not_of(' ');
  while (at != std::string_view::npos && at + 1 < line.size() && line[at] == '-' && line[at + 1] == ' ')
    at = line.find_first_not_of(' ', at + 1);
  return at == std::string_view::npos ? line.size() : at;
}

bool blank_or_comment(std::string_view line) {
  const auto at = line.find_first_not_of(" \t");
  return at == std::string_view::npos || line[at] == '#';
}

// The nearest line above `index` that holds a key, as (its key's column, the key).
std::pair<std::size_t, std::string> key_above(std::string_view source, std::size_t index) {
  while (index-- > 0) {
    const auto line = text_line(source, index + 1);
    if (blank_or_comment(line)) continue;
    const auto column = key_column(line);
    const auto colon = line.find(':', column);
    if (colon == std::string_view::npos) continue;
    return {column, std::string(line.substr(column, colon - column))};
  }
  return {0, {}};
}

}  // namespace

std::string yaml_error_hint(std::string_view source, const YAML::Mark& mark, std::string_view message) {
  if (mark.line < 0) return {};
  const auto index = static_cast<std::size_t>(mark.line);
  const auto line = text_line(source, index + 1);
  const auto indent_end = line.find_first_not_of(" \t-");
  if (line.substr(0, indent_end).find('\t') != std::string_view::npos)
    return "YAML does not allow tabs in indentation: indent with spaces";
  const auto column = key_column(line);
  const auto first_colon = line.find(": ", column);
  const auto at = static_cast<std::size_t>(std::max(mark.column, 0));
  if (message == "illegal map value" && first_colon != std::string_view::npos && at > first_colon + 1)
    return "a plain value cannot contain ': ' — write it as a block (`key: |` and the text indented on the next "
           "lines) or quote it";
  if (message == "illegal map value" || message == "end of sequence not found" || message == "end of map not found") {
    const auto [expected, key] = key_above(source, index);
    if (!key.empty() && column != expected && !blank_or_comment(line))
      return "this line's key starts at column " + std::to_string(column + 1) + "; the keys of its mapping ('" + key +
             "' above) start at column " + std::to_string(expected + 1);
  }
  return {};
}

std::string unquoted_template_hint(const yaml::node& node) {
  if (!node.IsMap() && !node.IsSequence()) return {};
  if (node.Style() != YAML::EmitterStyle::Flow) return {};
  // `{{x}}` is a flow mapping whose only key is the mapping {x}.
  if (node.IsMap() && node.size() == 1 && (*node.begin()).first.IsMap())
    return "YAML reads an unquoted {{...}} as a mapping: quote the whole value, e.g. \"{{name}}\"";
  return "YAML reads an unquoted value starting with '{' or '[' as a mapping or list: quote the whole value";
}

}  // namespace arun::io
