// The bash lexer (shell_lexer.hpp): what commands make of their words. Builtins that take
// variable names (`read`, `printf -v`, `declare`, ...), run text as code (`eval`, `trap`,
// `bash -c`, ...) or evaluate assigned values as arithmetic (integer variables) decide how a
// reference in their arguments must be checked.
#include "shell/shell_lexer_impl.hpp"

namespace arun::engine::detail {
namespace {

// Bash's own integer variables (`declare -pi`), and two it evaluates on assignment too.
bool special_integer(std::string_view name) {
  for (std::string_view n : {"BASHPID", "EUID", "HISTCMD", "MAILCHECK", "OPTIND", "PPID", "RANDOM", "SRANDOM", "UID",
                             "SECONDS", "LINENO"})
    if (name == n) return true;
  return false;
}

// Variables whose values a shell or another program runs as code: bash's prompts (`PS4` under
// `set -x`) and `PROMPT_COMMAND`; `BASH_ENV` and `ENV`, which bash expands (`$(…)` runs) before
// sourcing the file; exported functions (`BASH_FUNC_f%%`); command lines git, ssh, sudo, man
// and less run through `sh -c`; the options perl and ruby read as switches (`-M` runs code).
bool code_variable(std::string_view name) {
  if (name.starts_with("BASH_FUNC_") || name.starts_with("GIT_CONFIG_VALUE_")) return true;
  // Named as a command a program runs: `GH_PAGER`, `PSQL_EDITOR`, `DELTA_PAGER`, `FOO_ASKPASS`, `X_COMMAND`.
  for (std::string_view suffix : {"EDITOR", "PAGER", "ASKPASS", "_COMMAND", "_RSH"})
    if (name.ends_with(suffix)) return true;
  for (std::string_view n : {"PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV", "GIT_SSH_COMMAND", "GIT_SSH",
                             "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
                             "GIT_PROXY_COMMAND", "SSH_ASKPASS", "SUDO_ASKPASS", "EDITOR", "VISUAL", "PAGER", "MANPAGER",
                             "LESSOPEN", "LESSCLOSE", "PERL5OPT", "PERL5DB", "RUBYOPT", "RSYNC_RSH", "RSYNC_CONNECT_PROG",
                             "CVS_RSH", "SVN_EDITOR", "SVN_SSH", "HGEDITOR", "KUBE_EDITOR", "SYSTEMD_EDITOR", "SYSTEMD_PAGER",
                             "SUDO_EDITOR", "FCEDIT", "NODE_OPTIONS", "GIT_CONFIG_PARAMETERS", "MAKEFLAGS", "GNUMAKEFLAGS",
                             "MFLAGS", "TAR_OPTIONS", "BROWSER", "VIMINIT", "GVIMINIT", "EXINIT"})
    if (name == n) return true;
  return false;
}

struct command_entry {
  std::string_view name;
  command_kind kind;
};

constexpr command_entry commands_table[] = {
    {"declare", command_kind::declare}, {"typeset", command_kind::declare}, {"local", command_kind::declare},
    {"export", command_kind::declare},  {"readonly", command_kind::declare}, {"read", command_kind::read},
    {"mapfile", command_kind::mapfile}, {"readarray", command_kind::mapfile}, {"printf", command_kind::printf},
    {"unset", command_kind::unset},     {"test", command_kind::test},        {"[", command_kind::test},
    {"getopts", command_kind::getopts}, {"wait", command_kind::wait},        {"eval", command_kind::eval},
    {"trap", command_kind::trap},       {"alias", command_kind::alias},      {"complete", command_kind::complete},
    {"compgen", command_kind::complete}, {"bind", command_kind::bind},
    {"source", command_kind::source}, {".", command_kind::source}, {"parallel", command_kind::parallel},
    {"ssh", command_kind::remote}, {"autossh", command_kind::remote}, {"mosh", command_kind::remote}, {"su", command_kind::runs_option}, {"runuser", command_kind::runs_option},
    {"flock", command_kind::runs_option}, {"script", command_kind::runs_option}, {"watch", command_kind::runs_all},
    {"sg", command_kind::runs_option}, {"newgrp", command_kind::runs_option},
    // Commands that run the command named by their next words.
    {"builtin", command_kind::wrapper}, {"command", command_kind::wrapper}, {"exec", command_kind::wrapper},
    {"nohup", command_kind::wrapper}, {"setsid", command_kind::wrapper}, {"env", command_kind::wrapper},
    {"nice", command_kind::wrapper}, {"timeout", command_kind::wrapper}, {"stdbuf", command_kind::wrapper},
    {"sudo", command_kind::wrapper}, {"doas", command_kind::wrapper}, {"xargs", command_kind::wrapper},
};

}  // namespace

command_kind kind_of(std::string_view command) {
  for (const auto& e : commands_table)
    if (e.name == command) return e.kind;
  return command_kind::other;
}

namespace {

// Option letters that take the next word (or the rest of their word) as their argument.
std::string_view options_with_argument(const command_args& a) {
  switch (a.kind) {
    case command_kind::read: return "adinNptu";
    case command_kind::mapfile: return "dnOsuCc";
    case command_kind::printf: return "v";
    case command_kind::wait: return "p";
    case command_kind::complete: return "ACFGPSWXo";
    case command_kind::bind: return "mqurfx";
    case command_kind::remote: return a.command == "autossh" ? "BbcDEeFIiJLlmMOopQRSWw" : "BbcDEeFIiJLlmOopQRSWw";
    case command_kind::runs_option: return a.command == "flock" ? "cEw" : a.command == "script" ? "cEIOBT" : "cgGlsw";
    case command_kind::runs_all: return "nd";
    case command_kind::wrapper:
      if (a.command == "exec") return "a";
      if (a.command == "env") return "uCS";
      if (a.command == "nice") return "n";
      if (a.command == "timeout") return "sk";
      if (a.command == "stdbuf") return "ioe";
      if (a.command == "sudo") return "CDghpRrTtUu";
      if (a.command == "doas") return "Cu";
      if (a.command == "xargs") return "adEILnPs";
      return "";
    default: return "";
  }
}

}  // namespace

void lexer::mark(std::size_t index, word_use use) {
  auto& p = out_.positions[index];
  if (use == word_use::arithmetic) p.arithmetic = true;
  if (use == word_use::name) p.name = true;
  if (use == word_use::code) mark_code(index, "the program reading the variable");
}

void lexer::learn(std::set<std::string, std::less<>>& set, std::string_view name) {
  if (set.insert(std::string(name)).second) learned_ = true;
}

bool lexer::integer_variable(std::string_view name) const {
  return special_integer(name) || names_.integer.contains(name);
}

word_use lexer::assigned_use(std::string_view name, std::string_view flags) const {
  if (has_letter(flags, 'i') || integer_variable(name)) return word_use::arithmetic;
  if (has_letter(flags, 'n') || names_.nameref.contains(name)) return word_use::name;
  if (code_variable(name)) return word_use::code;
  return word_use::plain;
}

void lexer::mark_from(command_state& st, std::size_t from, word_use use) {
  if (use == word_use::name) {
    name_word(st, from, st.shape.text.size());
    return;
  }
  if (use == word_use::code) return code_word(st, from, "the program reading the variable");
  for (const auto& [index, offset] : st.shape.holes)
    if (offset >= from) mark(index, use);
}

// The words `[from, to)` of the shape as a variable name: references inside `[ ]` are a
// subscript (arithmetic, unless the array is associative), the others part of the name.
// Returns the name when its characters before any subscript are all literal.
std::string lexer::name_word(const command_state& st, std::size_t from, std::size_t to) {
  const auto& t = st.shape.text;
  to = std::min(to, t.size());
  auto base_end = from;
  while (base_end < to && t[base_end] != '[' && t[base_end] != '\x01' && t[base_end] != '\x02') ++base_end;
  const bool literal_base = (base_end == to || t[base_end] == '[') && is_identifier(t.substr(from, base_end - from));
  const std::string base = literal_base ? t.substr(from, base_end - from) : std::string();
  const bool associative = !base.empty() && names_.associative.contains(base);
  // Holes come in text order: the bracket depth is carried from one to the next.
  int depth = 0;
  auto scanned = from;
  for (const auto& [index, offset] : st.shape.holes) {
    if (offset < from || offset >= to) continue;
    for (; scanned < offset; ++scanned) depth += t[scanned] == '[' ? 1 : t[scanned] == ']' && depth > 0 ? -1 : 0;
    if (depth == 0)
      mark(index, word_use::name);
    else
      out_.positions[index].arithmetic = !associative;
  }
  return base;
}

// `name=…`, `name+=…`, `name[sub]=…` in front of a command (or alone).
bool lexer::assignment_word(command_state& st) {
  const auto& t = st.shape.text;
  const auto& q = st.shape.quoted;
  std::size_t k = 0;
  while (k < t.size() && q[k] == '0' && is_name_char(t[k])) ++k;
  if (k == 0 || !is_name_start(t[0])) return false;
  const auto name = t.substr(0, k);
  auto sub_end = k;
  if (k < t.size() && t[k] == '[' && q[k] == '0') {
    for (int depth = 0; sub_end < t.size(); ++sub_end) {
      if (t[sub_end] == '[') ++depth;
      if (t[sub_end] == ']' && --depth == 0) break;
    }
    if (sub_end == t.size()) return false;
    ++sub_end;
  }
  auto eq = sub_end;
  if (eq < t.size() && t[eq] == '+' && q[eq] == '0') ++eq;
  if (eq >= t.size() || t[eq] != '=' || q[eq] != '0') return false;
  const bool associative = names_.associative.contains(name);
  const auto use = assigned_use(name, "");
  for (const auto& [index, offset] : st.shape.holes) {
    if (offset > k && offset < sub_end)
      out_.positions[index].arithmetic = !associative;
    else if (offset > eq && use == word_use::arithmetic)
      mark(index, use);
  }
  if (use == word_use::name) name_word(st, eq + 1, t.size());
  if (use == word_use::code) code_word(st, eq + 1, name);  // PS4="$(printf %s {{x}})" too
  for (const auto index : word_references(st, eq + 1)) st.environment_holes.push_back(index);
  if (name == "BASH_ENV" || name == "ENV") script_source(st, std::string_view(t).substr(eq + 1));  // BASH_ENV=/dev/stdin
  return true;
}

void lexer::command_word(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (a.kind == command_kind::wrapper) {
    if (a.option) {
      // `env -S STRING` splits its string into a command line, with its own quotes and ${VAR}.
      if (a.command == "env" && a.option == 'S') split_string(st, 0);
      if (a.command == "xargs" && a.option == 'a')  // xargs -a <(…): its input
        st.keep_argument_inputs();
      a.option = 0;
      return;
    }
    if (t.size() > 1 && t[0] == '-') {  // quoted or not: the wrapper receives the same option
      if (a.command == "xargs" && (t.starts_with("-I") || t.starts_with("-i") || t.starts_with("--replace")))
        st.replaces_input = true;  // input lines are pasted into the command's words
      if (a.command == "xargs" && (t == "--arg-file=" || t == "--arg-file")) {
        a.option = 'a';  // `--arg-file=<(…)`: the substitution is read as a word of its own
        return;
      }
      if (a.command == "xargs" && (t.starts_with("--arg-file=") || (t.starts_with("-a") && t.size() > 2)))
        st.keep_argument_inputs();
      wrapper_option(st);
      return;
    }
    if ((a.command == "env" || a.command == "sudo") && t.find('=') != std::string::npos && t[0] != '=') {
      const auto eq = t.find('=');  // `env NAME=VALUE`: the environment of the command
      const auto name = std::string_view(t).substr(0, eq);
      if (code_variable(name)) code_word(st, eq + 1, name);
      if (name == "BASH_ENV" || name == "ENV") script_source(st, std::string_view(t).substr(eq + 1));
      for (const auto index : word_references(st, eq + 1)) st.environment_holes.push_back(index);
      return;
    }
    if (a.command == "timeout" && a.operands++ == 0) return;  // the duration
  }
  a = command_args{};
  // `run() { "$@"; }`: a call runs its first argument as a command, builtins too (`run eval …`).
  if (st.shape.positional && in_function(st) && names_.function_programs.emplace(st.function_name, "command").second)
    learned_ = true;
  if (st.shape.many_words || expands_to_program(st.shape)) {
    // `$CMD {{x}}`, `"${cmd[@]}" {{x}}`, `{sh,-c,{{x}}}`, `/bin/[s]h -c`: the command may be a
    // shell and its `-c` — every reference after it may be its code.
    a.kind = command_kind::unknown;
    a.splits = true;
    a.command = std::string(s_.substr(st.word_begin, std::min<std::size_t>(i_ - st.word_begin, 40)));
    brace_references(st);
    return;
  }
  if (t.find_first_of("\x01\x02") != std::string::npos) {
    // `"$SHELL" -c …`, `$PYTHON -c …`, `{{tool}} -e …`: whatever it runs may be a shell.
    a.kind = command_kind::unknown;
    a.command = std::string(s_.substr(st.word_begin, std::min<std::size_t>(i_ - st.word_begin, 40)));
    return;
  }
  a.command = std::string(command_name(t));
  a.kind = kind_of(a.command);
  if (names_.code_commands.contains(t)) {  // an alias or a function running its words as code
    a.kind = command_kind::unknown;
    a.splits = true;
    return;
  }
  if (const auto f = names_.function_programs.find(t); f != names_.function_programs.end() && a.kind == command_kind::other) {
    if (f->second == "command") {  // `run() { "$@"; }`: a wrapper
      a.command = f->second;
      a.kind = kind_of(a.command);
    } else {
      start_program(st, f->second);  // `run() { bash "$@"; }; run -c …`
    }
    return;
  }
  if (a.command == "xargs") st.appends_input = true;
  if (a.kind == command_kind::other) start_program(st, a.command);
}

// `env -S STRING` from `from` on: a command line of its own. When it starts a shell or an
// interpreter (`env -S 'sh -c' …`), the words after it are that program's arguments.
void lexer::split_string(command_state& st, std::size_t from) {
  code_word(st, from, "env -S");
  const auto line = std::string_view(st.shape.text).substr(from);
  if (stdin_is_code(line)) st.stdin_is_script = true;  // `… | env -S 'bash -s'`
  if (!appended_is_code(line)) return;
  st.args = command_args{};
  st.args.kind = command_kind::unknown;
  st.args.splits = true;
  st.args.command = "env -S";
}

// An option word of a wrapper: a cluster (`env -iS…`, `nice -n5`), a long option, GNU's
// abbreviations of it (`env --split=…`, `--s …`).
void lexer::wrapper_option(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (t[1] == '-') {
    if (a.command != "env") return;
    const auto eq = t.find('=');
    const auto name = std::string_view(t).substr(2, (eq == std::string::npos ? t.size() : eq) - 2);
    if (name.empty()) return;
    if (std::string_view("split-string").starts_with(name)) {
      if (eq != std::string::npos) split_string(st, eq + 1); else a.option = 'S';
    } else if (eq == std::string::npos && (std::string_view("unset").starts_with(name) || std::string_view("chdir").starts_with(name))) {
      a.option = name[0] == 'u' ? 'u' : 'C';
    }
    return;
  }
  const auto with_argument = options_with_argument(a);
  for (std::size_t k = 1; k < t.size(); ++k) {
    if (t[k] == '\x01' || t[k] == '\x02') return;
    a.flags += t[k];  // sudo -s, -i: a shell
    if (!has_letter(with_argument, t[k])) continue;
    if (k + 1 < t.size()) {
      if (a.command == "env" && t[k] == 'S') split_string(st, k + 1);
    } else {
      a.option = t[k];
    }
    return;
  }
}

void lexer::argument_word(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (nested_command(st)) return;
  switch (a.kind) {
    case command_kind::other: return other_argument(st);
    case command_kind::wrapper: return;
    case command_kind::program:
    case command_kind::unknown: return program_argument(st);
    case command_kind::parallel: return parallel_argument(st);
    case command_kind::source:
      if (std::exchange(a.option, 0)) return;  // `source -p PATH FILE`
      if (a.operands == 0 && !a.options_done && (t == "--" || t == "-p")) {
        if (t == "-p") a.option = 'p'; else a.options_done = true;
        return;
      }
      if (a.operands++ == 0) {
        a.first_operand = t;
        script_word(st, a.command);
      }
      return;
    case command_kind::declare: return declare_argument(st);
    case command_kind::eval: return code_word(st, 0, "eval");
    case command_kind::alias:
      if (const auto eq = t.find('='); eq != std::string::npos) {
        code_word(st, eq + 1, "alias");
        // `alias run='bash -c'`: a later `run …` hands its words to the shell.
        if (appended_is_code(std::string_view(t).substr(eq + 1)) || stdin_is_code(std::string_view(t).substr(eq + 1)))
          learn(names_.code_commands, std::string_view(t).substr(0, eq));
      }
      return;
    case command_kind::test:
      if (std::exchange(a.option, 0))
        name_word(st, 0, t.size());
      else if (t == "-v" || t == "-R")
        a.option = 'v';
      return;
    default: break;
  }
  if (a.option) {
    option_argument(st, std::exchange(a.option, 0), 0);
    return;
  }
  if (a.kind == command_kind::runs_option && !a.option &&
      long_code_option(st, " command session-command ", a.command + " --command"))  // su --command=…, flock --com …
    return;
  if (!a.options_done && option_word(st, options_with_argument(a))) return;
  if (a.kind == command_kind::runs_option && a.command == "flock" && a.operands == 1) {
    // `flock FILE useradd … -c …`: the command and its own options.
    const std::string name(command_name(t));
    a = command_args{};
    a.command = name;
    return;
  }
  // GNU tools read options after operands too (`flock FILE -c CMD`).
  a.options_done = a.kind != command_kind::runs_option;
  operand_word(st);
  ++a.operands;
}

// `-x`, `-xy`, `-vNAME`: true when the word is options (or `--`).
bool lexer::option_word(command_state& st, std::string_view with_argument) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (t.size() < 2 || st.shape.quoted[0] == '1' || t[0] != '-') return false;
  if (t == "--") {
    a.options_done = true;
    return true;
  }
  if (t[1] == '-') return true;  // a long option (`bash --norc`)
  for (std::size_t k = 1; k < t.size(); ++k) {
    if (t[k] == '\x01' || t[k] == '\x02') return true;
    a.flags += t[k];
    if (has_letter(with_argument, t[k])) {
      if (k + 1 < t.size())
        option_argument(st, t[k], k + 1);
      else
        a.option = t[k];
      return true;
    }
  }
  return true;
}

