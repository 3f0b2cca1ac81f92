#pragma once
// Internals of the bash lexer (shell_lexer.hpp), shared by its two source files:
// shell_lexer.cpp reads command lists, comments and heredocs; shell_lexer_expansions.cpp reads
// quotes, `$` expansions and arithmetic.

#include "shell/shell_lexer.hpp"

#include <algorithm>
#include <map>
#include <set>
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
inline bool is_identifier(std::string_view w) {
  return !w.empty() && is_name_start(w[0]) && std::all_of(w.begin(), w.end(), is_name_char);
}
// Whether option letters `flags` (`-pf` read as "pf") hold the letter `c`.
inline bool has_letter(std::string_view flags, char c) { return c != '\0' && flags.find(c) != std::string_view::npos; }
// A file descriptor's number as bash reads one in `3<`, `<&3` or `/dev/fd/3`: at most 4 digits.
inline bool descriptor_number(std::string_view w) {
  return !w.empty() && w.size() <= 4 && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}
inline bool is_special_parameter(char c) { return std::string_view("@*#?$!-").find(c) != std::string_view::npos; }

constexpr std::size_t max_nesting = 200;

// One word as the command it belongs to receives it, after quote removal: its literal
// characters, `\x01` where a reference sits and `\x02` where an expansion's result goes.
// Builtins that take names or code (`read`, `declare`, `eval`, ...) are judged on it.
struct word_shape {
  std::string text;
  std::string quoted;  // per character of `text`: '1' when it was quoted
  std::vector<std::pair<std::size_t, std::size_t>> holes;  // (reference index, offset in text)
  // An expansion in it may yield several words: unquoted (word splitting), or `"$@"`,
  // `"${a[@]}"`. As a command word it may stand for a shell and its `-c` (`$CMD {{x}}`).
  bool many_words = false;
  bool positional = false;  // it expands a positional parameter: `"$@"`, `$1`, `${2:-x}`

  void add(char c, bool q) {
    text += c;
    quoted += q ? '1' : '0';
  }
  void clear() {
    text.clear();
    quoted.clear();
    holes.clear();
    many_words = false;
    positional = false;
  }
  bool literal(std::size_t from, std::size_t to) const {  // unquoted, no reference or expansion
    for (auto k = from; k < to && k < text.size(); ++k)
      if (quoted[k] == '1' || text[k] == '\x01' || text[k] == '\x02') return false;
    return true;
  }
};

// How a reference met in the current construct is read.
struct frame {
  shell_quoting quoting = shell_quoting::unquoted;
  bool arithmetic = false;
  bool in_backticks = false;
  std::size_t heredoc = no_heredoc;
  std::vector<std::size_t>* sink = nullptr;  // collects the references of a `[[ ]]` word
  word_shape* shape = nullptr;               // the word being read, when its shape matters
};

// What a word (or part of one) is to the command that receives it.
enum class word_use { plain, arithmetic, name, code };

// Variables whose values bash treats specially, by name, as declared anywhere in the text
// (`declare -i n`, `local -n r`, `declare -A m`). Collected over the whole text first, so a
// function body that assigns `n=` before the `declare -i n` that reaches it is judged too.
struct attribute_names {
  std::set<std::string, std::less<>> integer, nameref, associative;
  // File descriptors other than 0 a shell or interpreter reads its program from (`bash
  // /dev/fd/3`, `source /proc/self/fd/4`): what any command redirects into them is code
  // (`exec 3<<<'…'` lines before). any_script_fd: the descriptor is an expansion's.
  std::set<int> script_fds;
  bool any_script_fd = false;
  // Functions one of whose commands reads its program from standard input (`f() { sh; }`):
  // a call's input is code (`echo … | f`).
  std::set<std::string, std::less<>> stdin_functions;
  std::set<std::string, std::less<>> arrays;        // `declare -a a`, `a=(…)`: `declare a=VALUE` parses VALUE
  // `alias run='bash -c'`, `run() { bash -c "$1"; }`, `run() { eval "$*"; }`: `run …` runs its words.
  std::set<std::string, std::less<>> code_commands;
  // `run() { bash "$@"; }`: `run …` is that program with those arguments (`run -c …` is `bash -c …`).
  std::map<std::string, std::string, std::less<>> function_programs;
  bool stdin_code_anywhere = false;  // some command reads code from stdin: `exec <<< …` may feed it
};

// The builtins (and programs) whose arguments are names, arithmetic or code.
enum class command_kind {
  other, wrapper, declare, read, mapfile, printf, unset, test, getopts, wait, eval, trap, alias,
  complete, bind,
  program,      // a shell or interpreter (program_rules): its `-c`/`-e` argument, awk/sed programs
  unknown,      // named by an expansion (`"$SHELL"`, `$PYTHON`): it may be a shell or interpreter
  source,       // source, `.`: run a file, which `<( )` makes code
  parallel,     // GNU parallel: its command words run in a shell
  remote,       // ssh: the words after the host run in the remote shell
  runs_option,  // su, runuser, flock, script: the argument of `-c` runs in a shell
  runs_all,     // watch: its words run in a shell
};

