#include "output/terminal_text.hpp"

#include <fmt/format.h>

namespace arun::io {
namespace {

// The length of the UTF-8 sequence at `i`, 0 when it is not one (cut, overlong, surrogate).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  unsigned min = 0;
  unsigned cp = 0;
  if (b >= 0xC2 && b <= 0xDF) n = 2, cp = b & 0x1Fu, min = 0x80;
  else if (b >= 0xE0 && b <= 0xEF) n = 3, cp = b & 0x0Fu, min = 0x800;
  else if (b >= 0xF0 && b <= 0xF4) n = 4, cp = b & 0x07u, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (cp >= 0x80 && cp <= 0x9F) return 0;  // a C1 control: escaped like the others
  return n;
}

}  // namespace

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += text[i++];
      continue;
    }
    if (b >= 0x80) {
      if (const auto n = utf8_length(text, i)) {
        out.append(text.substr(i, n));
        i += n;
        continue;
      }
      // A C1 control as UTF-8 (C2 80..9F): both bytes shown, so nothing of it reaches the terminal.
      if (b == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
          static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
        out += fmt::format("\\x{:02x}\\x{:02x}", b, static_cast<unsigned char>(text[i + 1]));
        i += 2;
        continue;
      }
    }
    switch (b) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case 0x1B: out += "\\e"; break;
      default: out += fmt::format("\\x{:02x}", b);
    }
    ++i;
  }
  return out;
}

}  // namespace arun::io
