#include "output/secret_forms.hpp"

#include "files/json_text.hpp"

#include <boost/json/string.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace arun::io {
namespace {

void add_unique(std::vector<std::string>& out, std::string form) {
  if (!form.empty() && std::find(out.begin(), out.end(), form) == out.end()) out.push_back(std::move(form));
}

// arun's own JSON form of `text` (Boost.JSON's escapes), without the quotes.
std::string boost_form(std::string_view text) {
  const auto quoted = to_json_text(boost::json::value(boost::json::string(text)));
  return quoted.size() >= 2 ? quoted.substr(1, quoted.size() - 2) : std::string();
}

void append_u(std::string& out, unsigned unit, bool upper) {
  char hex[8];
  std::snprintf(hex, sizeof hex, upper ? "\\u%04X" : "\\u%04x", unit);
  out += hex;
}

// The length of the UTF-8 sequence at `at` and its code point; 0 when it is not valid UTF-8.
std::size_t utf8_at(std::string_view s, std::size_t at, std::uint32_t& cp) {
  const auto b = static_cast<unsigned char>(s[at]);
  const std::size_t n = b >= 0xf0 ? (b <= 0xf4 ? 4 : 0) : b >= 0xe0 ? 3 : b >= 0xc2 ? 2 : 0;
  if (n == 0 || at + n > s.size()) return 0;
  cp = b & (0x7f >> n);
  for (std::size_t i = 1; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[at + i]);
    if ((c & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  return overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : n;
}

// Python's json.dumps(text) (ensure_ascii) without the quotes; a byte that is not UTF-8 as
// `\udcXY` (surrogateescape, as arun writes it).
std::string ascii_form(std::string_view text, bool upper) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20)
            append_u(out, c, upper);
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const auto n = utf8_at(text, i, cp);
    if (n == 0) {
      append_u(out, 0xdc00 | c, upper);
      ++i;
      continue;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      append_u(out, 0xd800 | (cp >> 10), upper);
      append_u(out, 0xdc00 | (cp & 0x3ff), upper);
    } else {
      append_u(out, cp, upper);
    }
    i += n;
  }
  return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t at = 0;
  for (auto hit = text.find(from); hit != std::string_view::npos; hit = text.find(from, at)) {
    out.append(text, at, hit - at);
    out += to;
    at = hit + from.size();
  }
  out.append(text, at);
  return out;
}

// RFC 7468's encapsulation boundaries: the same in every PEM file, so not secret.
bool pem_armour(std::string_view line) {
  return (line.starts_with("-----BEGIN ") || line.starts_with("-----END ")) && line.ends_with("-----");
}

std::string_view trimmed(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

}  // namespace

std::vector<std::string> json_string_forms(std::string_view text) {
  std::vector<std::string> out;
  const auto escaped = boost_form(text);
  add_unique(out, escaped);
  add_unique(out, ascii_form(text, false));
  add_unique(out, ascii_form(text, true));
  if (text.find('/') != std::string_view::npos) {
    add_unique(out, replace_all(escaped, "/", "\\/"));
    add_unique(out, replace_all(ascii_form(text, false), "/", "\\/"));
  }
  add_unique(out, boost_form(escaped));
  // The text itself is listed by the caller.
  out.erase(std::remove(out.begin(), out.end(), std::string(text)), out.end());
  return out;
}

std::vector<std::string> secret_forms(std::string_view value, std::size_t min_line) {
  std::vector<std::string> whole;
  add_unique(whole, std::string(value));
  if (value.find('\n') != std::string_view::npos) {
    // A file written on another system, a step that prints CRLF: the other line ending.
    const auto lf = replace_all(value, "\r\n", "\n");
    add_unique(whole, lf);
    add_unique(whole, replace_all(lf, "\n", "\r\n"));
    // A multi-line value reaches line-based output one line at a time.
    for (std::size_t start = 0; start < lf.size();) {
      const auto end = std::min(lf.find('\n', start), lf.size());
      const auto line = trimmed(std::string_view(lf).substr(start, end - start));
      if (line.size() >= min_line && !pem_armour(line)) add_unique(whole, std::string(line));
      start = end + 1;
    }
  }
  std::vector<std::string> out = whole;
  for (const auto& form : whole)
    for (auto& json : json_string_forms(form)) add_unique(out, std::move(json));
  return out;
}

}  // namespace arun::io
