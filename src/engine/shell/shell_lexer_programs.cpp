// The bash lexer (shell_lexer.hpp): code positions (docs/reference/templates.md, "Code
// positions"). Where a shell or an interpreter finds its program — a `-c` string, an `-e`
// argument, an awk or sed program, a script it reads from standard input or from `<( )` — a
// reference would become code, whatever wraps the command: `find -exec`, `xargs`, `docker exec`,
// `ionice`, a pipe, a here-string. Any word naming a shell or interpreter starts such a program,
// so the wrappers need no list; the programs do (program_rules below).
#include "shell/shell_lexer_impl.hpp"

namespace arun::engine::detail {

enum class program_type { shell, interpreter, awk, sed };

struct program_rules {
  std::string_view name;
  program_type type = program_type::interpreter;
  bool versioned = false;          // python3, python3.12, perl5.36, lua5.4
  std::string_view code;           // shell: flags making the first operand code; else: options whose argument is code
  std::string_view argument;       // options taking a data argument (attached, or the next word)
  std::string_view rest;           // options whose argument is only the rest of their word (perl -i.bak, -MO=x)
  std::string_view digits;         // options followed by optional digits (perl -l0, -0777)
  std::string_view file;           // options whose argument is a program file (awk -f, sed -f)
  std::string_view ends;           // options after which the argv holds no program (python -m mod)
  bool code_ends_options = false;  // python: the words after `-c CODE` are its argv
  bool reads_stdin = true;         // with no program given, reads it from standard input
  std::string_view long_code = {};      // " eval print ": long options whose argument is code
  std::string_view long_file = {};      // long options whose argument is a program file
  std::string_view long_argument = {};  // long options taking a data argument
};

namespace {

using enum program_type;

constexpr std::string_view shell_long_files = " rcfile init-file ";

// Shells, then interpreters. A name not listed here (jq, a tool that reads its own language) is
// data to arun: docs/reference/templates.md says what stays the recipe author's choice.
constexpr program_rules programs[] = {
    {"bash", shell, false, "c", "oO", "", "", "", "", false, true, "", shell_long_files, shell_long_files},
    {"sh", shell, false, "c", "oO"}, {"dash", shell, false, "c", "oO"}, {"zsh", shell, false, "c", "oO"},
    {"ksh", shell, false, "c", "oO"}, {"ksh93", shell, false, "c", "oO"}, {"mksh", shell, false, "c", "oO"},
    {"lksh", shell, false, "c", "oO"}, {"oksh", shell, false, "c", "oO"}, {"pdksh", shell, false, "c", "oO"},
    {"ash", shell, false, "c", "oO"}, {"rbash", shell, false, "c", "oO", "", "", "", "", false, true, "", shell_long_files, shell_long_files},
    {"yash", shell, false, "c", "oO"}, {"posh", shell, false, "c", "oO"}, {"fish", shell, false, "cC", "oOd"},
    {"csh", shell, false, "c", ""}, {"tcsh", shell, false, "c", ""},
    {"python", interpreter, true, "c", "WX", "", "", "", "m", true},
    {"pypy", interpreter, true, "c", "WX", "", "", "", "m", true},
    {"perl", interpreter, true, "eE", "", "DFiImMVxd", "0lC"},
    {"ruby", interpreter, true, "e", "CEIr", "FiWxKT", "0"},
    {"node", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print ", "", " require import loader input-type conditions "},
    {"nodejs", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print ", "", " require import loader input-type conditions "},
    {"bun", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print "},
    {"php", interpreter, true, "rBRE", "cdzSt", "", "", "fF"},
    {"lua", interpreter, true, "e", "l"}, {"luajit", interpreter, false, "e", "l"},
    {"Rscript", interpreter, false, "e", ""}, {"R", interpreter, false, "e", "", "", "", "", "", false, true, "", " file "},
    {"julia", interpreter, false, "eE", "", "", "", "", "", false, true, " eval print "},
    {"tclsh", interpreter, true, "", ""}, {"wish", interpreter, true, "", ""},
    {"expect", interpreter, false, "c", "", "", "", "f"}, {"osascript", interpreter, false, "e", "ls"},
    {"awk", awk, false, "e", "vFil", "", "", "fE", "", false, false, " source ", " file exec ", " assign field-separator include load "},
    {"gawk", awk, false, "e", "vFil", "", "", "fE", "", false, false, " source ", " file exec ", " assign field-separator include load "},
    {"mawk", awk, false, "", "vFW", "", "", "f", "", false, false},
    {"nawk", awk, false, "", "vF", "", "", "f", "", false, false},
    {"original-awk", awk, false, "", "vF", "", "", "f", "", false, false},
    {"sed", sed, false, "e", "l", "", "", "f", "", false, false, " expression ", " file ", " line-length "},
    {"gsed", sed, false, "e", "l", "", "", "f", "", false, false, " expression ", " file ", " line-length "},
};

// `python3`, `python3.12`, `perl5.36` name `python` and `perl`.
const program_rules* program_named(std::string_view name) {
  for (const auto& p : programs) {
    if (!name.starts_with(p.name)) continue;
    const auto tail = name.substr(p.name.size());
    if (tail.empty() || (p.versioned && std::all_of(tail.begin(), tail.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; })))
      return &p;
  }
  return nullptr;
}

bool has(std::string_view flags, char c) { return c != '\0' && flags.find(c) != std::string_view::npos; }

bool listed(std::string_view list, std::string_view name) {
  return !name.empty() && list.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// Commands whose operands are text to search for or print: `grep sh` names no program to run.
bool searches_text(std::string_view command) {
  for (std::string_view n : {"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "pgrep", "pkill", "killall", "which",
                             "whereis", "type", "man", "apropos", "echo", "printf"})
    if (command == n) return true;
  return false;
}

bool names_stdin(std::string_view operand) {
  return operand == "-" || operand == "/dev/stdin" || operand == "/dev/fd/0" || operand == "/proc/self/fd/0";
}

std::string_view basename(std::string_view w) {
  const auto slash = w.rfind('/');
  return slash == std::string_view::npos ? w : w.substr(slash + 1);
}

// Pending option arguments of a program (command_args::option).
constexpr char code_next = '\x01', file_next = '\x02', data_next = '\x03';

}  // namespace

void lexer::mark_code(std::size_t index, std::string_view runner) {
  auto& p = out_.positions[index];
  p.code = true;
  if (p.code_in.empty()) p.code_in = std::string(runner);
}

void lexer::mark_code_range(text_range r, std::string_view runner) {
  auto it = std::lower_bound(holes_.begin(), holes_.end(), r.begin,
                             [](const text_range& h, std::size_t p) { return h.begin < p; });
  for (; it != holes_.end() && it->begin < r.end; ++it) mark_code(static_cast<std::size_t>(it - holes_.begin()), runner);
}

// The references of the current word from shape offset `from` on, and every reference inside
// its expansions (`"$(printf %s {{x}})"` hands the value to whoever reads the word).
std::vector<std::size_t> lexer::word_references(const command_state& st, std::size_t from) const {
  std::vector<std::size_t> out;
  std::vector<std::size_t> shaped;
  for (const auto& [index, offset] : st.shape.holes) {
    shaped.push_back(index);
    if (offset >= from) out.push_back(index);
  }
  auto it = std::lower_bound(holes_.begin(), holes_.end(), st.word_begin,
                             [](const text_range& h, std::size_t p) { return h.begin < p; });
  for (; it != holes_.end() && it->begin < i_; ++it) {
    const auto index = static_cast<std::size_t>(it - holes_.begin());
    if (std::find(shaped.begin(), shaped.end(), index) == shaped.end()) out.push_back(index);
  }
  return out;
}

void lexer::code_word(command_state& st, std::size_t from, std::string_view runner) {
  st.code_seen = true;
  auto refs = word_references(st, from);
  auto& a = st.args;
  if (a.program && a.program->type == sed) {  // code unless `--sandbox`, which may come later
    a.sed_script.insert(a.sed_script.end(), refs.begin(), refs.end());
    return;
  }
  for (const auto index : refs) mark_code(index, runner);
}

// A script file operand: a process substitution there (`bash <(…)`, `source <(…)`) is code.
void lexer::script_word(command_state& st, std::string_view runner) {
  for (const auto& r : st.word_substitutions) mark_code_range(r, std::string(runner) + " <( )");
}

// The word names a shell or interpreter: what follows are its arguments.
bool lexer::start_program(command_state& st, std::string_view name) {
  const auto* p = program_named(basename(name));
  if (!p) return false;
  std::string command(basename(name));  // `name` may be the current command's own text
  st.args = command_args{};
  st.args.kind = command_kind::program;
  st.args.command = std::move(command);
  st.args.program = p;
  return true;
}

// `taskset 1 env -S …`, `ionice parallel …`: a program that runs its arguments, standing as an
// argument of another, is read as if it were the command (builtins cannot stand there).
bool lexer::start_runner(command_state& st, std::string_view word) {
  const std::string name(basename(word));  // `word` may be the current command's own text
  const auto kind = kind_of(name);
  const bool runner = kind == command_kind::parallel || kind == command_kind::remote ||
                      kind == command_kind::runs_option || kind == command_kind::runs_all ||
                      (kind == command_kind::wrapper && name != "builtin" && name != "command" && name != "exec");
  if (!runner) return false;
  st.args = command_args{};
  st.args.command = name;
  st.args.kind = kind;
  if (kind == command_kind::wrapper) st.command_again = true;  // its next word is a command word
  return true;
}

// An argument of another command that starts a program: `find -exec sh -c`, `ionice -c3
// python3 -c`, `docker exec c sh -c`, `xargs -0 perl -e`, `setpriv -- "$SHELL" -c`.
bool lexer::nested_command(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (!(a.kind == command_kind::other || a.kind == command_kind::runs_option) || a.option || searches_text(a.command))
    return false;
  if (t.find_first_of("\x01\x02") == std::string::npos) return start_program(st, t) || start_runner(st, t);
  if (t.empty() || t[0] != '\x02' || !(s_[st.word_begin] == '$' || s_[st.word_begin] == '"')) return false;
  a = command_args{};  // an expansion may name a shell too
  a.kind = command_kind::unknown;
  a.nested = true;
  a.command = std::string(s_.substr(st.word_begin, std::min<std::size_t>(i_ - st.word_begin, 40)));
  return true;
}

void lexer::program_argument(command_state& st) {
  auto& a = st.args;
  if (const char pending = std::exchange(a.option, 0)) {
    if (pending == code_next) code_word(st, 0, a.command + " " + a.code_option);
    if (pending == file_next) script_word(st, a.command);
    return;
  }
  if (!a.options_done && program_option(st)) return;
  program_operand(st);
}

// `-c`, `-ne`, `-e'code'`, `--eval=code`, `--`: true when the word is options.
bool lexer::program_option(command_state& st) {
  auto& a = st.args;
  const auto* p = a.program;  // null: a command named by an expansion
  const auto& t = st.shape.text;
  const bool is_shell = p && p->type == shell;
  if (t.size() < 2 || st.shape.quoted[0] == '1' || !(t[0] == '-' || (t[0] == '+' && is_shell))) return false;
  if (t == "--") {
    a.options_done = true;
    return true;
  }
  // The option's text names the code in messages: `python3 -c`, `node --eval`.
  const auto code_option = [&](std::size_t end, std::size_t arg) {
    a.code_given = true;
    a.code_option = t.substr(0, end);
    if (arg < t.size())
      code_word(st, arg, a.command + " " + t.substr(0, end));
    else
      a.option = code_next;
  };
  if (t[1] == '-') {
    const auto eq = t.find('=');
    const std::string name = t.substr(2, (eq == std::string::npos ? t.size() : eq) - 2);
    const auto arg = eq == std::string::npos ? t.size() : eq + 1;
    if (p && listed(p->long_code, name)) {
      code_option(eq == std::string::npos ? t.size() : eq, arg);
    } else if (p && listed(p->long_file, name)) {
      a.from_file = true;
      if (eq == std::string::npos) a.option = file_next; else script_word(st, a.command);
    } else if (p && listed(p->long_argument, name) && eq == std::string::npos) {
      a.option = data_next;
    } else if (name == "sandbox") {
      a.sandbox = true;
    }
    return true;
  }
  for (std::size_t k = 1; k < t.size(); ++k) {
    const char c = t[k];
    if (c == '\x01' || c == '\x02') return true;
    const bool more = k + 1 < t.size();
    a.flags += c;
    if (!p) {  // maybe a shell or an interpreter: `-c`, `-e`, `-E` take code
      if (has("ceE", c)) {
        code_option(k + 1, k + 1);
        return true;
      }
      continue;
    }
    if (is_shell) {
      if (has(p->code, c)) a.code_given = true;
      if (has(p->argument, c)) {
        if (!more) a.option = data_next;
        return true;
      }
      continue;
    }
    if (has(p->code, c)) {
      if (more && has(p->code, t[k + 1])) continue;  // node -pe CODE
      code_option(k + 1, k + 1);
      if (p->code_ends_options && !more) a.options_done = true;
      return true;
    }
    if (has(p->file, c)) {
      a.from_file = true;
      if (more) script_word(st, a.command); else a.option = file_next;
      return true;
    }
    if (has(p->ends, c)) {
      a.ended = a.options_done = true;
      if (!more) a.option = data_next;
      return true;
    }
    if (has(p->argument, c)) {
      if (!more) a.option = data_next;
      return true;
    }
    if (has(p->rest, c)) return true;
    if (has(p->digits, c))
      while (k + 1 < t.size() && ((t[k + 1] >= '0' && t[k + 1] <= '9') || (c == '0' && t[k + 1] == 'x'))) ++k;
  }
  return true;
}

void lexer::program_operand(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  const bool literal = t.find_first_of("\x01\x02") == std::string::npos;
  const bool first = a.operands++ == 0;
  if (first) a.first_operand = literal ? t : "\x01";
  const auto* p = a.program;
  if (p && (p->type == awk || p->type == sed)) {  // GNU tools read options after operands too
    if (first && !a.code_given && !a.from_file) {
      a.code_given = true;
      code_word(st, 0, a.command + (p->type == awk ? " (its program)" : " (its script)"));
    }
    return;
  }
  a.options_done = true;
  if (first && p && p->type == shell && has(a.flags, 'c')) {
    code_word(st, 0, a.command + " -c");
    return;
  }
  if (first && p && !a.code_given && !a.ended) {
    script_word(st, a.command);
    return;
  }
  if (literal) start_program(st, t);  // `bash script.sh python3 -c …`: the script may run it
}

// GNU parallel runs its command words in a shell; after `:::` come arguments, which it
// quotes — unless no command was given, when they are the commands.
void lexer::parallel_argument(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (t == ":::" || t == "::::" || t == ":::+" || t == "::::+") {
    a.separated = true;
    return;
  }
  if (a.separated) {
    if (a.operands == 0) code_word(st, 0, "parallel (its arguments are its commands)");
    return;
  }
  if (std::exchange(a.option, 0)) return;
  if (!a.options_done && t.size() >= 2 && st.shape.quoted[0] == '0' && t[0] == '-') {
    if (t.size() == 2 && has("adEIjLnNPSsC", t[1])) a.option = t[1];
    return;
  }
  a.options_done = true;
  ++a.operands;
  code_word(st, 0, "parallel");
}

bool lexer::reads_code_from_stdin(const command_state& st) const {
  const auto& a = st.args;
  if (st.replaces_input && st.code_seen) return true;  // xargs -I{} sh -c '… {} …'
  switch (a.kind) {
    case command_kind::program:
      if (!a.program->reads_stdin || a.code_given || a.from_file || a.ended) return false;
      return a.operands == 0 || names_stdin(a.first_operand) || (a.program->type == shell && has(a.flags, 's'));
    case command_kind::unknown: return !a.nested && a.operands == 0 && a.flags.empty();
    case command_kind::source: return names_stdin(a.first_operand);
    case command_kind::remote: return a.operands <= 1;  // `ssh HOST`: the remote shell reads stdin
    case command_kind::runs_option: return a.command != "flock" && !has(a.flags, 'c');
    case command_kind::parallel: return !a.separated && a.operands == 0;
    default: return false;
  }
}

// At the end of a simple command: what it reads from standard input, a sed script.
void lexer::finish_command(command_state& st) {
  auto& a = st.args;
  if (!a.sandbox)
    for (const auto index : a.sed_script) mark_code(index, a.command + " (its script; --sandbox would keep it from running commands)");
  if (st.command_begin != no_offset && reads_code_from_stdin(st)) {
    const std::string runner = "the standard input of " + (a.command.empty() ? std::string("the command") : a.command);
    if (st.pipeline_begin < st.command_begin) mark_code_range({st.pipeline_begin, st.command_begin}, "text piped into " + a.command);
    for (const auto& r : st.stdin_text) mark_code_range(r, runner);
    code_bodies_.resize(out_.heredocs.size());
    for (auto h = st.pipeline_heredocs; h < out_.heredocs.size(); ++h) code_bodies_[h] = runner;
  }
  st.stdin_text.clear();
  st.replaces_input = st.code_seen = false;
  st.command_begin = no_offset;
}

void lexer::begin_command(command_state& st, std::size_t at) {
  if (st.command_begin != no_offset) return;
  st.command_begin = at;
  if (!std::exchange(st.after_pipe, false) || st.pipeline_begin == no_offset) {
    st.pipeline_begin = at;
    st.pipeline_heredocs = out_.heredocs.size();
  }
}

// A compound command piped as a whole (`{ …; } | sh`, `for …; done | sh`) begins its pipeline.
void lexer::group_keyword(command_state& st, std::string_view w) {
  for (std::string_view k : {"{", "if", "while", "until", "for", "select", "case"})
    if (w == k) return st.groups.push_back(st.pipeline_begin);
  for (std::string_view k : {"}", "fi", "done", "esac"})
    if (w == k && !st.groups.empty()) {
      st.pipeline_begin = st.groups.back();
      st.groups.pop_back();
      return;
    }
}

}  // namespace arun::engine::detail
