#include "template/template_syntax.hpp"

#include "template/reference.hpp"

#include <algorithm>

namespace arun::engine {
namespace {

constexpr std::size_t shown_max = 60;
constexpr std::string_view path_only =
    "a template holds a path only ({{name}}, {{name.key}}, {{name[0]}}); arun leaves other text as written";

template_flaw flaw(std::string_view text, std::size_t begin, std::size_t end, std::string problem, std::string hint) {
  const auto written = text.substr(begin, end - begin);
  const auto stop = std::min(written.find_first_of("'\"\\\r\n\t", 2), written.size());
  return {begin, end, display_text(written), std::string(written.substr(0, stop)), std::move(problem), std::move(hint)};
}

// A `{{` that no `}}` closes before the next `{{`.
template_flaw unclosed(std::string_view text, std::size_t at) {
  const auto rest = text.substr(at + 2);
  const auto stop = rest.find_first_of("{}\n");
  if (stop != std::string_view::npos && rest[stop] == '}') {
    const auto inside = trim_spaces(rest.substr(0, stop));
    if (parse_reference(inside))
      return flaw(text, at, at + 2 + stop + 1, "a `}` is missing (a reference ends with `}}`)",
                  "write {{" + std::string(inside) + "}}");
  }
  auto seen = rest.substr(0, std::min(stop, rest.size()));
  seen = seen.substr(0, seen.find_last_not_of(" \t\r") + 1);
  return flaw(text, at, at + 2 + seen.size(), "no `}}` closes it", std::string(path_only));
}

// `{{ … }}` whose inside is not a path: say which other template language it looks like.
template_flaw not_a_path(std::string_view text, std::size_t begin, std::size_t end, std::string_view inside) {
  const auto t = trim_spaces(inside);
  if (t.empty()) return flaw(text, begin, end, "the braces are empty", "write a name between them: {{name}}");
  if (std::string_view("#/^>!.").find(t[0]) != std::string_view::npos || t.starts_with("else"))
    return flaw(text, begin, end, "blocks and other template languages (Handlebars, Jinja, Go) are not supported",
                std::string(path_only));
  if (const auto bar = t.find('|'); bar != std::string_view::npos && parse_reference(t.substr(0, bar)))
    return flaw(text, begin, end, "filters are not supported",
                "insert the value as it is, {{" + std::string(trim_spaces(t.substr(0, bar))) +
                    "}}, and transform it in the command or in a step with `output:`");
  if (const auto paren = t.find('('); paren != std::string_view::npos) {
    if (const auto ref = parse_reference(t.substr(0, paren))) {
      if (ref->path.empty())
        return flaw(text, begin, end, "function calls are not supported",
                    "compute the value in a step with `output:` and insert it with {{name}}");
      if (ref->path.back().key == "split" || ref->path.back().key == "splitlines")
        return flaw(text, begin, end, "method calls are not supported",
                    "to loop over the lines of a text, write foreach: {lines: \"{{" +
                        reference{ref->root, {ref->path.begin(), ref->path.end() - 1}}.text() + "}}\"}");
      return flaw(text, begin, end, "method calls are not supported",
                  "compute the value in a step with `output:` and insert it with {{name}}");
    }
  }
  return flaw(text, begin, end, "it is not a path (expressions are not supported)", std::string(path_only));
}

}  // namespace

std::string display_text(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Never cut a UTF-8 sequence.
    if (out.size() >= shown_max && (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) return out + "…";
    const char c = text[i];
    out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : std::string(1, c);
  }
  return out;
}

std::vector<template_flaw> find_template_flaws(std::string_view text) {
  std::vector<template_flaw> out;
  // Every `{{` starting in [from, to) that ends before `to`: none closes it. Only braces up to
  // `to` (`{{{{x}}}}`) are braces around the reference, not an opening.
  const auto unclosed_between = [&](std::size_t from, std::size_t to) {
    for (auto p = text.find("{{", from); p != std::string_view::npos && p + 2 <= to; p = text.find("{{", p + 2)) {
      if (text.find_first_not_of('{', p) >= to) break;
      while (p + 2 < text.size() && text[p + 2] == '{') ++p;  // `{{{x}`: a brace, then `{{x}`
      out.push_back(unclosed(text, p));
    }
  };
  // The pairing find_references uses (reference.cpp), so that exactly its leftovers are found.
  std::size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string_view::npos) {
    const auto close = text.find("}}", pos + 2);
    if (close == std::string_view::npos) {
      unclosed_between(pos, text.size());
      break;
    }
    const auto inner_open = text.rfind("{{", close);
    unclosed_between(pos, inner_open);
    const auto inside = text.substr(inner_open + 2, close - inner_open - 2);
    if (!parse_reference(inside)) out.push_back(not_a_path(text, inner_open, close + 2, inside));
    pos = close + 2;
  }
  return out;
}

}  // namespace arun::engine
