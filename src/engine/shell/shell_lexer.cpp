// The bash lexer (shell_lexer.hpp): command lists, words, comments and heredocs.
#include "shell/shell_lexer.hpp"

#include "shell/shell_lexer_impl.hpp"

namespace arun::engine {
namespace detail {
namespace {

bool is_arithmetic_test(std::string_view w) {
  return w == "-eq" || w == "-ne" || w == "-lt" || w == "-le" || w == "-gt" || w == "-ge";
}

// Reserved words after which bash reads a command word again.
bool leads_command(std::string_view w) {
  for (std::string_view k : {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
    if (w == k) return true;
  return false;
}

}  // namespace

void lexer::commands(frame f, closer c, std::size_t limit) {
  const nesting guard(*this);
  command_state st;
  st.first_heredoc = out_.heredocs.size();
  st.output_list = std::exchange(next_list_is_output_, false);
  st.input_list = std::exchange(next_list_is_input_, false);
  // References recorded from here on belong to this list's current command.
  struct current {
    lexer& l;
    command_state* outer;
    ~current() { l.command_ = outer; }
  } const restore{*this, std::exchange(command_, &st)};
  while (more(limit)) {
    if (hole_at(i_)) {
      begin_word(st);
      st.word_plain = false;
      take_hole(word_frame(st, f));
      continue;
    }
    const char ch = s_[i_];
    if (at(i_, "\\\n")) {  // a line continuation: bash removes it before reading words
      i_ += 2;
      continue;
    }
    if (ch == ')') end_word(st);  // `esac)` must end the case before the `)` is read
    if ((c == closer::backtick && ch == '`') ||
        (c == closer::paren && ch == ')' && st.parens == 0 && !st.in_pattern())) {
      end_word(st);
      end_command(st);
      ++i_;
      return;
    }
    if (ch == '\n') {
      end_word(st);
      end_command(st);
      ++i_;
      read_heredocs(f, limit);
    } else if (is_blank(ch)) {
      end_word(st);
      ++i_;
    } else if (!st.in_word && ch == '#') {
      comment(limit);
    } else if (!st.in_word && !st.test_expr && at(i_, "((") && (st.word_index == 0 || st.after_for)) {
      i_ += 2;
      arithmetic(arithmetic_frame(f), "))", limit);
      ++st.word_index;
      st.after_for = false;
    } else if (ch == '(' && st.in_word && compound_assignment(st, f, limit)) {
      // `a=( … )`, `declare -a a=( … )`: read as one word with its elements
    } else if (is_meta(ch)) {
      end_word(st);
      control(st, f, limit);
    } else {
      begin_word(st);
      word_unit(st, f, limit);
    }
  }
  if (c != closer::end) open_ = true;  // `$(`, `<(` or a backtick never closed
  end_word(st);
  end_command(st);
}

// `$( )`, backticks, `<( )`: a command list sharing the command's standard input — a shell in
// it reads the command's input as code (`echo … | eval "$(cat)"`, `x=$(sh) <<< …`).
void lexer::substitution(const frame& f, closer c, std::size_t limit) {
  next_list_is_input_ = true;
  commands(f, c, limit);
  if (std::exchange(input_runs_code_, false) && command_) command_->stdin_is_script = true;
}

void lexer::word_unit(command_state& st, const frame& f, std::size_t limit) {
  const frame w = word_frame(st, f);
  const char ch = s_[i_];
  if (ch == '\\' || ch == '\'' || ch == '"' || ch == '`' || ch == '$') st.word_plain = false;
  switch (ch) {
    case '\\': escape(w, limit); return;
    case '\'': ++i_; single_quoted(with_quoting(w, shell_quoting::single_quoted), limit); return;
    case '"': ++i_; expanding(with_quoting(w, shell_quoting::double_quoted), '"', limit); return;
    case '`':
      ++i_;
      expansion(w);
      substitution(backtick_frame(), closer::backtick, limit);
      return;
    case '$': dollar(w, limit, false); return;
    case '[':
      if (st.word_plain && is_identifier(st.word) && assignment_subscript(limit)) {
        st.word_plain = false;
        literal(w, ch);
        ++i_;
        arithmetic(arithmetic_frame(w), "]", limit);
        literal(w, ']');
        return;
      }
      break;
    default: break;
  }
  if (st.word_plain) st.word += ch;
  literal(w, ch);
  ++i_;
}

// `name[…]=` or `name[…]+=`: an indexed-array subscript, evaluated as arithmetic.
bool lexer::assignment_subscript(std::size_t limit) const {
  for (std::size_t p = i_ + 1; p < limit;) {
    if (const auto* r = range_starting_at(p)) {
      p = r->end;
      continue;
    }
    const char c = s_[p];
    if (c == ']') return at(p + 1, "=") || at(p + 1, "+=");
    if (c == '\n' || is_blank(c) || is_meta(c)) return false;
    ++p;
  }
  return false;
}

void lexer::control(command_state& st, const frame& f, std::size_t limit) {
  if (s_[i_] == '<' || s_[i_] == '>') begin_command(st, i_);  // `<<EOF sh`: a redirection may come first
  // `3<<<`: the descriptor a redirection feeds (0 without a number, -2 for `{fd}<<<`).
  const int fd = at(i_, "<(") || at(i_, ">(") ? -1 : std::exchange(st.redirect_fd, -1);
  if (s_[i_] == '<' && !at(i_, "<(")) st.redirect_into = fd == -1 ? 0 : fd;
  if (at(i_, "<<<")) {
    i_ += 3;
    st.redirect_target = true;
    st.here_string = true;
  } else if (at(i_, "<<") && !st.test_expr) {
    heredoc_operator(f, st.redirect_into, limit);
  } else if (at(i_, "<(") || at(i_, ">(")) {
    const auto start = i_;
    const bool output = at(i_, ">(");
    begin_word(st);
    i_ += 2;
    st.word_plain = false;
    st.shape.add('\x02', true);
    if (output) {
      next_list_is_output_ = true;
      commands(substitution_frame(f), closer::paren, limit);
    } else {
      substitution(substitution_frame(f), closer::paren, limit);
    }
    if (std::exchange(output_runs_code_, false) && output) st.output_is_code = true;
    st.word_substitutions.push_back({start, i_});
    // `BASH_ENV=<(…)`: bash substitutes in an assignment's value too; the file is sourced.
    const auto before = s_.substr(0, start);
    for (const std::string_view name : {"BASH_ENV=", "ENV="})
      if (before.ends_with(name) && (before.size() == name.size() || !is_name_char(before[before.size() - name.size() - 1])))
        mark_code_range({start, i_}, std::string(name.substr(0, name.size() - 1)) + " <( )");
  } else if (at(i_, ">&") || at(i_, "<&") || at(i_, "&>") || at(i_, ">|") || at(i_, "<>")) {
    st.stdin_redirect = at(i_, "<>");
    st.dup_input = at(i_, "<&");  // `<&3`, `4<&5`: a copy of another descriptor
    i_ += 2;  // redirections: the command goes on
    st.redirect_target = !st.test_expr;
  } else if (s_[i_] == '<' || s_[i_] == '>') {
    st.stdin_redirect = s_[i_] == '<';
    ++i_;
    st.redirect_target = !st.test_expr;
  } else if (s_[i_] == ';') {
    const bool ends_item = at(i_, ";;") || at(i_, ";&");
    i_ += at(i_, ";;&") ? 3 : ends_item ? 2 : 1;
    if (ends_item && !st.cases.empty()) st.cases.back() = case_state::pattern;
    end_command(st);
    st.after_pipe = false;
  } else if (s_[i_] == '(') {
    if (st.in_pattern()) {
      ++i_;
      return;  // `(a|b)`: the optional parenthesis of a case pattern
    }
    const bool keyword_form = st.word_index == 2 && st.args.command == "function";
    if (const auto close = s_.find_first_not_of(" \t", i_ + 1);
        (st.word_index == 1 || keyword_form) && close < limit && s_[close] == ')') {
      // `f() …`, `function f() …`: a function definition; its body comes next.
      const auto name = keyword_form ? st.function_name : st.args.command;
      i_ = close + 1;
      end_command(st);
      st.function_name = name;
      st.function_depth = st.groups.size();
      return;
    }
    begin_command(st, i_);
    open_group(st);
    ++i_;
    ++st.parens;
    end_command(st);
  } else if (s_[i_] == ')') {
    ++i_;
    if (st.in_pattern()) {
      st.cases.back() = case_state::body;
    } else if (st.parens > 0) {
      --st.parens;
      end_command(st);
      close_group(st);
      return;
    }
    end_command(st);
  } else {  // & && | || |&
    const bool pipe = !at(i_, "||") && s_[i_] == '|';
    i_ += (at(i_, "&&") || at(i_, "||") || at(i_, "|&")) ? 2 : 1;
    end_command(st);
    st.after_pipe = pipe;
  }
}

void lexer::end_word(command_state& st) {
  if (!st.in_word) return;
  st.in_word = false;
  const std::string_view w = st.word_plain ? std::string_view(st.word) : std::string_view("\x01");
  auto holes = std::exchange(st.word_holes, {});
  if (st.test_expr) {
    if (std::exchange(st.test_name_next, false)) name_word(st, 0, st.shape.text.size());
    if (w == "]]") {
      st.test_expr = false;
    } else if (is_arithmetic_test(w)) {
      // Both operands are arithmetic: the one before the operator is already recorded.
      for (const auto index : st.prev_word_holes) out_.positions[index].arithmetic = true;
      st.arith_next = true;
    } else if (w == "-v" || w == "-R") {
      st.test_name_next = true;
    }
    st.prev_word_holes = std::move(holes);
    return;
  }
  // A redirection's target, or the fd number in front of one (`2>`), is no argument; what a
  // command reads from `<<<` or `< <( )` may be its program.
  if (std::exchange(st.redirect_target, false)) {
    if (std::exchange(st.dup_input, false)) {
      auto digits = st.shape.text;
      if (digits.ends_with('-')) digits.pop_back();
      if (descriptor_number(digits))
        st.fd_dups.emplace_back(st.redirect_into, std::stoi(digits));
      else if (digits.find_first_of("\x01\x02") != std::string::npos)
        st.fd_dups.emplace_back(st.redirect_into, -2);
    } else if (st.stdin_redirect && st.word_substitutions.empty()) {
      // `sh < /dev/fd/4 4<<<…`: a descriptor opened by its path.
      if (const int fd = descriptor_named(st.shape.text); fd != -1 && fd != 0) st.fd_dups.emplace_back(st.redirect_into, fd);
    }
    if (std::exchange(st.here_string, false))
      redirected_text(st, {st.word_begin, i_});
    else if (std::exchange(st.stdin_redirect, false))
      for (const auto& r : st.word_substitutions) redirected_text(st, r);
    return;
  }
  if (i_ < s_.size() && (s_[i_] == '<' || s_[i_] == '>')) {
    if (descriptor_number(w)) {
      st.redirect_fd = std::stoi(std::string(w));  // `3<<<`
      return;
    }
    if (w.size() > 2 && w.front() == '{' && w.back() == '}' && is_identifier(w.substr(1, w.size() - 2))) {
      st.redirect_fd = -2;  // `{fd}<<<`: bash picks the descriptor
      return;
    }
  }
  const bool command_position = st.word_index == 0;
  if (keyword(st, w)) return;
  if (command_position) {
    if (assignment_word(st)) return;  // prefix assignments: the command word is still to come
    command_word(st);
    if (st.args.kind == command_kind::wrapper) return;  // `command`, `env`, ...: so is the next word
  } else {
    argument_word(st);
    if (std::exchange(st.command_again, false)) {
      st.word_index = 0;
      return;
    }
  }
  ++st.word_index;
}

void lexer::end_command(command_state& st) {
  finish_command(st);
  if (st.args.feeds_integer) {
    // `read n`, `printf -v n` into an integer variable: whatever the command reads is evaluated.
    for (const auto index : st.command_holes) out_.positions[index].arithmetic = true;
    arithmetic_bodies_.resize(out_.heredocs.size());
    for (auto h = st.first_heredoc; h < out_.heredocs.size(); ++h) arithmetic_bodies_[h] = true;
  }
  st.command_holes.clear();
  st.environment_holes.clear();
  st.first_heredoc = out_.heredocs.size();
  st.args = {};
  st.redirect_target = false;
  st.word_index = 0;
  st.let_args = st.after_for = st.arith_next = false;
}

// Words that change how the rest of the command reads; true when the next word is a command
// word again.
bool lexer::keyword(command_state& st, std::string_view w) {
  const bool command_word = st.word_index == 0;
  st.after_for = command_word && w == "for";
  if (!st.cases.empty()) {
    auto& top = st.cases.back();
    if (top == case_state::expect_in && w == "in") {
      top = case_state::pattern;
      end_command(st);
      return true;
    }
    if (w == "esac" && (top == case_state::pattern || command_word)) {
      st.cases.pop_back();
      group_keyword(st, w);
      return false;
    }
  }
  if (w == "{" && st.args.command == "function") {  // `function f {`: the body's first command
    end_command(st);
    group_keyword(st, w);
    return true;
  }
  if (!command_word) return false;
  group_keyword(st, w);
  // `coproc NAME { …; }`: NAME is no command; `coproc sh -c …`: sh is.
  if (std::exchange(st.after_coproc, false) && is_identifier(w)) {
    const auto next = s_.find_first_not_of(" \t", i_);
    if (next != std::string_view::npos && (s_[next] == '{' || s_[next] == '(')) return true;
  }
  if (w == "coproc") {
    st.after_coproc = true;
    st.coproc_depth = st.groups.size();
  }
  if (w == "let") st.let_args = true;
  if (w == "case") st.cases.push_back(case_state::expect_in);
  if (w == "[[") {
    st.test_expr = true;
    st.prev_word_holes.clear();
  }
  return w == "coproc" || leads_command(w);
}

void lexer::comment(std::size_t limit) {
  const auto nl = std::min(s_.find('\n', i_), limit);
  record_until(nl, frame{shell_quoting::comment});
  i_ = nl;
}

void lexer::heredoc_operator(const frame& f, int fd, std::size_t limit) {
  i_ += 2;
  heredoc_fds_.resize(out_.heredocs.size());
  heredoc_fds_.push_back(fd);
  heredoc_body h;
  if (i_ < limit && s_[i_] == '-') {
    h.strip_tabs = true;
    ++i_;
  }
  while (i_ < limit && is_blank(s_[i_])) ++i_;
  const frame d{shell_quoting::heredoc_delimiter, false, f.in_backticks};
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(d);
      h.quoted = true;
      continue;
    }
    const char ch = s_[i_];
    if (is_blank(ch) || is_meta(ch) || ch == '\n') break;
    delimiter_unit(h, d, limit);
  }
  pending_.push_back(out_.heredocs.size());
  out_.heredocs.push_back(std::move(h));
}

// One piece of a delimiter word. Where bash's delimiter cannot be known without running bash,
// the lexer gives up rather than guess where the body ends.
void lexer::delimiter_unit(heredoc_body& h, const frame& d, std::size_t limit) {
  const char ch = s_[i_];
  if (at(i_, "\\\n")) {
    i_ += 2;  // a line continuation, not quoting
  } else if (ch == '\\') {
    h.quoted = true;
    if (++i_ < limit && !hole_at(i_)) h.delimiter += s_[i_++];
  } else if (ch == '\'' || ch == '"') {
    h.quoted = true;
    quoted_delimiter_part(h, ch, d, limit);
  } else if (at(i_, "$'") || at(i_, "$\"")) {
    const auto close = s_.find(s_[i_ + 1], i_ + 2);
    if (s_[i_ + 1] == '\'' && s_.substr(i_, close - i_).find('\\') != std::string_view::npos)
      return give_up("a heredoc delimiter uses escapes inside $'…'");
    ++i_;
    h.quoted = true;
    quoted_delimiter_part(h, s_[i_], d, limit);
  } else if (ch == '`' || at(i_, "$(") || at(i_, "${") || at(i_, "$[")) {
    give_up("a heredoc delimiter holds a substitution");
  } else {
    h.delimiter += ch;
    ++i_;
  }
}

void lexer::quoted_delimiter_part(heredoc_body& h, char quote, const frame& d, std::size_t limit) {
  ++i_;
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(d);
      continue;
    }
    const char ch = s_[i_++];
    if (ch == quote) return;
    if (quote == '"' && ch == '\\' && i_ < limit && std::string_view("$`\"\\").find(s_[i_]) != std::string_view::npos)
      h.delimiter += s_[i_++];
    else
      h.delimiter += ch;
  }
}

