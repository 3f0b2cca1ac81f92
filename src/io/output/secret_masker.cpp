#include "output/secret_masker.hpp"

#include "output/secret_forms.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <charconv>
#include <optional>

namespace arun::io {
namespace {

// A JSON string literal in a text: where its content lies and what it decodes to.
struct json_literal {
  std::size_t begin = 0, end = 0;  ///< the content, between the quotes
  std::string decoded;
  bool escaped_u = false;  ///< it holds a \uXXXX escape
};

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::optional<unsigned> hex4(std::string_view text, std::size_t at) {
  unsigned v = 0;
  if (at + 4 > text.size()) return std::nullopt;
  const auto r = std::from_chars(text.data() + at, text.data() + at + 4, v, 16);
  if (r.ec != std::errc() || r.ptr != text.data() + at + 4) return std::nullopt;
  return v;
}

// The literal whose opening quote is at `quote`, decoded as JSON decodes it; nullopt when the
// text does not close it (then it is no literal).
std::optional<json_literal> read_literal(std::string_view text, std::size_t quote) {
  json_literal l;
  l.begin = quote + 1;
  for (std::size_t i = l.begin; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      l.end = i;
      return l;
    }
    if (c != '\\') {
      l.decoded += c;
      continue;
    }
    if (++i >= text.size()) return std::nullopt;
    switch (text[i]) {
      case 'n': l.decoded += '\n'; break;
      case 't': l.decoded += '\t'; break;
      case 'r': l.decoded += '\r'; break;
      case 'b': l.decoded += '\b'; break;
      case 'f': l.decoded += '\f'; break;
      case 'u': {
        auto cp = hex4(text, i + 1);
        if (!cp) return std::nullopt;
        i += 4;
        l.escaped_u = true;
        if (*cp >= 0xD800 && *cp < 0xDC00 && i + 6 < text.size() + 1 && text.substr(i + 1, 2) == "\\u")
          if (auto low = hex4(text, i + 3); low && *low >= 0xDC00 && *low < 0xE000) {
            cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
            i += 6;
          }
        append_utf8(l.decoded, *cp);
        break;
      }
      default: l.decoded += text[i];  // \" \\ \/ and anything else as itself
    }
  }
  return std::nullopt;
}

// Every literal with a \u escape: JSON may spell any character so (Go's encoding/json writes
// `&`, `<` and `>` as \u0026, \u003c, \u003e), so no list of escaped forms covers them all —
// what the text decodes to is what is checked (docs/security.md, "Secrets").
template <class Visit>
void for_each_escaped_literal(std::string_view text, Visit&& visit) {
  if (text.find("\\u") == std::string_view::npos) return;
  for (auto quote = text.find('"'); quote != std::string_view::npos; quote = text.find('"', quote + 1)) {
    auto l = read_literal(text, quote);
    if (!l) return;
    if (l->escaped_u) visit(*l);
    quote = l->end;
  }
}

}  // namespace

void secret_masker::add_pattern(std::string pattern) {
  if (pattern.empty() || std::find(patterns_.begin(), patterns_.end(), pattern) != patterns_.end()) return;
  const auto at = std::find_if(patterns_.begin(), patterns_.end(),
                               [&](const std::string& p) { return p.size() < pattern.size(); });
  patterns_.insert(at, std::move(pattern));
}

void secret_masker::add(std::string_view value) {
  if (value.empty()) return;
  for (auto& form : secret_forms(value, min_line_bytes)) add_pattern(std::move(form));
}

bool secret_masker::plain_clean(std::string_view text) const {
  return std::none_of(patterns_.begin(), patterns_.end(),
                      [&](const std::string& p) { return text.find(p) != std::string_view::npos; });
}

bool secret_masker::clean(std::string_view text) const {
  if (!plain_clean(text)) return false;
  bool found = false;
  for_each_escaped_literal(text, [&](const json_literal& l) { found = found || !plain_clean(l.decoded); });
  return !found;
}

std::string secret_masker::mask(std::string_view text) const {
  if (clean(text)) return std::string(text);
  // A literal that holds a secret only once decoded is written again, masked.
  std::string unescaped;
  std::size_t from = 0;
  for_each_escaped_literal(text, [&](const json_literal& l) {
    if (plain_clean(l.decoded)) return;
    unescaped.append(text, from, l.begin - from);
    const auto quoted = boost::json::serialize(boost::json::string(mask_plain(l.decoded)));
    unescaped.append(quoted, 1, quoted.size() - 2);
    from = l.end;
  });
  if (from > 0) {
    unescaped.append(text, from);
    return mask_plain(unescaped);
  }
  return mask_plain(text);
}

std::string secret_masker::mask_plain(std::string_view text) const {
  std::string out(text);
  for (const auto& p : patterns_) {
    std::string next;
    std::size_t from = 0;
    for (auto at = out.find(p); at != std::string::npos; at = out.find(p, from)) {
      next.append(out, from, at - from);
      next += mask_text;
      from = at + p.size();
    }
    if (from == 0) continue;
    next.append(out, from);
    out = std::move(next);
  }
  return out;
}

std::size_t secret_masker::safe_cut(std::string_view text, std::size_t at) const noexcept {
  at = std::min(at, text.size());
  // Moving the cut back can put it inside an earlier occurrence: look again until none straddles.
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& p : patterns_) {
      const auto from = at >= p.size() ? at - p.size() + 1 : 0;
      const auto hit = text.find(p, from);
      if (hit != std::string_view::npos && hit < at && hit + p.size() > at) {
        at = hit;
        moved = true;
      }
    }
  }
  return at;
}

std::size_t secret_masker::safe_start(std::string_view text, std::size_t at) const noexcept {
  at = std::min(at, text.size());
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& p : patterns_) {
      // The last occurrence that begins before `at`, if it ends after it.
      if (at == 0) break;
      const auto hit = text.rfind(p, at - 1);
      if (hit != std::string_view::npos && hit + p.size() > at) {
        at = hit + p.size();
        moved = true;
      }
    }
  }
  return at;
}

void secret_masker::mask_json(boost::json::value& v) const {
  if (patterns_.empty()) return;
  if (auto* s = v.if_string()) {
    if (!clean(*s)) *s = mask(*s);
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) mask_json(item);
  } else if (auto* o = v.if_object()) {
    bool keys_clean = true;
    for (auto& kv : *o) {
      mask_json(kv.value());
      keys_clean = keys_clean && clean(kv.key());
    }
    if (keys_clean) return;
    // A secret printed as a key (`{"TOKEN": 1}`) is as much a secret as one printed as a value.
    boost::json::object masked(o->storage());
    masked.reserve(o->size());
    for (auto& kv : *o) {
      auto key = mask(kv.key());
      for (int n = 2; masked.contains(key); ++n) key = mask(kv.key()) + "#" + std::to_string(n);
      masked.emplace(key, std::move(kv.value()));
    }
    *o = std::move(masked);
  }
}

}  // namespace arun::io