// How a shell or interpreter finds its program in its arguments (shell_lexer_programs.cpp).
struct program_rules;

// The builtin or program `command` (a basename) is, by shell_lexer_commands.cpp's table.
command_kind kind_of(std::string_view command);

// Whether a word, once bash expands its braces and globs, may name a shell, an interpreter or
// a command running others (`{sh,-c,…}`, `/bin/[s]h`): shell_lexer_programs.cpp.
bool expands_to_program(const word_shape& w);
// Whether a command text's words name a shell or interpreter (`env -S 'sh -c'`).
bool names_program_in(std::string_view text);
// Whether a command line, run by bash, runs as code an argument appended to it (or put where
// its `{}` stands: `parallel 'sh -c {}'`), or text on its standard input (`ssh HOST 'bash -s'`).
bool appended_is_code(std::string_view command_line);
bool stdin_is_code(std::string_view command_line);
// The descriptor a path names (`/dev/stdin` 0, `/dev/fd/3` 3; -2 for `/dev/fd/$fd`), or -1.
int descriptor_named(std::string_view path);
// The program a command word runs, by its last component (`/bin/sh` is `sh`); the running
// shell's own executable (`/proc/self/exe`, `/proc/$$/exe`) is `bash`.
std::string_view command_name(std::string_view word);

// How the current command reads its arguments so far.
struct command_args {
  command_kind kind = command_kind::other;
  std::string command;        // the command word (builtin or shell name)
  bool options_done = false;  // after `--` or the first operand
  bool after_option = false;  // the last word was an option: an operand now may be its argument
  char option = 0;            // an option whose argument is the next word
  std::string flags;          // option letters seen (declare's attributes, unset -f, trap -p)
  int operands = 0;
  bool feeds_integer = false;  // read/printf -v/mapfile into an integer variable
  // Programs (command_kind::program, unknown, source, parallel):
  const program_rules* program = nullptr;
  bool code_given = false;   // the program came as code (`-c`, `-e`, a first awk operand)
  bool from_file = false;    // the program comes from a file (`awk -f`, `sed -f`)
  bool ended = false;        // no program in the argv (`python -m mod`)
  bool sandbox = false;      // sed --sandbox: its script can run and write nothing
  bool separated = false;    // parallel: after `:::`; the rest are arguments
  bool nested = false;       // unknown: an argument of another command (`ionice "$SHELL" -c …`)
  bool splits = false;       // unknown: named by a word that may expand to several (`$CMD`, `{sh,-c}`, `/bin/[s]h`)
  bool runs_program = false;  // parallel, ssh: its command words start a shell or interpreter
  bool detached = false;      // a program named as an option's argument (`--entrypoint sh`): its own options may come later
  bool package_words = false;  // a package manager's install-like command: its words name packages, not programs
  bool feeds_code = false;     // read/printf -v/mapfile into a variable a program runs (PS4, BASH_ENV)
  std::string last_word;       // other commands: the previous argument (`-s /bin/bash` is a login shell)
  std::string command_line;    // parallel's command words, ssh's remote words: a command line of their own
  bool first_may_vanish = false;  // the first operand is `"$@"`: there may be none (`bash "$@"` reads stdin)
  std::string code_option;              // `-c`, `--eval`: names the code in messages
  std::string first_operand;            // the first operand's literal text ("\x01" if not literal)
  std::vector<std::size_t> sed_script;  // references in a sed script, code unless --sandbox
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

inline constexpr std::size_t no_offset = static_cast<std::size_t>(-1);

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
  bool test_name_next = false;  // after `-v`/`-R` in `[[ ]]`
  bool redirect_target = false;  // the next word is a redirection's target, not an argument
  std::vector<std::size_t> word_holes, prev_word_holes;
  word_shape shape;
  command_args args;
  std::vector<std::size_t> command_holes;  // every reference of the current simple command
  std::vector<std::size_t> environment_holes;  // references in its `NAME=…` (`CC={{x}} make`: make code)
  std::size_t first_heredoc = 0;           // heredocs announced by the current command start here
  std::vector<case_state> cases;
  int parens = 0;
  // Where the text a command reads as its program may come from (code positions):
  std::size_t word_begin = 0;                // text offset of the current word
  std::vector<text_range> word_substitutions;  // its `<( )` and `>( )`
  std::size_t command_begin = no_offset;     // the current simple command's first word
  std::size_t pipeline_begin = no_offset;    // the first command of its pipeline
  std::size_t pipeline_heredocs = 0;         // heredocs announced since the pipeline began
  bool after_pipe = false;                   // a `|` was read; the next command continues the pipeline
  std::vector<std::size_t> groups;           // pipeline_begin at each open `{`, `(`, `if`, `while`, ...
  bool stdin_redirect = false;               // the redirection being read is `<` or `<>`
  bool here_string = false;                  // ... or `<<<`
  std::vector<text_range> stdin_text;        // here-strings and `< <( )`: what the command reads
  bool replaces_input = false;               // xargs -I: input lines are pasted into the command
  bool appends_input = false;                // xargs: input words are appended to the command
  bool stdin_is_script = false;              // `awk -f -`, `BASH_ENV=/dev/stdin`: the program comes from stdin
  bool output_is_code = false;               // a `>( )` of the command runs what it reads as code
  bool after_code_group = false;             // `{ sh; } <<<…`: the group just closed reads code from stdin
  std::vector<bool> group_code;              // per open group: a command in it reads code from stdin
  int redirect_fd = -1;                      // `3<`: the descriptor the next redirection names (-2: `{fd}<`)
  int redirect_into = 0;                     // the descriptor of the redirection being read
  bool dup_input = false;                    // the redirection being read is `N<&M`
  std::vector<std::pair<int, int>> fd_dups;  // `4<&5`, `<&3`, `< /dev/fd/3`: (descriptor, the one it copies; -2: `$fd`)
  std::vector<std::size_t> group_starts;     // per open group: where it opens (`echo … | ( sh )` pipes into it)
  std::string function_name;                 // a function being defined (`f() {`, `function f {`)
  std::size_t function_depth = 0;            // ... at this group depth
  bool code_from_substitution = false;       // code comes from `$( )`/`<( )`, which read the command's stdin
  std::vector<text_range> argument_inputs;   // parallel -a <( ), :::: <( ), xargs -a <( ): input that becomes arguments
  bool input_list = false;                   // this list is a `$( )`, backticks or `<( )`: it shares the command's stdin

