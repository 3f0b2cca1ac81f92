#pragma once
// Secrets (`--secret`, `--secret-file`, `--secret-env`, a recipe's `secrets:`) reach the steps,
// but no form of a secret value reaches what arun shows or keeps: progress, logs, events, the
// journal, state.json, stored outputs, results and audit files pass their text through `mask`,
// which puts `***` in place of every occurrence (GitHub Actions' masking), and the cache keeps
// no output `mask` would change (docs/watching.md#secrets, docs/security.md#secrets).
//
// The forms of a value that are masked (secret_forms.hpp): the value as written; its other line
// ending (CRLF for LF and back); each of its lines of at least `min_line_bytes` characters
// (spaces trimmed; PEM armour lines such as `-----BEGIN … KEY-----` are not secret); and every
// one of those as JSON text escapes it (Boost.JSON's escapes, the all-ASCII `\uXXXX` form of
// Python's json.dumps in lower and upper case, `\/`, and JSON inside JSON) — and, whatever
// characters a JSON string literal spells as `\uXXXX`, the secret in what it decodes to (the
// literal is written again, masked). Transformed forms
// (base64, hex, URL-encoding, a hash) are not: a step that encodes a secret has chosen to.
//
// Used on the event loop's thread only.

#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// Turns text into what may be shown or kept (secrets masked); identity when null.
using line_filter = std::function<std::string(std::string_view)>;

class secret_masker {
public:
  static constexpr std::string_view mask_text = "***";
  /// A line of a multi-line secret shorter than this (spaces trimmed) is not masked on its own:
  /// it would mask ordinary words everywhere and protect little.
  static constexpr std::size_t min_line_bytes = 8;

  /// Masks `value`, in each of its forms, from now on (an empty value masks nothing).
  void add(std::string_view value);
  /// `text` with every form of every secret replaced by `***`; longer forms first, so one that
  /// contains another is masked whole.
  std::string mask(std::string_view text) const;
  /// Masks every object key and every string value of `v` in place: the one walk for JSON
  /// documents, which stay valid and readable. Two keys that mask alike stay apart: the second
  /// becomes `***#2`.
  void mask_json(boost::json::value& v) const;
  /// True when `text` holds no form of a secret (no copy made): `mask(text) == text`.
  bool clean(std::string_view text) const;
  /// The length of the longest form (0: none): how far past a cut a stream must be seen.
  std::size_t longest() const noexcept { return patterns_.empty() ? 0 : patterns_.front().size(); }
  /// The largest position `<= at` where `text` can be cut without keeping the beginning of a
  /// form that runs past `at`. `text` should go on `longest() - 1` bytes past `at` where the
  /// stream did.
  std::size_t safe_cut(std::string_view text, std::size_t at) const noexcept;
  /// The smallest position `>= at` from which `text` can be kept without the end of a form
  /// that began before `at` (`text` holds what came before `at`, up to `longest() - 1` bytes).
  std::size_t safe_start(std::string_view text, std::size_t at) const noexcept;

  bool empty() const noexcept { return patterns_.empty(); }
  /// The forms it masks: grows as secrets are added (a sub-recipe's, once it loads).
  std::size_t forms() const noexcept { return patterns_.size(); }

private:
  void add_pattern(std::string pattern);
  // The forms as they stand in the text (no JSON string decoded).
  bool plain_clean(std::string_view text) const;
  std::string mask_plain(std::string_view text) const;
  std::vector<std::string> patterns_;  // longest first
};

}  // namespace arun::io