// Called after the newline that ends a command line: bash reads the bodies of the heredocs
// announced on it, in order.
void lexer::read_heredocs(const frame& f, std::size_t limit) {
  const auto pending = std::exchange(pending_, {});
  auto* const owner = std::exchange(command_, nullptr);  // bodies are read after their command ended
  for (const auto index : pending) {
    const auto begin = i_;
    const auto [end, resume] = find_delimiter(out_.heredocs[index], limit);
    if (end == limit) open_ = true;
    out_.heredocs[index].body = {begin, end};
    const bool quoted = out_.heredocs[index].quoted;
    const bool arithmetic = index < arithmetic_bodies_.size() && arithmetic_bodies_[index];
    const frame b{quoted ? shell_quoting::quoted_heredoc : shell_quoting::heredoc, arithmetic, f.in_backticks, index};
    if (quoted)
      record_until(end, b);
    else
      expanding(b, '\0', end);
    // `sh <<EOF`, `cat <<EOF | python3`: the body is a program.
    if (index < code_bodies_.size() && !code_bodies_[index].empty()) mark_code_range({begin, end}, code_bodies_[index]);
    if (const int fd = index < heredoc_fds_.size() ? heredoc_fds_[index] : 0; fd != 0 && script_fd(fd))
      mark_code_range({begin, end}, "a script read from /dev/fd/" + (fd > 0 ? std::to_string(fd) : std::string("N")));
    if (stopped_) break;
    i_ = resume;
  }
  command_ = owner;
}

