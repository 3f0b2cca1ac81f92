#include <arun/diagnostics.hpp>

#include <algorithm>
#include <vector>

namespace arun {

std::string format_diagnostic(const diagnostic& d) {
  std::string s = d.where.file;
  if (d.where.line > 0) s += ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column);
  s += d.level == severity::error ? ": error: " : ": warning: ";
  s += d.message;
  if (!d.hint.empty()) s += " (" + d.hint + ")";
  return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const auto above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string did_you_mean(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  std::size_t best_distance = 3;  // docs/reference/recipe.md, "The file": suggestions within edit distance 2
  for (auto k : known) {
    const auto d = edit_distance(key, k);
    if (d < best_distance) best_distance = d, best = k;
  }
  return best.empty() ? std::string() : "did you mean '" + std::string(best) + "'?";
}

bool has_errors(const std::vector<diagnostic>& ds) noexcept {
  return std::any_of(ds.begin(), ds.end(), [](const diagnostic& d) { return d.level == severity::error; });
}

}  // namespace arun
