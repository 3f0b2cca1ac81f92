#include "instance_glob.hpp"

namespace arun::cli {

bool instance_glob_match(std::string_view pattern, std::string_view id) {
  // Greedy with one back-track point: the last `*` seen and where it started matching.
  std::size_t p = 0, i = 0, star = std::string_view::npos, resume = 0;
  while (i < id.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = i;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == id[i])) {
      ++p;
      ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace arun::cli