// The body's end (start of the delimiter line) and where reading resumes after it. A line
// holding a reference is never the delimiter line here (rendering re-checks inlined values).
// In unquoted bodies bash joins a line ending in an unescaped backslash with the next.
std::pair<std::size_t, std::size_t> lexer::find_delimiter(const heredoc_body& h, std::size_t limit) const {
  for (std::size_t line = i_; line < limit;) {
    std::string logical;
    bool opaque = false;
    std::size_t p = line;
    for (;;) {
      const auto start = p;
      while (p < limit && s_[p] != '\n') {
        if (const auto* r = range_starting_at(p)) {
          opaque = true;
          p = std::min(r->end, limit);
        } else {
          ++p;
        }
      }
      auto text = s_.substr(start, p - start);
      const auto backslashes = text.size() - std::min(text.find_last_not_of('\\') + 1, text.size());
      if (h.quoted || p >= limit || backslashes % 2 == 0) {
        logical += text;
        break;
      }
      text.remove_suffix(1);
      logical += text;
      ++p;
    }
    std::string_view candidate = logical;
    if (h.strip_tabs) candidate.remove_prefix(std::min(candidate.find_first_not_of('\t'), candidate.size()));
    if (!opaque && candidate == h.delimiter) return {line, std::min(p + 1, limit)};
    line = p + 1;
  }
  return {limit, limit};  // bash reads to the end of the text (and warns)
}

}  // namespace detail

shell_lex_result lex_shell(std::string_view script, const std::vector<text_range>& opaque) {
  detail::attribute_names names;
  // A `declare -i n` seen late (a function assigning `n=` before it), a descriptor a later
  // command reads its program from: what a pass learns changes earlier words. What is learned
  // only grows, so the passes end; a chain of relays (`exec 4<&5`) may take several.
  for (int pass = 1;; ++pass) {
    detail::lexer l(script, opaque, names);
    auto result = l.run();
    if (!l.learned() || pass == 8) return result;
  }
}

}  // namespace arun::engine