void lexer::option_argument(command_state& st, char option, std::size_t from) {
  auto& a = st.args;
  const auto size = st.shape.text.size();
  const auto feeds = [&](const std::string& name) {
    a.feeds_integer = a.feeds_integer || integer_variable(name);
    if (code_variable(name)) {  // `read -r PS4`, `printf -v BASH_ENV …`
      a.feeds_code = true;
      a.code_option = name;
    }
  };
  switch (a.kind) {
    case command_kind::read:
      if (option == 'a') feeds(name_word(st, from, size));
      return;
    case command_kind::printf:
      if (option == 'v') feeds(name_word(st, from, size));
      return;
    case command_kind::wait:
      if (option == 'p') name_word(st, from, size);
      return;
    case command_kind::mapfile:
    case command_kind::complete:
      if (option == 'C') code_word(st, from, a.command + " -C");
      if (option == 'W' && a.kind == command_kind::complete) code_word(st, from, a.command + " -W (it expands its word list)");
      return;
    case command_kind::bind:
      if (option == 'x') code_word(st, from, "bind -x");
      return;
    case command_kind::runs_option:
      if (option == 'c') code_word(st, from, a.command + " -c");
      return;
    case command_kind::remote:
      if (option == 'o') key_value_code(st, from, a.command + " -o");  // -o ProxyCommand=…
      return;
    default: return;
  }
}

