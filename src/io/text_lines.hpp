#pragma once
// Lines of a text by number, for messages that quote a source line.

#include <cstddef>
#include <string_view>

namespace arun::io {

/// Line `number` (1-based) of `text`, without its line break; empty past the end.
inline std::string_view text_line(std::string_view text, std::size_t number) {
  std::size_t begin = 0;
  for (std::size_t n = 1; n < number; ++n) {
    begin = text.find('\n', begin);
    if (begin == std::string_view::npos) return {};
    ++begin;
  }
  const auto end = text.find('\n', begin);
  return text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
}

}  // namespace arun::io
