#include "condition/lexer.hpp"

#include "ascii.hpp"

#include <charconv>
#include <cstdint>
#include <system_error>

namespace arun::engine::detail {
namespace {

bool is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_ascii_digit(c); }

std::string show_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  static constexpr char hex[] = "0123456789abcdef";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 0xf];
}

class lexer {
 public:
  explicit lexer(std::string_view text) : s_(text) {}

  std::variant<std::vector<token>, condition_error> run() {
    std::vector<token> tokens;
    while (true) {
      while (i_ < s_.size() && is_c_space(s_[i_])) ++i_;
      if (i_ >= s_.size()) break;
      auto t = next();
      if (!t) return std::move(*error_);
      tokens.push_back(std::move(*t));
    }
    tokens.push_back(token{token_kind::end, s_.size() + 1, {}, {}, {}});
    return tokens;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  std::optional<condition_error> error_;

  std::optional<token> fail(std::string message, std::size_t at) {
    error_ = condition_error{std::move(message), at + 1};
    return std::nullopt;
  }

  bool at(std::string_view what) const { return s_.substr(i_, what.size()) == what; }

  std::optional<token> next() {
    const char c = s_[i_];
    if (is_ascii_digit(c)) return number();
    if (is_name_start(c)) return name(token_kind::identifier, i_);
    if (c == '\'' || c == '"') return quoted();
    if (at("{{")) return reference_token();
    if (c == '.') return dot_name();
    return symbol();
  }

  std::optional<token> name(token_kind kind, std::size_t start) {
    const auto begin = i_;
    while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
    return token{kind, start + 1, std::string(s_.substr(begin, i_ - begin)), {}, {}};
  }

  std::optional<token> number() {
    const auto start = i_;
    bool integral = true;
    while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && is_ascii_digit(s_[i_ + 1])) {
      integral = false;
      ++i_;
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      auto j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j < s_.size() && is_ascii_digit(s_[j])) {
        integral = false;
        i_ = j;
        while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
      }
    }
    if (i_ < s_.size() && is_name_char(s_[i_])) return fail("invalid number: unexpected " + show_char(s_[i_]), i_);
    const auto digits = s_.substr(start, i_ - start);
    token t{token_kind::number, start + 1, std::string(digits), {}, {}};
    if (integral) {
      std::int64_t n = 0;
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
      if (r.ec == std::errc()) {
        t.value = n;
        return t;
      }
    }
    double d = 0;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), d);
    if (r.ec != std::errc()) return fail("number out of range: " + std::string(digits), start);
    t.value = d;
    return t;
  }

  std::optional<token> quoted() {
    const auto start = i_;
    const char quote = s_[i_++];
    std::string text;
    while (i_ < s_.size() && s_[i_] != quote) {
      const char c = s_[i_++];
      if (c != '\\' || i_ >= s_.size()) {
        text += c;
        continue;
      }
      const char e = s_[i_++];
      switch (e) {
        case '\\': text += '\\'; break;
        case '\'': text += '\''; break;
        case '"': text += '"'; break;
        case 'n': text += '\n'; break;
        case 't': text += '\t'; break;
        case 'r': text += '\r'; break;
        case '0': text += '\0'; break;
        default: text += '\\'; text += e;  // Python keeps unknown escapes as written
      }
    }
    if (i_ >= s_.size())
      return fail(std::string("unterminated string: expected a closing ") + quote, start);
    ++i_;
    return token{token_kind::string, start + 1, std::move(text), {}, {}};
  }

  std::optional<token> reference_token() {
    const auto start = i_;
    const auto close = s_.find("}}", i_ + 2);
    if (close == std::string_view::npos) return fail("unterminated '{{': expected '}}'", start);
    auto ref = parse_reference(s_.substr(i_ + 2, close - i_ - 2));
    if (!ref) return fail("expected a reference path inside '{{ }}', like {{ name }} or {{ step.key[0] }}", start);
    i_ = close + 2;
    return token{token_kind::ref, start + 1, std::string(s_.substr(start, i_ - start)), {}, std::move(ref)};
  }

  std::optional<token> dot_name() {
    const auto start = i_++;
    if (i_ < s_.size() && is_ascii_digit(s_[i_])) {
      const auto begin = i_;
      while (i_ < s_.size() && is_ascii_digit(s_[i_])) ++i_;
      if (i_ < s_.size() && is_name_char(s_[i_])) return fail("expected a name or an index after '.'", start);
      return token{token_kind::dot_name, start + 1, std::string(s_.substr(begin, i_ - begin)), {}, {}};
    }
    if (i_ >= s_.size() || !is_name_start(s_[i_])) return fail("expected a name after '.'", start);
    return name(token_kind::dot_name, start);
  }

  std::optional<token> symbol() {
    const auto start = i_;
    for (std::string_view two : {"==", "!=", "<=", ">=", "||", "&&"})
      if (at(two)) {
        i_ += 2;
        return token{token_kind::symbol, start + 1, std::string(two), {}, {}};
      }
    const char c = s_[i_];
    switch (c) {
      case '!': return fail("unexpected '!': use 'not' to negate", start);
      case '=': return fail("unexpected '=': use '==' to compare", start);
      case '|': return fail("unexpected '|': use 'or' or '||'", start);
      case '&': return fail("unexpected '&': use 'and' or '&&'", start);
      default: break;
    }
    if (std::string_view("<>+-*/%()[],").find(c) == std::string_view::npos)
      return fail("unexpected character " + show_char(c), start);
    ++i_;
    return token{token_kind::symbol, start + 1, std::string(1, c), {}, {}};
  }
};

}  // namespace

std::variant<std::vector<token>, condition_error> tokenize(std::string_view text) { return lexer(text).run(); }

std::string describe(const token& t) {
  switch (t.kind) {
    case token_kind::end: return "end of condition";
    case token_kind::number: return "number " + t.text;
    case token_kind::string: return "a string";
    case token_kind::identifier: return "'" + t.text + "'";
    case token_kind::ref: return t.text;
    case token_kind::dot_name: return "'." + t.text + "'";
    case token_kind::symbol: return "'" + t.text + "'";
  }
  return "?";
}

}  // namespace arun::engine::detail
