// The bash lexer (shell_lexer.hpp): quotes, `$` expansions and arithmetic.
#include "shell/shell_lexer_impl.hpp"

namespace arun::engine::detail {

void lexer::escape(const frame& f, std::size_t limit) {
  if (at(i_, "\\\n") && i_ + 1 < limit) {  // a line continuation joins the word with the next line
    i_ += 2;
    return;
  }
  if (i_ + 1 < limit && hole_at(i_ + 1)) {
    ++i_;
    take_hole(f, true);
    return;
  }
  if (i_ + 1 < limit) literal(f, s_[i_ + 1], true);
  if (i_ + 1 >= limit) open_ = true;  // a trailing backslash joins the next line
  i_ = std::min(i_ + 2, limit);
}

// "…" (terminator '"') and unquoted heredoc bodies (terminator '\0', bounded by `limit`).
void lexer::expanding(const frame& f, char terminator, std::size_t limit) {
  const nesting guard(*this);
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(f);
      continue;
    }
    const char ch = s_[i_];
    if (terminator != '\0' && ch == terminator) {
      ++i_;
      return;
    }
    if (ch == '\\') {
      if (i_ + 1 < limit && hole_at(i_ + 1)) {
        ++i_;
        take_hole(f, true);  // the replacement starts with `$`, which the backslash would escape
      } else {
        const bool escapes = i_ + 1 < limit && std::string_view("$`\\\n\"").find(s_[i_ + 1]) != std::string_view::npos;
        if (!(escapes && s_[i_ + 1] == '\n')) literal(f, escapes ? s_[i_ + 1] : ch);  // `\⏎` vanishes
        i_ += escapes ? 2 : 1;
      }
    } else if (ch == '`') {
      ++i_;
      expansion(f);
      substitution(backtick_frame(), closer::backtick, limit);
    } else if (ch == '$') {
      dollar(f, limit, true);
    } else {
      literal(f, ch);
      ++i_;
    }
  }
  if (terminator != '\0') open_ = true;
}

void lexer::single_quoted(const frame& f, std::size_t limit) {
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(f);
      continue;
    }
    const char ch = s_[i_++];
    if (ch == '\'') return;
    literal(f, ch);
  }
  open_ = true;
}

void lexer::ansi_c(const frame& f, std::size_t limit) {
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(f);
    } else if (s_[i_] == '\\') {
      ansi_c_escape(f, limit);
    } else if (s_[i_] == '\'') {
      ++i_;
      return;
    } else {
      literal(f, s_[i_++]);
    }
  }
  open_ = true;
}

// A backslash inside $'…': the word holds the character it stands for, so `$'\x73h' -c`
// names sh. An escape whose character is not one byte (`\u`, `\U`) is an expansion's result.
void lexer::ansi_c_escape(const frame& f, std::size_t limit) {
  if (i_ + 1 >= limit || hole_at(i_ + 1)) return escape(f, limit);
  const auto digits = [&](std::size_t from, std::size_t most, int base) {
    std::size_t n = 0;
    unsigned value = 0;
    for (; n < most && from + n < limit && !range_starting_at(from + n); ++n) {
      const char c = s_[from + n];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
      if (d >= base) break;
      value = value * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    }
    return std::pair{n, value};
  };
  const char c = s_[i_ + 1];
  i_ += 2;
  switch (c) {
    case 'a': return literal(f, '\a');
    case 'b': return literal(f, '\b');
    case 'e': case 'E': return literal(f, '\x1b');
    case 'f': return literal(f, '\f');
    case 'n': return literal(f, '\n');
    case 'r': return literal(f, '\r');
    case 't': return literal(f, '\t');
    case 'v': return literal(f, '\v');
    case 'x': {
      const auto [n, value] = digits(i_, 2, 16);
      i_ += n;
      return literal(f, n == 0 ? '\\' : static_cast<char>(value));
    }
    case 'c':
      if (i_ < limit && !hole_at(i_)) ++i_;
      return literal(f, '\x02', true);
    case 'u': case 'U': {
      const auto [n, value] = digits(i_, c == 'u' ? 4 : 8, 16);
      i_ += n;
      if (n > 0 && value < 0x80) return literal(f, static_cast<char>(value));
      return literal(f, '\x02', true);
    }
    default:
      if (c >= '0' && c <= '7') {
        const auto [n, value] = digits(i_ - 1, 3, 8);
        i_ += n - 1;
        return literal(f, static_cast<char>(value & 0xff));
      }
      return literal(f, c);  // \\ \' \" \? and unknown escapes (bash keeps the backslash: not a program name either way)
  }
}

