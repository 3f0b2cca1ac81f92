#pragma once
// Internals of the bash lexer (shell_lexer.hpp), shared by its two source files:
// shell_lexer.cpp reads command lists, comments and heredocs; shell_lexer_expansions.cpp reads
// quotes, `$` expansions and arithmetic.

#include "shell/shell_lexer.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::engine::detail {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
inline bool is_meta(char c) {
  return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>';
}
inline bool is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
inline bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
inline bool is_special_parameter(char c) { return std::string_view("@*#?$!-").find(c) != std::string_view::npos; }

constexpr std::size_t max_nesting = 200;

// How a reference met in the current construct is read.
struct frame {
  shell_quoting quoting = shell_quoting::unquoted;
  bool arithmetic = false;
  bool in_backticks = false;
  std::size_t heredoc = no_heredoc;
  std::vector<std::size_t>* sink = nullptr;  // collects the references of a `[[ ]]` word
};

inline frame with_quoting(frame f, shell_quoting q) {
  f.quoting = q;
  return f;
}
inline frame arithmetic_frame(frame f) {
  f.quoting = shell_quoting::unquoted;
  f.arithmetic = true;
  return f;
}
// `$( )`, `<( )`: a new command list; arithmetic and `[[ ]]` words do not reach inside.
inline frame substitution_frame(const frame& f) { return {shell_quoting::unquoted, false, f.in_backticks}; }
inline frame backtick_frame() { return {shell_quoting::unquoted, false, true}; }

enum class closer { end, paren, backtick };
enum class case_state { expect_in, pattern, body };

// One command list (the top level, `$( )`, backticks, `<( )`): enough of bash's grammar to
// know command words (`let`, `[[`, `((`, `case`, `for`) and where comments may start.
struct command_state {
  bool in_word = false;
  bool word_plain = true;  // no quoting, expansion or reference: may be a keyword
  std::string word;
  std::size_t word_index = 0;
  bool let_args = false;
  bool after_for = false;
  bool test_expr = false;  // inside `[[ ]]`
  bool arith_next = false;
  bool word_is_arith = false;
  std::vector<std::size_t> word_holes, prev_word_holes;
  std::vector<case_state> cases;
  int parens = 0;

  bool in_pattern() const { return !cases.empty() && cases.back() == case_state::pattern; }
};

class lexer {
public:
  lexer(std::string_view s, const std::vector<text_range>& holes) : s_(s), holes_(holes) {
    out_.positions.resize(holes.size());
  }

  shell_lex_result run() && {
    commands(frame{}, closer::end, s_.size());
    return std::move(out_);
  }

private:
  struct nesting {
    explicit nesting(lexer& l) : l_(l) {
      if (++l_.depth_ > max_nesting) l_.give_up("the command nests more than 200 levels deep");
    }
    ~nesting() { --l_.depth_; }
    nesting(const nesting&) = delete;
    nesting& operator=(const nesting&) = delete;
    lexer& l_;
  };

  std::string_view s_;
  const std::vector<text_range>& holes_;
  shell_lex_result out_;
  std::size_t i_ = 0;
  std::size_t next_hole_ = 0;
  std::size_t depth_ = 0;
  bool stopped_ = false;
  std::vector<std::size_t> pending_;  // heredocs announced on the current line

  bool more(std::size_t limit) const { return !stopped_ && i_ < limit; }
  void give_up(std::string why) {
    if (!stopped_) out_.stopped = std::move(why);
    stopped_ = true;
  }
  bool at(std::size_t pos, std::string_view text) const { return pos <= s_.size() && s_.substr(pos).starts_with(text); }

  bool hole_at(std::size_t pos) {
    while (next_hole_ < holes_.size() && holes_[next_hole_].begin < i_) ++next_hole_;
    return next_hole_ < holes_.size() && holes_[next_hole_].begin == pos;
  }
  const text_range* range_starting_at(std::size_t pos) const {
    const auto it = std::lower_bound(holes_.begin(), holes_.end(), pos,
                                     [](const text_range& r, std::size_t p) { return r.begin < p; });
    return it != holes_.end() && it->begin == pos ? &*it : nullptr;
  }
  void record(std::size_t index, const frame& f, bool escaped = false, bool after_dollar = false) {
    out_.positions[index] = {f.quoting, f.arithmetic, escaped, after_dollar, f.in_backticks, f.heredoc};
    if (f.sink) f.sink->push_back(index);
  }
  // The hole at i_ (hole_at(i_) was true).
  void take_hole(const frame& f, bool escaped = false, bool after_dollar = false) {
    record(next_hole_, f, escaped, after_dollar);
    i_ = holes_[next_hole_++].end;
  }
  // Every hole starting in [i_, end), without moving i_.
  void record_until(std::size_t end, const frame& f) {
    hole_at(i_);
    for (; next_hole_ < holes_.size() && holes_[next_hole_].begin < end; ++next_hole_) record(next_hole_, f);
  }

  void commands(frame f, closer c, std::size_t limit);
  void word_unit(command_state& st, const frame& f, std::size_t limit);
  void control(command_state& st, const frame& f, std::size_t limit);
  void end_word(command_state& st);
  bool keyword(command_state& st, std::string_view w);
  static void end_command(command_state& st) {
    st.word_index = 0;
    st.let_args = st.after_for = st.arith_next = false;
  }
  static void begin_word(command_state& st) {
    if (st.in_word) return;
    st.in_word = true;
    st.word_plain = true;
    st.word.clear();
    st.word_is_arith = std::exchange(st.arith_next, false);
  }
  static frame word_frame(command_state& st, frame f) {
    f.arithmetic = f.arithmetic || st.let_args || st.word_is_arith;
    if (st.test_expr) f.sink = &st.word_holes;
    return f;
  }
  bool assignment_subscript(std::size_t limit) const;
  void escape(const frame& f, std::size_t limit);
  void comment(std::size_t limit);
  void heredoc_operator(const frame& f, std::size_t limit);
  void delimiter_unit(heredoc_body& h, const frame& d, std::size_t limit);
  void quoted_delimiter_part(heredoc_body& h, char quote, const frame& d, std::size_t limit);
  void read_heredocs(const frame& f, std::size_t limit);
  std::pair<std::size_t, std::size_t> find_delimiter(const heredoc_body& h, std::size_t limit) const;
  void expanding(const frame& f, char terminator, std::size_t limit);
  void single_quoted(const frame& f, std::size_t limit);
  void ansi_c(const frame& f, std::size_t limit);
  void dollar(const frame& f, std::size_t limit, bool quoted);
  void parameter(const frame& f, std::size_t limit);
  void parameter_word(const frame& f, bool pattern, std::size_t limit);
  void arithmetic(const frame& f, std::string_view end, std::size_t limit);
};

}  // namespace arun::engine::detail