  // The current word's process substitutions feed the command's arguments (`xargs -a <(…)`).
  void keep_argument_inputs() { argument_inputs.insert(argument_inputs.end(), word_substitutions.begin(), word_substitutions.end()); }
  bool code_seen = false;                    // the command runs some of its words as code
  bool after_coproc = false;
  std::size_t coproc_depth = no_offset;      // `coproc`: the group depth it began at
  bool output_list = false;                  // this list is a `>( )`: its standard input is a command's output
  bool command_again = false;                // a wrapper started among the arguments: a command word follows

  bool in_pattern() const { return !cases.empty() && cases.back() == case_state::pattern; }
};

class lexer {
public:
  lexer(std::string_view s, const std::vector<text_range>& holes, attribute_names& names)
      : s_(s), holes_(holes), names_(names) {
    out_.positions.resize(holes.size());
  }

  /// Whether this run declared attributes its names did not hold yet (then lex again).
  bool learned() const { return learned_; }

  shell_lex_result run() {
    commands(frame{}, closer::end, s_.size());
    out_.complete = !open_ && !stopped_;
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
  bool open_ = false;  // the text ended inside a construct (shell_lex_result::complete)
  std::vector<std::size_t> pending_;  // heredocs announced on the current line
  attribute_names& names_;
  bool learned_ = false;
  command_state* command_ = nullptr;  // the innermost command list's state
  std::vector<bool> arithmetic_bodies_;  // per heredoc: its body feeds an integer variable
  std::vector<std::string> code_bodies_;  // per heredoc: what runs its body as code, if anything
  std::vector<int> heredoc_fds_;          // per heredoc: the descriptor it feeds (`3<<EOF`)
  bool next_list_is_output_ = false;      // the next command list is a `>( )`
  bool next_list_is_input_ = false;       // the next command list is a `$( )`, backticks or `<( )`
  bool input_runs_code_ = false;          // a command in the substitution just read runs its stdin as code
  bool output_runs_code_ = false;         // a command in the `>( )` just read runs its input as code
  bool all_code_ = false;                 // `exec > >(sh)`, `coproc sh`: later output may be code

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
    auto& p = out_.positions[index];
    p.quoting = f.quoting;
    p.arithmetic = f.arithmetic;
    p.escaped = escaped;
    p.after_dollar = after_dollar;
    p.in_backticks = f.in_backticks;
    p.heredoc = f.heredoc;
    if (f.sink) f.sink->push_back(index);
    if (command_) command_->command_holes.push_back(index);
    if (all_code_ && f.quoting != shell_quoting::comment) mark_code(index, "a shell reading this script's output (`exec > >(sh)`, `coproc sh`)");
  }
  // The hole at i_ (hole_at(i_) was true).
  void take_hole(const frame& f, bool escaped = false, bool after_dollar = false) {
    if (f.shape) {
      f.shape->holes.emplace_back(next_hole_, f.shape->text.size());
      f.shape->add('\x01', f.quoting != shell_quoting::unquoted);
    }
    record(next_hole_, f, escaped, after_dollar);
    i_ = holes_[next_hole_++].end;
  }
  // A literal character of the word being shaped.
  static void literal(const frame& f, char c, bool quoted) {
    if (f.shape) f.shape->add(c, quoted);
  }
  static void literal(const frame& f, char c) { literal(f, c, f.quoting != shell_quoting::unquoted); }
  // An expansion inside the word being shaped; what it reads is not part of the word's shape.
  static frame expansion(const frame& f) {
    literal(f, '\x02', true);
    frame inner = f;
    inner.shape = nullptr;
    return inner;
  }
  void mark(std::size_t index, word_use use);
  // shell_lexer_programs.cpp: code positions.
  void mark_code(std::size_t index, std::string_view runner);
  void mark_code_range(text_range r, std::string_view runner);
  std::vector<std::size_t> word_references(const command_state& st, std::size_t from) const;
  void code_word(command_state& st, std::size_t from, std::string_view runner);
  // A function's arguments reaching code or a program's options through `$1`, `"$@"` (above).
  void learn_positional_use(command_state& st, bool arguments);
  bool in_function(const command_state& st) const { return !st.function_name.empty() && st.groups.size() > st.function_depth; }

