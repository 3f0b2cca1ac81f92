#include "files/json_text.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <cstdio>

namespace arun::io {
namespace {

// Length of the valid UTF-8 sequence at `s[i]`, 0 when the byte there starts none
// (overlong forms, encoded surrogates and code points past U+10FFFF are invalid).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const auto c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte a `\udcXY` escape at `s[i]` stands for, or -1.
int escaped_byte(std::string_view s, std::size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u' || (s[i + 2] != 'd' && s[i + 2] != 'D') ||
      (s[i + 3] != 'c' && s[i + 3] != 'C'))
    return -1;
  const int high = hex_value(s[i + 4]), low = hex_value(s[i + 5]);
  if (high < 8 || low < 0) return -1;
  return high * 16 + low;
}

}  // namespace

namespace {

// Where the first byte that starts no valid UTF-8 sequence is; npos when there is none.
std::size_t first_invalid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const auto n = utf8_sequence(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace

std::string escape_invalid_utf8(std::string_view text) {
  auto bad = first_invalid_utf8(text);
  if (bad == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  out.append(text.substr(0, bad));
  for (std::size_t i = bad; i < text.size();) {
    if (const auto n = utf8_sequence(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    char escape[8];
    std::snprintf(escape, sizeof escape, "\\udc%02x", static_cast<unsigned char>(text[i]));
    out += escape;
    ++i;
  }
  return out;
}

std::string to_json_text(const boost::json::value& v) {
  auto text = to_compact_json(v);
  // Valid UTF-8 (nearly always): the text as it is, without a second copy.
  if (first_invalid_utf8(text) == std::string_view::npos) return text;
  return escape_invalid_utf8(text);
}

boost::json::value parse_json_text(std::string_view text, boost::system::error_code& ec,
                                   boost::json::parse_options options) {
  std::string raw;
  raw.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string && c == '\\') {
      // \ud800-\udbff followed by \udc80-\udcff is a surrogate pair a foreign writer made: a
      // character, not escaped bytes.
      const bool after_high = i >= 6 && text[i - 6] == '\\' && text[i - 5] == 'u' && (text[i - 4] == 'd' || text[i - 4] == 'D') &&
                              hex_value(text[i - 3]) >= 8 && hex_value(text[i - 3]) <= 11;
      if (const int byte = after_high ? -1 : escaped_byte(text, i); byte >= 0) {
        raw += static_cast<char>(byte);
        i += 5;
      } else if (i + 1 < text.size()) {
        raw += c;
        raw += text[++i];  // any other escape, kept for the parser
      }
      continue;
    }
    if (c == '"') in_string = !in_string;
    raw += c;
  }
  options.allow_invalid_utf8 = true;
  return parse_json_exact(raw, ec, options);
}

std::string string_member(const boost::json::object& o, std::string_view key, std::string fallback) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : fallback;
}

std::string_view string_view_member(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

std::optional<std::uint64_t> count_member(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  const double d = v->to_number<double>();
  return d >= 0 && d < 9007199254740992.0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(d)) : std::nullopt;
}

}  // namespace arun::io