// At `$`: `$((`, `$(`, `$[`, `${`, `$'`, `$"`, a parameter or a literal dollar.
void lexer::dollar(const frame& f, std::size_t limit, bool quoted) {
  if (i_ + 1 >= limit) {
    literal(f, '$');
    ++i_;
    return;
  }
  if (hole_at(i_ + 1)) {
    ++i_;
    take_hole(f, false, true);
    return;
  }
  const char n = s_[i_ + 1];
  if (!quoted && (n == '\'' || n == '"')) {
    i_ += 2;
    if (n == '\'')
      ansi_c(with_quoting(f, shell_quoting::ansi_c_quoted), limit);
    else
      expanding(with_quoting(f, shell_quoting::double_quoted), '"', limit);
    return;
  }
  if (!(n == '(' || n == '[' || n == '{' || is_name_char(n) || is_special_parameter(n))) {
    literal(f, '$');
    ++i_;
    return;
  }
  const frame inner = expansion(f);
  const auto start = i_;
  // `"$@"`, `"${a[@]}"`, `"${!p@}"`, `$*`: as many words as elements — a command and its
  // arguments. (A scalar, `$CC`, `${PY:-python3}`, names one program.)
  struct mark_many {
    lexer& l;
    const frame& f;
    std::size_t start;
    ~mark_many() {
      const auto text = l.s_.substr(start, l.i_ - start);
      if (f.shape && (text.find('@') != std::string_view::npos ||
                      (f.quoting == shell_quoting::unquoted && (text == "$*" || text.starts_with("${*") || text.find("[*]") != std::string_view::npos))))
        f.shape->many_words = true;
      const auto name = text.size() > 2 && text[1] == '{' ? text[2] : text.size() > 1 ? text[1] : '\0';
      if (f.shape && ((name >= '0' && name <= '9') || name == '@' || name == '*')) f.shape->positional = true;
    }
  } const many{*this, f, start};
  if (at(i_, "$((")) {
    i_ += 3;
    arithmetic(arithmetic_frame(inner), "))", limit);
  } else if (n == '(') {
    i_ += 2;
    substitution(substitution_frame(inner), closer::paren, limit);
  } else if (n == '[') {
    i_ += 2;
    arithmetic(arithmetic_frame(inner), "]", limit);
  } else if (n == '{') {
    i_ += 2;
    parameter(inner, limit);
  } else {
    i_ += 2;
  }
}

// After `${`: the name, a subscript, `:offset:length`, or an operator and its word.
void lexer::parameter(const frame& f, std::size_t limit) {
  const nesting guard(*this);
  if (!more(limit)) return;
  if (hole_at(i_)) {
    take_hole(f, false, true);  // the reference would be the parameter's name
  } else {
    if (s_[i_] == '#' || s_[i_] == '!') ++i_;
    if (i_ < limit && is_name_char(s_[i_]))
      while (i_ < limit && is_name_char(s_[i_])) ++i_;
    else if (i_ < limit && is_special_parameter(s_[i_]))
      ++i_;
  }
  if (i_ < limit && s_[i_] == '[') {
    ++i_;
    arithmetic(arithmetic_frame(f), "]", limit);
  }
  if (i_ < limit && s_[i_] == ':' && !(i_ + 1 < limit && std::string_view("-=?+").find(s_[i_ + 1]) != std::string_view::npos)) {
    ++i_;
    arithmetic(arithmetic_frame(f), "}", limit);
    return;
  }
  parameter_word(f, i_ < limit && std::string_view("#%/").find(s_[i_]) != std::string_view::npos, limit);
}

// The word of `${x:-word}`, `${x#pattern}`, `${x/a/b}`: quoted like the expansion itself;
// bash ends it at the first unquoted `}`. '…' always groups; inside "…" (or a heredoc) it
// quotes only in patterns (`#`, `%`, `/`), elsewhere its quotes stay and `$` still expands.
void lexer::parameter_word(const frame& f, bool pattern, std::size_t limit) {
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(f);
      continue;
    }
    const char ch = s_[i_];
    if (ch == '}') {
      ++i_;
      return;
    }
    if (ch == '\\') {
      escape(f, limit);
    } else if (ch == '\'') {
      ++i_;
      if (f.quoting == shell_quoting::unquoted || pattern)
        single_quoted(with_quoting(f, shell_quoting::single_quoted), limit);
      else
        expanding(f, '\'', limit);
    } else if (ch == '"') {
      ++i_;
      expanding(with_quoting(f, shell_quoting::double_quoted), '"', limit);
    } else if (ch == '`') {
      ++i_;
      substitution(backtick_frame(), closer::backtick, limit);
    } else if (ch == '$') {
      dollar(f, limit, f.quoting != shell_quoting::unquoted);
    } else {
      ++i_;
    }
  }
  open_ = true;
}

// Up to `end` ("))", "]" or "}") at bracket depth 0.
void lexer::arithmetic(const frame& f, std::string_view end, std::size_t limit) {
  const nesting guard(*this);
  int depth = 0;
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(f);
      continue;
    }
    if (depth == 0 && at(i_, end)) {
      i_ += end.size();
      return;
    }
    const char ch = s_[i_];
    if (ch == '\\') {
      escape(f, limit);
    } else if (ch == '\'') {
      ++i_;
      single_quoted(with_quoting(f, shell_quoting::single_quoted), limit);
    } else if (ch == '"') {
      ++i_;
      expanding(with_quoting(f, shell_quoting::double_quoted), '"', limit);
    } else if (ch == '`') {
      ++i_;
      expansion(f);
      substitution(backtick_frame(), closer::backtick, limit);
    } else if (ch == '$') {
      dollar(f, limit, true);
    } else {
      if (ch == '(' || ch == '[') ++depth;
      if ((ch == ')' || ch == ']') && depth > 0) --depth;
      literal(f, ch);
      ++i_;
    }
  }
  open_ = true;
}

}  // namespace arun::engine::detail
