#include <arun/diagnostics.hpp>

#include <algorithm>

namespace arun {

std::string format_diagnostic(const diagnostic& d) {
  std::string s = d.where.file;
  if (d.where.line > 0) s += ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column);
  s += d.level == severity::error ? ": error: " : ": warning: ";
  s += d.message;
  if (!d.hint.empty()) s += " (" + d.hint + ")";
  return s;
}

bool has_errors(const std::vector<diagnostic>& ds) noexcept {
  return std::any_of(ds.begin(), ds.end(), [](const diagnostic& d) { return d.level == severity::error; });
}

}  // namespace arun
