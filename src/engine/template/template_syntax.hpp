#pragma once
// Text that opens a template but is not a reference (docs/reference/templates.md, "Syntax"):
// `{{rounds}` (a brace missing), `{{ name | upper }}`, `{{files.split('\n')}}`, `{{range(n)}}`.
// The renderer leaves such text as written, as the older runners do; validate finds it so
// that a typo does not reach bash or a foreach as literal text.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

struct template_flaw {
  std::size_t begin = 0;  ///< offset of the `{{`
  std::size_t end = 0;    ///< one past the text shown in `text`
  std::string text;       ///< the offending text as written (shortened when long)
  /// Its start as it is likely written in a YAML source too: up to the first character a
  /// quoted scalar might escape (a quote, a backslash, a line break), `{{` at least. A
  /// diagnostic points at it.
  std::string source_text;
  std::string problem;  ///< "missing `}`", "filters are not supported", …
  std::string hint;     ///< what to write instead
};

/// `text` as a one-line message shows it: line breaks and tabs escaped (`\n`), at most some
/// 60 bytes (then `…`).
std::string display_text(std::string_view text);

/// Every `{{` of `text` that does not start a reference, in order; a `{{{x}}}` (a brace, then
/// a reference) is none.
std::vector<template_flaw> find_template_flaws(std::string_view text);

}  // namespace arun::engine