void lexer::operand_word(command_state& st) {
  auto& a = st.args;
  const auto size = st.shape.text.size();
  const auto feeds = [&](const std::string& name) {
    a.feeds_integer = a.feeds_integer || integer_variable(name);
    if (code_variable(name)) {  // `read -r PS4`, `printf -v BASH_ENV …`
      a.feeds_code = true;
      a.code_option = name;
    }
  };
  switch (a.kind) {
    case command_kind::read: feeds(name_word(st, 0, size)); return;
    case command_kind::mapfile:
      if (a.operands == 0) feeds(name_word(st, 0, size));
      return;
    case command_kind::unset:
      if (!has_letter(a.flags, 'f')) name_word(st, 0, size);
      return;
    case command_kind::getopts:
      if (a.operands == 1) name_word(st, 0, size);
      return;
    case command_kind::trap:
      if (a.operands == 0 && !has_letter(a.flags, 'p') && !has_letter(a.flags, 'l')) code_word(st, 0, "trap");
      return;
    case command_kind::remote:
      if (a.operands > 0) {
        code_word(st, 0, a.command + " (its remote command)");
        remote_words(st);
      }
      return;
    case command_kind::runs_all: code_word(st, 0, a.command); return;
    default: return;
  }
}

// An argument of declare, typeset, local, export or readonly: options set attributes; then
// `name`, `name=value`, `name[sub]=value`.
void lexer::declare_argument(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (!a.options_done && t.size() >= 2 && st.shape.quoted[0] == '0' && (t[0] == '-' || t[0] == '+')) {
    if (t == "--") a.options_done = true;
    // `+i` removes an attribute: keeping it is the cautious reading. An attribute a reference
    // supplies may be any: assume integer.
    if (t[0] == '-')
      for (const char c : t.substr(1)) a.flags += (c == '\x01' || c == '\x02') ? 'i' : c;
    return;
  }
  if (has_letter(a.flags, 'f') || has_letter(a.flags, 'F')) return;  // function names
  std::string attributes = a.flags;
  if (a.command == "export" || a.command == "readonly")  // their -n un-exports; they have no -i
    std::erase_if(attributes, [](char c) { return c == 'n' || c == 'i'; });
  const auto eq = t.find('=');
  auto name_end = eq == std::string::npos ? t.size() : eq;
  if (name_end > 0 && eq != std::string::npos && t[name_end - 1] == '+') --name_end;
  const auto name = name_word(st, 0, name_end);
  if (!name.empty()) {
    if (has_letter(attributes, 'i')) learn(names_.integer, name);
    if (has_letter(attributes, 'n')) learn(names_.nameref, name);
    if (has_letter(attributes, 'A')) learn(names_.associative, name);
    if (has_letter(attributes, 'a') || has_letter(attributes, 'A')) learn(names_.arrays, name);
  }
  if (eq == std::string::npos) return;
  // `declare -a a="(…)"`: bash reads a value given to an array as a compound assignment, its
  // `$( )` included (a literal `a=(…)` was read as elements already).
  if ((has_letter(attributes, 'a') || has_letter(attributes, 'A') || names_.arrays.contains(name)) && eq + 1 < t.size())
    return code_word(st, eq + 1, a.command + " (an array's value is read as its elements)");
  const auto use = assigned_use(name, attributes);
  if (use == word_use::code) return code_word(st, eq + 1, name);
  mark_from(st, eq + 1, use);
}