  void script_word(command_state& st, std::string_view runner, std::size_t from = 0);  // its text from `from`
  bool start_program(command_state& st, std::string_view name, bool detached = false);
  void other_argument(command_state& st);
  void remote_words(command_state& st);
  bool long_code_option(command_state& st, std::string_view names, std::string_view runner);
  void key_value_code(command_state& st, std::size_t from, std::string_view runner);
  void module_named(command_state& st, std::string_view module);
  void learn_script_fd(int fd);
  void substitution(const frame& f, closer c, std::size_t limit);
  bool start_runner(command_state& st, std::string_view word);
  bool nested_command(command_state& st);
  void program_argument(command_state& st);
  bool program_option(command_state& st);
  void program_operand(command_state& st);
  void parallel_argument(command_state& st);
  bool reads_code_from_stdin(const command_state& st) const;
  bool awaits_code(const command_state& st) const;
  bool script_fd(int fd) const;
  void script_source(command_state& st, std::string_view runner);
  void redirected_text(command_state& st, text_range r);
  std::string many_words_runner(const command_state& st) const;
  void brace_references(command_state& st);
  void finish_command(command_state& st);
  void begin_command(command_state& st, std::size_t at);
  void group_keyword(command_state& st, std::string_view w);
  void open_group(command_state& st);
  void close_group(command_state& st);
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
  void end_command(command_state& st);
  void begin_word(command_state& st) {
    if (st.in_word) return;
    begin_command(st, i_);
    st.word_begin = i_;
    st.word_substitutions.clear();
    st.in_word = true;
    st.word_plain = true;
    st.word.clear();
    st.shape.clear();
    st.word_is_arith = std::exchange(st.arith_next, false);
  }
  static frame word_frame(command_state& st, frame f) {
    f.arithmetic = f.arithmetic || st.let_args || st.word_is_arith;
    if (st.test_expr) f.sink = &st.word_holes;
    f.shape = &st.shape;
    return f;
  }
  // shell_lexer_commands.cpp: what builtins make of their words.
  void command_word(command_state& st);
  void wrapper_option(command_state& st);
  void split_string(command_state& st, std::size_t from);
  bool assignment_word(command_state& st);
  void argument_word(command_state& st);
  bool option_word(command_state& st, std::string_view with_argument);
  void option_argument(command_state& st, char option, std::size_t from);
  void operand_word(command_state& st);
  void declare_argument(command_state& st);
  std::string name_word(const command_state& st, std::size_t from, std::size_t to);
  void mark_from(command_state& st, std::size_t from, word_use use);
  void learn(std::set<std::string, std::less<>>& set, std::string_view name);
  bool integer_variable(std::string_view name) const;
  word_use assigned_use(std::string_view name, std::string_view flags) const;
  bool compound_assignment(command_state& st, const frame& f, std::size_t limit);
  void compound_element(const frame& f, word_use value_use, bool associative, std::size_t limit);
  bool assignment_subscript(std::size_t limit) const;
  void escape(const frame& f, std::size_t limit);
  void comment(std::size_t limit);
  void heredoc_operator(const frame& f, int fd, std::size_t limit);
  void ansi_c_escape(const frame& f, std::size_t limit);
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
