#pragma once
// A small bash lexer (docs/reference/templates.md, "Templates in bash commands"): how bash reads a
// command text at the places where `{{ }}` references sit — quoting, heredocs, comments, command
// substitution and arithmetic.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// The quoting bash applies at a position.
enum class shell_quoting {
  unknown,            ///< the lexer never reached it (treat as an error)
  unquoted,           ///< a plain word, also at the top level of `$( )`, backticks and `<( )`
  double_quoted,      ///< inside "…" (and the word of `${x:-…}` inside "…")
  single_quoted,      ///< inside '…'
  ansi_c_quoted,      ///< inside $'…'
  heredoc,            ///< the body of a heredoc whose delimiter is unquoted
  quoted_heredoc,     ///< the body of a heredoc whose delimiter is quoted: nothing is expanded
  comment,            ///< from an unquoted `#` starting a word to the end of the line
  heredoc_delimiter,  ///< the delimiter word after `<<`
};

/// `[begin, end)` of a text.
struct text_range {
  std::size_t begin = 0;
  std::size_t end = 0;
};

inline constexpr std::size_t no_heredoc = static_cast<std::size_t>(-1);

/// How bash reads one opaque range (a reference) of the text.
struct shell_position {
  shell_quoting quoting = shell_quoting::unknown;
  /// Bash evaluates the text as arithmetic: `$(( ))`, `$[ ]`, `(( ))` (also `for (( ))`),
  /// `let` arguments, operands of `-eq -ne -lt -le -gt -ge` in `[[ ]]`, subscripts of indexed
  /// arrays (`${a[i]}`, `a[i]=`, `a=([i]=v)`, `declare 'a[i]=v'`, `read 'a[i]'`, ...),
  /// `${x:offset:length}`, and values assigned to integer variables (`declare -i n=…`, later
  /// `n=…`, `n+=(…)`, `read n`, `printf -v n`, bash's own RANDOM, OPTIND, ...). Quoting does
  /// not stop the evaluation.
  bool arithmetic = false;
  /// Bash reads the text as a variable name, and a name with a subscript (`a[$(cmd)]`) runs
  /// the subscript: `read NAME`, `printf -v NAME`, `mapfile NAME`, `unset NAME`, `getopts OPTS
  /// NAME`, `wait -p NAME`, `-v NAME` in `test`, `[ ]` and `[[ ]]`, the name part of `declare`,
  /// `local`, `typeset`, `export` and `readonly` arguments, and a nameref's value (`declare -n
  /// r=NAME`, later `r=NAME`).
  bool name = false;
  /// A shell or another interpreter runs the text as code (docs/reference/templates.md, "Code
  /// positions"): `eval` arguments, a `trap` action, the `-c` string of a shell wherever the
  /// shell stands in the command (after wrappers, `find -exec`, `xargs`, `docker exec`, ...),
  /// the code argument of interpreters (`python -c`, `perl -e`, `node -e`, awk and sed
  /// programs, ...), text a shell or interpreter reads as its program from standard input (a
  /// pipe, a here-string, a heredoc, `< <( )`), a process substitution run as a script (`source
  /// <( )`, `bash <( )`), the command words of `ssh HOST`, `watch` and `parallel`, `env -S`,
  /// `mapfile -C`, `complete -C`, `bind -x`, `alias` values, and values given to PS0, PS1, PS2,
  /// PS4 and PROMPT_COMMAND. A reference there is refused whatever its value.
  bool code = false;
  std::string code_in;  ///< for code: what runs it ("sh -c", "python3 -c", "the standard input of sh")
  bool escaped = false;       ///< right after a backslash that escapes the next character
  bool after_dollar = false;  ///< right after a `$` that would join with the replacement
  bool in_backticks = false;  ///< inside backticks at any depth (bash re-reads `\` and `` ` `` there)
  std::size_t heredoc = no_heredoc;  ///< for heredoc bodies: index into shell_lex_result::heredocs
};

/// A heredoc as bash reads it.
struct heredoc_body {
  std::string delimiter;    ///< quotes removed
  bool quoted = false;      ///< `<<'EOF'`, `<<"EOF"`, `<<\EOF`, `<<E"O"F`: the body is literal
  bool strip_tabs = false;  ///< `<<-`: leading tabs are removed from body and delimiter lines
  text_range body;          ///< the body lines, without the delimiter line
};

struct shell_lex_result {
  std::vector<shell_position> positions;  ///< one per opaque range, in the same order
  std::vector<heredoc_body> heredocs;     ///< in the order bash reads them
  /// Why the lexer stopped early, leaving later positions `unknown`: nesting deeper than 200
  /// levels, or a heredoc delimiter whose value only bash can tell (`$(…)`, backticks,
  /// escapes inside `$'…'`).
  std::string stopped;
  /// False when the text ends inside a construct bash would keep reading (a quote, `$( )`,
  /// backticks, `${ }`, `$(( ))`, a heredoc without its delimiter line, a trailing backslash):
  /// text that follows it would become part of it (`validate` checks such a script alone).
  bool complete = true;
};

/// Lexes `script` as bash's parser would, reading each of `opaque` (sorted, disjoint ranges)
/// as plain word text. Never fails: unterminated constructs end at the end of the text.
shell_lex_result lex_shell(std::string_view script, const std::vector<text_range>& opaque);

/// Whether a program runs the value of the environment variable `name` as code (`BASH_ENV`,
/// `PROMPT_COMMAND`, `GIT_SSH_COMMAND`, `EDITOR`, ...): a reference in a step's or recipe's
/// `env` value for it is a code position (docs/reference/templates.md, "Code positions").
bool variable_runs_code(std::string_view name);

}  // namespace arun::engine
