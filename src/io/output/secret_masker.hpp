#pragma once
// Secrets (`--secret`, `--secret-env`, a recipe's `secrets:`) reach the steps, but no byte
// sequence of a secret value reaches what arun shows or keeps: progress, logs, events, the
// journal, state.json, stored outputs, results and audit files pass their text through
// `mask`, which puts `***` in place of every occurrence (GitHub Actions' masking).
//
// Each value is masked as written, as JSON escapes it (a value with `"`, `\`, control bytes or
// non-ASCII appears that way inside JSON text), and line by line when it spans lines (a step
// printing a PEM key prints it a line at a time). Used on the event loop's thread only.

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

  /// Masks `value` from now on (an empty value masks nothing).
  void add(std::string_view value);
  /// `text` with every secret replaced by `***`; longer secrets first, so one that contains
  /// another is masked whole.
  std::string mask(std::string_view text) const;
  /// Masks every string value of `v` in place (keys are names and stay): for JSON documents,
  /// which stay valid and readable.
  void mask_json(boost::json::value& v) const;
  /// True when `text` holds no secret (no copy made).
  bool clean(std::string_view text) const;

  bool empty() const noexcept { return patterns_.empty(); }

private:
  void add_pattern(std::string pattern);
  std::vector<std::string> patterns_;  // longest first
};

}  // namespace arun::io
