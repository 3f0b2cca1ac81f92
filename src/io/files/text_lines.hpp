#pragma once
// Lines of a text by number, for messages that quote a source line.

#include <cstddef>
#include <string>
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

/// The largest position `<= at` (at most text.size()) that is not inside a UTF-8 character:
/// where a text can be cut without splitting one.
inline std::size_t character_boundary(std::string_view text, std::size_t at) {
  if (at >= text.size()) return text.size();
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
  return at;
}

/// The first line of `text`, cut to `max` bytes on a UTF-8 character boundary ("..." marks
/// the cut; " ..." marks lines left out): a label or a summary line.
inline std::string one_line(std::string_view text, std::size_t max = 72) {
  std::string s(text.substr(0, text.find('\n')));
  if (s.size() > max) {
    s = s.substr(0, character_boundary(s, max - 3)) + "...";
  } else if (text.find('\n') != std::string_view::npos && text.find('\n') + 1 < text.size()) {
    s += " ...";
  }
  return s;
}

}  // namespace arun::io
