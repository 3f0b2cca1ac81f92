#pragma once
// References `{{ path }}` (docs/reference/templates.md, "Syntax"): parsing a path, finding
// references in a text, and looking a path up in the context. Shared by templates, conditions and
// shell rendering.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// Names (steps, context keys, variables), ordered; looked up by string_view too.
using name_set = std::set<std::string, std::less<>>;

/// One step below the root: `.name` / `['name']` (a key), `[0]` (an index), or `.0` (an index
/// into a list, or the key "0" of an object).
struct path_segment {
  std::string key;                   ///< the key, or the digits of an index
  std::optional<std::size_t> index;  ///< set for `[0]` and `.0`
  bool key_allowed = true;           ///< false for `[0]`: only a list index

  bool operator==(const path_segment&) const = default;
};

struct reference {
  std::string root;
  std::vector<path_segment> path;

  /// Canonical text, e.g. `a.b[0]['c d']`.
  std::string text() const;
  /// The text in template braces, `{{a.b}}`, as messages quote a reference.
  std::string braced() const { return "{{" + text() + "}}"; }
  bool operator==(const reference&) const = default;
};

/// `text` without the spaces, tabs and line ends around it, as a reference may have them
/// inside its braces (`{{ a.b }}`).
std::string_view trim_spaces(std::string_view text);

/// Parses a path expression; surrounding whitespace is allowed. `nullopt` when the text is
/// not a path (`#if x`, `a b`, `1x`): such braces stay literal text.
std::optional<reference> parse_reference(std::string_view text);

/// A `{{ … }}` occurrence: `[begin, end)` covers the braces.
struct reference_span {
  std::size_t begin = 0;
  std::size_t end = 0;
  reference ref;
};

/// Every path reference in `text`, in order. Brace pairs whose inside is not a path are skipped.
std::vector<reference_span> find_references(std::string_view text);

/// `text` is exactly one reference (surrounding whitespace allowed), e.g. `"{{ files }}"`.
std::optional<reference> sole_reference(std::string_view text);

enum class lookup_status { found, root_unset, path_missing };

struct lookup_result {
  lookup_status status = lookup_status::root_unset;
  const boost::json::value* value = nullptr;  ///< set when found
};

/// One step of a path: the member or item `seg` names in `v`, or null when there is none.
const boost::json::value* step_into(const boost::json::value& v, const path_segment& seg);

/// Looks `ref` up: a key of an object, an index of a list (`.0` also works on lists).
lookup_result lookup(const boost::json::object& context, const reference& ref);

}  // namespace arun::engine