// At `(` after `name=` or `name+=` (a command's prefix, or a declare argument): the elements
// of a compound assignment, `[sub]=value` or `value`.
bool lexer::compound_assignment(command_state& st, const frame& f, std::size_t limit) {
  // `eval y=(…)`: bash takes the word as written, and eval parses the expanded elements again.
  const bool evaluated = st.args.kind == command_kind::eval;
  if (!st.word_plain || !(st.word_index == 0 || st.args.kind == command_kind::declare || evaluated)) return false;
  std::string_view w = st.word;
  if (!w.ends_with('=')) return false;
  w.remove_suffix(1);
  if (w.ends_with('+')) w.remove_suffix(1);
  if (!is_identifier(w)) return false;
  const std::string flags = st.args.kind == command_kind::declare ? st.args.flags : std::string();
  const bool associative = has_letter(flags, 'A') || (!has_letter(flags, 'a') && names_.associative.contains(w));
  learn(names_.arrays, w);
  const auto use = assigned_use(w, flags);
  st.word_plain = false;
  const auto open = i_++;
  const auto evaluate = [&] {
    if (evaluated) mark_code_range({open, i_}, "eval");
    return true;
  };
  frame element = f;
  element.shape = nullptr;
  element.sink = nullptr;
  while (more(limit)) {
    if (!hole_at(i_)) {
      const char ch = s_[i_];
      if (ch == ')') {
        ++i_;
        return evaluate();
      }
      if (is_blank(ch) || ch == '\n') {
        ++i_;
        continue;
      }
      if (ch == '#') {
        comment(limit);
        continue;
      }
    }
    const auto start = i_;
    compound_element(element, use, associative, limit);
    if (i_ == start) ++i_;  // an operator bash would reject here
  }
  return evaluate();
}

void lexer::compound_element(const frame& f, word_use value_use, bool associative, std::size_t limit) {
  if (!hole_at(i_) && s_[i_] == '[' && assignment_subscript(limit)) {
    ++i_;
    arithmetic(associative ? f : arithmetic_frame(f), "]", limit);
    if (i_ < limit && s_[i_] == '+') ++i_;
    if (i_ < limit && s_[i_] == '=') ++i_;
  }
  command_state value;
  begin_word(value);
  frame v = f;
  v.arithmetic = value_use == word_use::arithmetic;
  std::vector<std::size_t> holes;
  v.sink = &holes;
  while (more(limit)) {
    if (hole_at(i_)) {
      take_hole(word_frame(value, v));
      continue;
    }
    const char ch = s_[i_];
    if (is_blank(ch) || ch == '\n' || is_meta(ch)) break;
    word_unit(value, v, limit);
  }
  if (value_use == word_use::name || value_use == word_use::code)
    for (const auto index : holes) mark(index, value_use);
}

}  // namespace arun::engine::detail

namespace arun::engine {

bool variable_runs_code(std::string_view name) { return detail::code_variable(name); }

}  // namespace arun::engine
