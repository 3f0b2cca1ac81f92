// The bash lexer (shell_lexer.hpp): code positions (docs/reference/templates.md, "Code
// positions"). Where a shell or an interpreter finds its program — a `-c` string, an `-e`
// argument, an awk or sed program, a script it reads from standard input or from `<( )` — a
// reference would become code, whatever wraps the command: `find -exec`, `xargs`, `docker exec`,
// `ionice`, a pipe, a here-string. Any word naming a shell or interpreter starts such a program,
// so the wrappers need no list; the programs do (program_rules below).
#include "shell/shell_lexer_impl.hpp"

#include <fnmatch.h>

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
  bool operands_are_data = false;       // ed: its operands are files to edit; its commands come from stdin
  std::string_view code_rest = {};      // options whose attached rest is code (perl -M'strict;…', -d:…)
};

namespace {

using enum program_type;

constexpr std::string_view shell_long_files = " rcfile init-file ";
constexpr std::string_view node_arguments =
    " require import loader experimental-loader input-type conditions env-file title inspect-port debug-port "
    "redirect-warnings stack-size max-http-header-size openssl-config icu-data-dir diagnostic-dir report-dir "
    "report-directory report-filename secure-heap secure-heap-min tls-cipher-list use-largepages watch-path ";

// Shells, then interpreters. A name not listed here (jq, a tool that reads its own language) is
// data to arun: docs/reference/templates.md says what stays the recipe author's choice.
constexpr program_rules programs[] = {
    {"bash", shell, false, "c", "oO", "", "", "", "", false, true, "", shell_long_files, shell_long_files},
    {"zsh", shell, false, "c", "oO", "", "", "", "", false, true, "", "", " emulate "},
    {"fish", shell, false, "cC", "oOd", "", "", "", "", false, true, " command init-command "},
    {"nu", shell, false, "c", "", "", "", "", "", false, true, " commands "},
    {"sh", shell, false, "c", "oO"}, {"dash", shell, false, "c", "oO"},
    {"ksh", shell, false, "c", "oO"}, {"ksh93", shell, false, "c", "oO"}, {"mksh", shell, false, "c", "oO"},
    {"lksh", shell, false, "c", "oO"}, {"oksh", shell, false, "c", "oO"}, {"pdksh", shell, false, "c", "oO"},
    {"ash", shell, false, "c", "oO"}, {"rbash", shell, false, "c", "oO", "", "", "", "", false, true, "", shell_long_files, shell_long_files},
    {"yash", shell, false, "c", "oO"}, {"posh", shell, false, "c", "oO"},
    {"csh", shell, false, "c", ""}, {"tcsh", shell, false, "c", ""}, {"rc", shell, false, "c", ""},
    {"es", shell, false, "c", ""}, {"osh", shell, false, "c", "oO"}, {"ysh", shell, false, "c", "oO"},
    {"oil", shell, false, "c", "oO"}, {"xonsh", shell, false, "c", ""}, {"hush", shell, false, "c", ""},
    {"loksh", shell, false, "c", "oO"}, {"sash", shell, false, "c", ""},
    {"elvish", shell, false, "c", ""}, {"pwsh", shell, false, "cCeE", ""}, {"powershell", shell, false, "cCeE", ""},
    {"python", interpreter, true, "c", "WX", "", "", "", "m", true, true, "", "", " check-hash-based-pycs "},
    {"pypy", interpreter, true, "c", "WX", "", "", "", "m", true, true, "", "", " check-hash-based-pycs "},
    {"ipython", interpreter, true, "c", "", "", "", "", "m", true},
    {"jython", interpreter, false, "c", "WX", "", "", "", "m", true},
    // Emacs Lisp (`(shell-command …)`): `--eval`, `-eval`, `--execute`; `-l`/`--load` a file.
    {"emacs", interpreter, false, "", "", "", "", "l", "", false, false, " eval execute ", " load "},
    {"perl", interpreter, true, "eE", "I", "DFimMVxd", "0lC", "", "", false, true, "", "", "", false, "Mmd"},
    {"ruby", interpreter, true, "e", "CEIr", "FiWxKT", "0", "", "", false, true, "", "",
     " encoding external-encoding internal-encoding enable disable dump "},
    {"node", interpreter, false, "ep", "rC", "", "", "", "", false, true, " eval print ", "", node_arguments},
    {"nodejs", interpreter, false, "ep", "rC", "", "", "", "", false, true, " eval print ", "", node_arguments},
    {"bun", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print "},
    {"php", interpreter, true, "rBRE", "cdzSt", "", "", "fF", "", false, true, " run process-begin process-code process-end "},
    {"deno", interpreter, false, "", ""},
    {"lua", interpreter, true, "e", "l"}, {"luajit", interpreter, false, "e", "l"},
    {"Rscript", interpreter, false, "e", ""}, {"R", interpreter, false, "e", "", "", "", "", "", false, true, "", " file "},
    {"julia", interpreter, false, "eE", "tpJC", "", "", "L", "", false, true, " eval print ", " load ", " threads procs project sysimage "},
    {"raku", interpreter, false, "e", "I"}, {"bb", interpreter, false, "e", ""}, {"clojure", interpreter, false, "e", ""},
    {"sbcl", interpreter, false, "", "", "", "", "", "", false, true, " eval ", " load script "},
    {"ghc", interpreter, false, "e", ""}, {"micropython", interpreter, false, "c", ""}, {"jshell", interpreter, false, "", ""},
    {"py", interpreter, false, "c", "WX", "", "", "", "m", true}, {"erl", interpreter, false, "", ""},
    {"tclsh", interpreter, true, "", ""}, {"wish", interpreter, true, "", ""},
    {"expect", interpreter, false, "c", "", "", "", "f"}, {"osascript", interpreter, false, "e", "ls"},
    {"guile", interpreter, false, "c", "Lex", "", "", "ls"}, {"racket", interpreter, false, "e", "lt", "", "", "fr"},
    {"gnuplot", interpreter, false, "e", ""}, {"octave", interpreter, false, "", "", "", "", "", "", false, true, " eval "},
    {"groovy", interpreter, false, "e", ""}, {"scala", interpreter, false, "e", ""},
    {"elixir", interpreter, false, "e", "r", "", "", "", "", false, true, " eval "},
    {"ts-node", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print "},
    {"tsx", interpreter, false, "ep", "r", "", "", "", "", false, true, " eval print "},
    // Their operands are input, but what they read there or from stdin is a program too: dc's
    // `!` and m4's `syscmd` run shell commands; ed edits its operand by commands from stdin.
    {"dc", interpreter, false, "e", "", "", "", "f", "", false, true, " expression ", " file "},
    {"m4", interpreter, false, "", "UIolt", "dD", "", "", "", false, true, "", "", "", false, "D"},  // -DNAME=VALUE: a macro
    {"ed", interpreter, false, "", "p", "", "", "", "", false, true, "", "", "", true},
    // Editors read their keystrokes, Ex commands (`:!cmd`) included, from stdin; `-c`, `+cmd`
    // and `--cmd` are Ex commands, `-S` a script file (`-s` is silent Ex mode, or a file of keystrokes).
    {"vim", interpreter, false, "c", "iTwWtqr", "", "", "Su", "", false, true, " cmd ", "", "", true},
    {"vi", interpreter, false, "c", "iTwWtqr", "", "", "Su", "", false, true, " cmd ", "", "", true},
    {"nvim", interpreter, false, "c", "iwWtqr", "", "", "Su", "", false, true, " cmd ", "", "", true},
    {"ex", interpreter, false, "c", "iTwWtqr", "", "", "Su", "", false, true, " cmd ", "", "", true},
    {"view", interpreter, false, "c", "iTwWtqr", "", "", "Su", "", false, true, " cmd ", "", "", true},
    // at and batch read a shell script from stdin or -f; crontab a crontab (its commands).
    {"at", interpreter, false, "", "qt", "", "", "f", "", false, true, "", "", "", true},
    {"batch", interpreter, false, "", "qt", "", "", "f", "", false, true, "", "", "", true},
    {"crontab", interpreter, false, "", "uTs"},
    // make runs recipes and `$(shell …)`: its makefile is code (`-f -` reads it from stdin).
    {"make", interpreter, false, "", "CIjloW", "", "", "f", "", false, false, " eval ", " file makefile ",
     " directory include-dir jobs load-average old-file what-if assume-old assume-new new-file "},
    {"gmake", interpreter, false, "", "CIjloW", "", "", "f", "", false, false, " eval ", " file makefile ",
     " directory include-dir jobs load-average old-file what-if assume-old assume-new new-file "},
    {"cmake", interpreter, false, "", "SBGTACDU", "", "", "P", "", false, false},
    {"awk", awk, false, "e", "vFilW", "dDpoL", "", "fE", "", false, false, " source ", " file exec ", " assign field-separator include load "},
    {"gawk", awk, false, "e", "vFilW", "dDpoL", "", "fE", "", false, false, " source ", " file exec ", " assign field-separator include load "},
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
    // `bash5`, `zsh-5.9`, `python3.12`: a version after the name.
    const auto version = [](std::string_view v) {
      if (v.starts_with('-')) v.remove_prefix(1);
      return !v.empty() && v[0] >= '0' && v[0] <= '9' && std::all_of(v.begin(), v.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
    };
    if (tail.empty() || ((p.versioned || p.type == shell) && version(tail)) || (p.name == "python" && (tail == "w" || version(tail))))
      return &p;
  }
  return nullptr;
}

bool listed(std::string_view list, std::string_view name) {
  return !name.empty() && list.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// GNU getopt_long takes any unambiguous abbreviation (`sed --e=…`, `gawk --sourc …`).
bool abbreviates(std::string_view list, std::string_view name) {
  return !name.empty() && list.find(" " + std::string(name)) != std::string_view::npos;
}

enum class long_option { none, code, file, argument };

// What a long option of a program takes: an exact name first, then an abbreviation, taken as
// code when it could stand for a code option.
long_option long_option_of(const program_rules& p, std::string_view name) {
  if (listed(p.long_code, name)) return long_option::code;
  if (listed(p.long_file, name)) return long_option::file;
  if (listed(p.long_argument, name)) return long_option::argument;
  if (abbreviates(p.long_code, name)) return long_option::code;
  if (abbreviates(p.long_file, name)) return long_option::file;
  if (abbreviates(p.long_argument, name)) return long_option::argument;
  return long_option::none;
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

bool has_any(std::string_view flags, std::string_view letters) {
  return std::any_of(letters.begin(), letters.end(), [&](char c) { return has_letter(flags, c); });
}

// A path's components as the kernel resolves them by name: `.` and empty ones dropped, `..`
// taking one back.
std::vector<std::string_view> path_parts(std::string_view path) {
  std::vector<std::string_view> parts;
  for (std::size_t from = 0; from <= path.size();) {
    const auto end = std::min(path.find('/', from), path.size());
    const auto part = path.substr(from, end - from);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    from = end + 1;
  }
  return parts;
}

// The descriptor a path names as a file: `/dev/stdin` 0, `/dev/fd/3` 3, `/proc/self/fd/4` 4;
// -2 when an expansion gives the number (`/dev/fd/$fd`), -1 for any other path.
// The path is read as bash hands it on, spelt any way (`//dev/stdin`, `/dev/./fd//3`,
// `../../dev/stdin`): by its last components.
int names_descriptor(std::string_view path) {
  if (path == "-") return 0;
  const auto parts = path_parts(path);
  const auto n = parts.size();
  if (n >= 2 && parts[n - 2] == "dev" && parts[n - 1] == "stdin") return 0;
  const bool fd_dir = n >= 3 && parts[n - 2] == "fd" && (parts[n - 3] == "dev" || (n >= 4 && parts[n - 4] == "proc"));
  if (!fd_dir) return -1;
  const auto digits = parts[n - 1];
  if (digits.find_first_of("\x01\x02") != std::string_view::npos) return -2;
  if (!descriptor_number(digits)) return -1;
  return std::stoi(std::string(digits));
}

// Options whose argument is a program to run, its arguments coming later in the command line.
bool names_program_option(std::string_view option) {
  for (std::string_view n : {"--entrypoint", "--exec", "--startas", "--interpreter", "--program"})
    if (option == n) return true;
  return false;
}

// Package managers: after an install-like subcommand their words name packages, not programs
// (`conda install python -c conda-forge`); `conda run`, `uv run`, `npm exec` run them.
bool package_manager(std::string_view command) {
  for (std::string_view n : {"conda", "mamba", "micromamba", "pip", "pip3", "pipx", "uv", "poetry", "apt", "apt-get", "aptitude",
                             "yum", "dnf", "zypper", "pacman", "apk", "brew", "port", "nix-env", "npm", "yarn", "pnpm", "gem",
                             "snap", "flatpak", "choco", "winget", "scoop", "spack", "guix", "cargo"})
    if (command == n) return true;
  return false;
}

bool runs_subcommand(std::string_view word) {
  for (std::string_view n : {"run", "exec", "x", "dlx", "shell", "sh", "env"})
    if (word == n) return true;
  return false;
}

// `-c 'ProxyCommand …'` keys of ssh options and git configuration whose values a shell runs.
bool command_key(std::string key, bool git) {
  for (auto& c : key) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (!git) return key == "proxycommand" || key == "localcommand" || key == "knownhostscommand" || key == "remotecommand";
  for (std::string_view k : {"core.sshcommand", "core.editor", "core.pager", "core.fsmonitor", "core.askpass", "diff.external",
                             "sequence.editor", "credential.helper", "gpg.program", "gpg.ssh.program", "gpg.x509.program",
                             "core.gitproxy"})
    if (key == k) return true;
  for (std::string_view prefix : {"alias.", "pager."})
    if (key.starts_with(prefix)) return true;
  for (std::string_view suffix : {".textconv", ".cmd", ".clean", ".smudge", ".process", ".command", ".helper", ".program"})
    if (key.ends_with(suffix)) return true;
  return false;
}

int operands_before_shell(std::string_view command);

// Commands other_argument reads by rules of their own.
bool own_rules(std::string_view command) {
  return package_manager(command) || operands_before_shell(command) >= 0 || command == "git" || command == "scp" ||
         command == "sftp" || command == "rsync" || command == "vagrant";
}

// chroot DIR, unshare, nsenter: with no command they start the user's shell, which reads stdin.
int operands_before_shell(std::string_view command) {
  if (command == "chroot") return 1;
  if (command == "unshare" || command == "nsenter") return 0;
  return -1;
}
std::string_view alone_shell_arguments(std::string_view command) { return command == "nsenter" ? "tSGw" : command == "unshare" ? "RwSG" : ""; }

// Commands that run the command their words name (start_runner).
constexpr std::string_view runner_names[] = {"parallel", "ssh", "su", "runuser", "flock", "script", "watch", "env", "nice",
                                             "timeout", "stdbuf", "sudo", "doas", "xargs", "nohup", "setsid"};

// A word's shape as an fnmatch pattern: quoted characters escaped, a reference's or an
// expansion's text matching anything.
std::string shape_pattern(const word_shape& w) {
  std::string out;
  for (std::size_t k = 0; k < w.text.size(); ++k) {
    const char c = w.text[k];
    if (c == '\x01' || c == '\x02') {
      out += '*';
    } else {
      if (w.quoted[k] == '1' && std::string_view("*?[]{},.\\").find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out;
}

// Bash's brace expansion of a pattern (`{sh,-c,x}` → sh, -c, x; `{1..3}` → *), at most 64 words.
void expand_braces(const std::string& s, std::vector<std::string>& out, int depth = 0) {
  if (out.size() >= 64 || depth > 8) return out.push_back("*");  // too many to know: anything (fail closed)
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] != '{') continue;
    std::vector<std::size_t> commas;
    bool sequence = false;
    int level = 0;
    std::size_t j = i;
    for (; j < s.size(); ++j) {
      if (s[j] == '\\') {
        ++j;
        continue;
      }
      if (s[j] == '{') ++level;
      if (s[j] == '}' && --level == 0) break;
      if (level == 1 && s[j] == ',') commas.push_back(j);
      if (level == 1 && s[j] == '.' && j + 1 < s.size() && s[j + 1] == '.') sequence = true;
    }
    if (j >= s.size()) break;
    if (commas.empty() && !sequence) continue;  // `{}`, `{x}`: literal
    const auto prefix = s.substr(0, i), suffix = s.substr(j + 1);
    if (commas.empty()) return expand_braces(prefix + "*" + suffix, out, depth + 1);
    commas.push_back(j);
    for (std::size_t from = i + 1; const auto to : commas) {
      expand_braces(prefix + s.substr(from, to - from) + suffix, out, depth + 1);
      from = to + 1;
    }
    return;
  }
  out.push_back(s);
}

bool is_glob(std::string_view pattern) {
  const auto last_close = pattern.rfind(']');
  for (std::size_t k = 0; k < pattern.size(); ++k) {
    if (pattern[k] == '\\') {
      ++k;
      continue;
    }
    if (pattern[k] == '*' || pattern[k] == '?') return true;
    if (pattern[k] == '[' && last_close != std::string_view::npos && last_close >= k + 2) return true;
  }
  return false;
}

// Whether a word (a pattern after brace expansion) may name a shell, an interpreter or a
// command that runs others: `/bin/[s]h`, `*sh`, `pytho?3`. A glob with no literal character
// in its last component (`*`, `dir/*`) names whatever files lie there, not a program.
bool pattern_names_program(std::string_view pattern) {
  const auto name = command_name(pattern);
  if (!is_glob(name)) {
    std::string plain;
    for (std::size_t k = 0; k < name.size(); ++k) plain += name[k] == '\\' && k + 1 < name.size() ? name[++k] : name[k];
    return program_named(plain) || std::find(std::begin(runner_names), std::end(runner_names), plain) != std::end(runner_names);
  }
  if (std::all_of(name.begin(), name.end(), [](char c) { return c == '*' || c == '?'; })) return false;
  const std::string glob(name);
  const auto matches = [&](std::string_view candidate) { return ::fnmatch(glob.c_str(), std::string(candidate).c_str(), 0) == 0; };
  for (const auto& p : programs)
    if (matches(p.name) || (p.versioned && (matches(std::string(p.name) + "3") || matches(std::string(p.name) + "5"))))
      return true;
  return std::any_of(std::begin(runner_names), std::end(runner_names), matches);
}

// Offsets `(open, close)` of the word's unquoted brace expansions (`{a,b}`, `{1..3}`).
std::vector<std::pair<std::size_t, std::size_t>> brace_groups(const word_shape& w) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const auto& t = w.text;
  const auto plain = [&](std::size_t k, char c) { return t[k] == c && w.quoted[k] == '0'; };
  std::vector<std::pair<std::size_t, bool>> open;  // one pass: each `{` and whether it holds a list yet
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (plain(k, '{')) {
      open.emplace_back(k, false);
    } else if (plain(k, '}') && !open.empty()) {
      if (open.back().second) out.emplace_back(open.back().first, k);
      open.pop_back();
    } else if (!open.empty() && (plain(k, ',') || (plain(k, '.') && k + 1 < t.size() && plain(k + 1, '.')))) {
      open.back().second = true;
    }
  }
  return out;
}

}  // namespace

// `{sh,-c,…}`, `/bin/[s]h`, `{ba,}sh`; a reference's text may be anything, so `{{{x}},-c}` too.
bool expands_to_program(const word_shape& w) {
  const auto pattern = shape_pattern(w);
  const bool braces = !brace_groups(w).empty();
  if (!braces && !is_glob(pattern)) return false;
  std::vector<std::string> words;
  expand_braces(pattern, words);
  return std::any_of(words.begin(), words.end(), [&](const std::string& x) { return pattern_names_program(x) || (braces && x == "*"); });
}

namespace {

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

// A program word's text names shells or interpreters (`env -S 'sh -c'`, `parallel 'sh -c'`).
bool names_program_in(std::string_view text) {
  for (std::size_t from = 0; from < text.size();) {
    const auto end = std::min(text.find_first_of(" \t\n;|&()", from), text.size());
    std::string word(text.substr(from, end - from));
    std::erase_if(word, [](char c) { return c == '\'' || c == '"'; });
    if (!word.empty() && (word.find_first_of("\x01\x02") != std::string::npos || pattern_names_program(word))) return true;
    from = end + 1;
  }
  return false;
}

// `/proc/self/exe`, `/proc/thread-self/exe`, `/proc/PID/exe`, `/proc/self/task/TID/exe`,
// spelt any way (`//proc/./self/exe`): in the process bash forks to run a command, that is
// bash itself, so `/proc/self/exe -c …` is `bash -c …`.
std::string_view command_name(std::string_view word) {
  const auto parts = path_parts(word);
  const auto n = parts.size();
  if (n >= 3 && word.starts_with('/') && parts[0] == "proc" && parts[n - 1] == "exe") return "bash";
  const auto slash = word.rfind('/');
  return slash == std::string_view::npos ? word : word.substr(slash + 1);
}

int descriptor_named(std::string_view path) { return names_descriptor(path); }

namespace {
// The oracle lexes a short command line of its own; a command line naming another in turn
// (an alias of `parallel 'ssh h …'`) is bounded.
thread_local int oracle_depth = 0;

bool hole_is_code(const std::string& text, std::vector<text_range> holes) {
  if (oracle_depth >= 4) return true;
  ++oracle_depth;
  const auto r = lex_shell(text, holes);
  --oracle_depth;
  return std::any_of(r.positions.begin(), r.positions.end(), [](const shell_position& p) { return p.code || p.quoting == shell_quoting::unknown; });
}
}  // namespace

bool appended_is_code(std::string_view command_line) {
  if (command_line.find_first_of("\x01\x02") != std::string_view::npos) return true;  // not known: may be anything
  // `{}`, `{.}`, `{1}`: GNU parallel puts the argument there; else it is appended.
  std::string text;
  std::vector<text_range> holes;
  for (std::size_t k = 0; k < command_line.size();) {
    const auto close = command_line.find('}', k);
    if (command_line[k] == '{' && close != std::string_view::npos && close - k <= 8 &&
        command_line.substr(k + 1, close - k - 1).find_first_of(" {") == std::string_view::npos) {
      holes.push_back({text.size(), text.size() + 1});
      text += 'X';
      k = close + 1;
    } else {
      text += command_line[k++];
    }
  }
  if (holes.empty()) {
    text += " X";
    holes.push_back({text.size() - 1, text.size()});
  }
  return hole_is_code(text, holes);
}

bool stdin_is_code(std::string_view command_line) {
  if (command_line.find_first_of("\x01\x02") != std::string_view::npos) return names_program_in(command_line);
  // Every command of the line shares its stdin (`cd /x && bash -s`): a group fed a here-string.
  const std::string text = "{ " + std::string(command_line) + "\n} <<< X";
  return hole_is_code(text, {{text.size() - 1, text.size()}});
}

namespace {

// The descriptors other than 0 a command line reads a program from (`bash -c 'source
// /dev/fd/3' 3<<< …`): each of 3 to 9 fed a here-string, asked which of them is code.
std::vector<int> script_fds_of(std::string_view command_line) {
  if (command_line.find_first_of("\x01\x02") != std::string_view::npos) return {};
  std::string text = "{ " + std::string(command_line) + "\n}";
  std::vector<text_range> holes;
  for (int fd = 3; fd <= 9; ++fd) {
    text += " " + std::to_string(fd) + "<<< X";
    holes.push_back({text.size() - 1, text.size()});
  }
  if (oracle_depth >= 4) return {};
  ++oracle_depth;
  const auto r = lex_shell(text, holes);
  --oracle_depth;
  std::vector<int> fds;
  for (std::size_t k = 0; k < r.positions.size() && k < holes.size(); ++k)
    if (r.positions[k].code) fds.push_back(static_cast<int>(k) + 3);
  return fds;
}

}  // namespace

bool lexer::script_fd(int fd) const {
  if (fd == -2) return names_.any_script_fd || !names_.script_fds.empty();
  return fd > 0 && (names_.any_script_fd || names_.script_fds.contains(fd));
}

// A path a shell or interpreter reads its program from (`bash /dev/fd/3`, `awk -f -`,
// `BASH_ENV=/dev/stdin`): its standard input, or a descriptor whose redirections are code.
void lexer::script_source(command_state& st, std::string_view path) {
  const int fd = names_descriptor(path);
  if (fd == 0) st.stdin_is_script = true;
  learn_script_fd(fd);
}

void lexer::learn_script_fd(int fd) {
  if (fd == -2 && !names_.any_script_fd) {
    names_.any_script_fd = true;
    learned_ = true;
  }
  if (fd > 0 && names_.script_fds.insert(fd).second) learned_ = true;
}

// Text a redirection feeds: a command's standard input, or a descriptor a program reads its
// script from.
void lexer::redirected_text(command_state& st, text_range r) {
  if (st.redirect_into == 0)
    st.stdin_text.push_back(r);
  else if (script_fd(st.redirect_into))
    mark_code_range(r, "a script read from /dev/fd/" + (st.redirect_into > 0 ? std::to_string(st.redirect_into) : std::string("N")));
}

std::string lexer::many_words_runner(const command_state& st) const {
  if (st.args.kind == command_kind::program) return st.args.command + " " + st.args.code_option;
  return st.args.command + " (it may expand to a shell and its -c)";
}

// `python3 -m timeit STMT…`: the module runs its arguments as Python.
void lexer::module_named(command_state& st, std::string_view module) {
  if (module != "timeit") return;
  st.args.splits = true;
  st.args.code_option = "-m timeit";
}

// ssh's remote command: a shell or interpreter there reads the local stdin as its program
// (`ssh HOST bash -s <<EOF`).
void lexer::remote_words(command_state& st) {
  auto& line = st.args.command_line;
  line += (line.empty() ? "" : " ") + st.shape.text;
  st.args.runs_program = stdin_is_code(line);
}

// `--command=CODE`, `--command CODE` and their abbreviations (`su --c`, `flock --com`).
bool lexer::long_code_option(command_state& st, std::string_view names, std::string_view runner) {
  const auto& t = st.shape.text;
  if (!t.starts_with("--") || t.size() < 3) return false;
  const auto eq = t.find('=');
  const auto name = std::string_view(t).substr(2, (eq == std::string::npos ? t.size() : eq) - 2);
  if (!abbreviates(names, name)) return false;
  if (eq != std::string::npos)
    code_word(st, eq + 1, runner);
  else
    st.args.option = 'c';
  return true;
}

// `KEY=VALUE` from `from` on: the value is code when KEY names a command (ssh -o
// ProxyCommand=…, git -c core.sshCommand=…).
void lexer::key_value_code(command_state& st, std::size_t from, std::string_view runner) {
  const auto& t = st.shape.text;
  const bool git = st.args.command == "git";
  auto end = t.find_first_of(git ? "=" : "= \t", from);
  if (end == std::string::npos) end = t.size();
  const auto key = t.substr(from, end - from);
  if (key.find_first_of("\x01\x02") != std::string::npos || command_key(key, git)) code_word(st, from, std::string(runner) + " " + key);
}

// An argument of a command arun has no table for: what it may start (nested_command has run).
void lexer::other_argument(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  const bool option = t.size() > 1 && t[0] == '-';
  if (const char pending = std::exchange(a.option, 0)) {  // an option's argument
    if (pending == 'o' || pending == 'c') key_value_code(st, 0, a.command + " -" + pending);
    if (pending == 'e') code_word(st, 0, a.command + " -e");
    a.last_word = t;
    return;
  }
  if ((a.command == "scp" || a.command == "sftp") && t.starts_with("-o")) {
    if (t.size() > 2) key_value_code(st, 2, a.command + " -o"); else a.option = 'o';
  } else if (a.command == "git" && t.starts_with("-c") && a.operands == 0) {
    if (t.size() > 2) key_value_code(st, 2, "git -c"); else a.option = 'c';
  } else if (a.command == "vagrant" && (t == "-c" || t.starts_with("--command"))) {  // vagrant ssh -c CMD
    a.flags += 'c';
    if (const auto eq = t.find('='); eq != std::string::npos) code_word(st, eq + 1, "vagrant ssh -c"); else a.option = 'e';
  } else if (a.command == "vagrant" && t == "ssh" && a.operands == 0) {  // without -c, a remote shell reading stdin
    a.flags += 's';
  } else if (a.command == "rsync" && t.starts_with("--rsh")) {
    if (const auto eq = t.find('='); eq != std::string::npos) code_word(st, eq + 1, "rsync --rsh"); else a.option = 'e';
  } else if (a.command == "rsync" && option && t[1] != '-') {
    // `-e CMD`, `-eCMD`, `-avze CMD`: in a cluster, the first option taking an argument takes the rest.
    for (std::size_t k = 1; k < t.size() && t[k] != '\x01' && t[k] != '\x02'; ++k) {
      if (t[k] == 'e') {
        if (k + 1 < t.size()) code_word(st, k + 1, "rsync -e"); else a.option = 'e';
        break;
      }
      if (has_letter("BfMT", t[k])) break;
    }
  } else if (a.command == "function" && a.operands == 0) {
    st.function_name = t;
    st.function_depth = st.groups.size();
  } else if (const int alone = operands_before_shell(a.command); alone >= 0 && option) {
    if (t.size() == 2 && has_letter(alone_shell_arguments(a.command), t[1])) a.option = 'a';
  } else if (package_manager(a.command) && !option && a.operands == 0) {
    a.package_words = !runs_subcommand(t);
  }
  if (!option) ++a.operands;
  a.last_word = t;
}

// `{sh,-c,{{x}}}`: a reference inside a brace expansion that starts a program is a word of
// its own, which may be the program's code.
void lexer::brace_references(command_state& st) {
  const std::string runner = "a brace expansion naming a shell or interpreter (" + st.args.command + ")";
  const auto& t = st.shape.text;
  for (const auto& [open, close] : brace_groups(st.shape)) {
    for (const auto& [index, offset] : st.shape.holes)
      if (offset > open && offset < close) mark_code(index, runner);
    // `{sh,-c,"$(printf %s {{x}})"}`: the references inside its expansions too.
    if (std::find(t.begin() + static_cast<std::ptrdiff_t>(open), t.begin() + static_cast<std::ptrdiff_t>(close), '\x02') !=
        t.begin() + static_cast<std::ptrdiff_t>(close))
      for (const auto index : word_references(st, t.size() + 1)) mark_code(index, runner);
  }
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
  learn_positional_use(st, false);
  // `eval "$(cat)"`: a substitution in the code reads the command's stdin.
  if (st.shape.text.find('\x02', from) != std::string::npos) st.code_from_substitution = true;
  auto refs = word_references(st, from);
  auto& a = st.args;
  if (a.program && a.program->type == sed) {  // code unless `--sandbox`, which may come later
    a.sed_script.insert(a.sed_script.end(), refs.begin(), refs.end());
    return;
  }
  for (const auto index : refs) mark_code(index, runner);
}

// A script file operand: a process substitution there (`bash <(…)`, `source <(…)`) is code.
void lexer::script_word(command_state& st, std::string_view runner, std::size_t from) {
  for (const auto& r : st.word_substitutions) mark_code_range(r, std::string(runner) + " <( )");
  if (!st.word_substitutions.empty()) st.code_from_substitution = true;  // `source <(cat)` reads stdin
  script_source(st, std::string_view(st.shape.text).substr(std::min(from, st.shape.text.size())));  // `--file=-`, `-f-`
}

// The word names a shell or interpreter: what follows are its arguments.
bool lexer::start_program(command_state& st, std::string_view name, bool detached) {
  const auto* p = program_named(command_name(name));
  if (!p) return false;
  std::string command(command_name(name));  // `name` may be the current command's own text
  st.args = command_args{};
  st.args.kind = command_kind::program;
  st.args.command = std::move(command);
  st.args.program = p;
  st.args.detached = detached;
  if (p->name == "make" || p->name == "gmake")  // its environment is make variables: `CC={{x}} make`
    for (const auto index : st.environment_holes) mark_code(index, "make (a variable in its environment is make code: $(shell …))");
  return true;
}

// `taskset 1 env -S …`, `ionice parallel …`: a program that runs its arguments, standing as an
// argument of another, is read as if it were the command (builtins cannot stand there).
bool lexer::start_runner(command_state& st, std::string_view word) {
  const std::string name(command_name(word));  // `word` may be the current command's own text
  const auto kind = kind_of(name);
  const bool runner = kind == command_kind::parallel || kind == command_kind::remote ||
                      kind == command_kind::runs_option || kind == command_kind::runs_all ||
                      (kind == command_kind::wrapper && name != "builtin" && name != "command" && name != "exec");
  if (!runner) return false;
  st.args = command_args{};
  st.args.command = name;
  st.args.kind = kind;
  if (kind == command_kind::wrapper) st.command_again = true;  // its next word is a command word
  if (name == "xargs") st.appends_input = true;
  return true;
}

// An argument of another command that starts a program: `find -exec sh -c`, `ionice -c3
// python3 -c`, `docker exec c sh -c`, `xargs -0 perl -e`, `setpriv -- "$SHELL" -c`.
bool lexer::nested_command(command_state& st) {
  auto& a = st.args;
  const auto& t = st.shape.text;
  if (!(a.kind == command_kind::other || a.kind == command_kind::runs_option) || a.option || searches_text(a.command) ||
      a.package_words || a.last_word == "-s" || a.last_word == "--shell" ||  // `useradd -s /bin/bash -c …`: a login shell
      a.command == "vagrant" ||                                                // `vagrant ssh -c`: a subcommand, not ssh
      (a.command == "flock" && a.operands == 0))                               // `flock "$D/lock" …`: the lock file
    return false;
  // `docker run --entrypoint sh img -c …`, `--entrypoint=sh`: a program as an option's
  // argument; where its own arguments start is the outer command's business.
  const bool after_option = names_program_option(a.last_word);
  if (const auto eq = t.find('='); eq != std::string::npos && names_program_option(std::string_view(t).substr(0, eq)) &&
                                   t.find_first_of("\x01\x02") == std::string::npos)
    return start_program(st, std::string_view(t).substr(eq + 1), true);
  if (t.starts_with('-')) return false;  // an option (`--shell=/bin/zsh`), never a program
  if (own_rules(t)) {  // `ionice conda install python -c …`, `taskset 1 chroot /srv`: its words are its own
    a = command_args{};
    a.command = t;
    return true;
  }
  if (expands_to_program(st.shape)) {  // `find -exec /bin/[s]h -c …`, `ionice {sh,-c,…}`
    a = command_args{};
    a.kind = command_kind::unknown;
    a.nested = a.splits = true;
    a.command = std::string(s_.substr(st.word_begin, std::min<std::size_t>(i_ - st.word_begin, 40)));
    brace_references(st);
    return true;
  }
  if (t.find_first_of("\x01\x02") == std::string::npos) return start_program(st, t, after_option) || start_runner(st, t);
  if (t.empty() || t[0] != '\x02' || !(s_[st.word_begin] == '$' || s_[st.word_begin] == '"')) return false;
  a = command_args{};  // an expansion may name a shell too
  a.kind = command_kind::unknown;
  a.nested = true;
  a.command = std::string(s_.substr(st.word_begin, std::min<std::size_t>(i_ - st.word_begin, 40)));
  return true;
}

// In a function's body, `bash -c "$1"`, `eval "$*"`: its callers' arguments are code;
// `bash "$@"`, `python3 "$@"`: its callers' arguments are that program's (`run -c …`).
void lexer::learn_positional_use(command_state& st, bool arguments) {
  if (!st.shape.positional || !in_function(st)) return;
  if (!arguments)
    learn(names_.code_commands, st.function_name);
  else if (names_.function_programs.emplace(st.function_name, st.args.command).second)
    learned_ = true;
}

void lexer::program_argument(command_state& st) {
  auto& a = st.args;
  if (a.program && !a.options_done && a.option == 0) learn_positional_use(st, true);
  if (a.splits) return code_word(st, 0, many_words_runner(st));
  if (const char pending = std::exchange(a.option, 0)) {
    // `node -p -e CODE`: an option that takes code, given another one, is a flag; the code is
    // the second one's.
    const auto& t = st.shape.text;
    const auto long_code = [&] {
      if (!t.starts_with("--")) return false;
      const auto eq = t.find('=');
      const auto name = std::string_view(t).substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      return long_option_of(*a.program, name) == long_option::code;
    };
    if (pending == code_next && a.program && a.program->type == interpreter &&
        ((t.size() == 2 && t[0] == '-' && has_letter(a.program->code, t[1])) || long_code())) {
      program_option(st);
      return;
    }
    if (pending == code_next) code_word(st, 0, a.command + " " + a.code_option);
    if (pending == file_next) script_word(st, a.command);
    if (pending == data_next && a.ended) module_named(st, st.shape.text);
    return;
  }
  if (!a.options_done && program_option(st)) {
    a.after_option = true;
    return;
  }
  program_operand(st);
  a.after_option = false;
}

// `-c`, `-ne`, `-e'code'`, `--eval=code`, `--`: true when the word is options.
bool lexer::program_option(command_state& st) {
  auto& a = st.args;
  const auto* p = a.program;  // null: a command named by an expansion
  const auto& t = st.shape.text;
  const bool is_shell = p && p->type == shell;
  // Quotes do not hide an option: the program receives `-c` either way.
  if (p && p->operands_are_data && t.size() >= 2 && t[0] == '+' && p->type == interpreter && !p->code.empty()) {
    code_word(st, 1, a.command + " +");  // `vim +cmd`: an Ex command
    return true;
  }
  if (t.size() < 2 || !(t[0] == '-' || (t[0] == '+' && is_shell))) return false;
  // Single-dash long options: `erl -noshell -eval CODE`, `emacs -batch -eval CODE`.
  if (p && (p->name == "erl" || (p->name == "emacs" && t[1] != '-'))) {
    if (t == "-eval" || (p->name == "emacs" && t == "-execute")) {
      a.code_given = true;
      a.code_option = t;
      a.option = code_next;
    }
    return true;
  }
  if (t == "--") {
    a.options_done = !a.detached;  // after `--entrypoint sh`, `--` may be the outer command's
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
    // A program named by an expansion may take code in a long option too (`"$X" --command …`).
    const auto kind = p ? long_option_of(*p, name)
                        : abbreviates(" command eval execute expression source ", name) ? long_option::code : long_option::none;
    if (kind == long_option::code) {
      code_option(eq == std::string::npos ? t.size() : eq, arg);
    } else if (kind == long_option::file) {
      a.from_file = !is_shell;  // `bash --rcfile F` still reads its program from stdin
      if (eq == std::string::npos) a.option = file_next; else script_word(st, a.command, eq + 1);
    } else if (kind == long_option::argument && eq == std::string::npos) {
      a.option = data_next;
    } else if (name == "sandbox" && a.operands == 0) {  // after an operand, POSIXLY_CORRECT makes it a file
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
      if (has_letter("ceE", c)) {
        code_option(k + 1, k + 1);  // perl's `-eCODE`
        // ... or a shell's cluster, `"$SHELL" -ec CODE`: its code is the next word.
        const auto rest = std::string_view(t).substr(k + 1);
        if (!rest.empty() && has_letter("ceE", rest.back()) &&
            std::all_of(rest.begin(), rest.end(), [](char r) { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'); }))
          a.option = code_next;
        return true;
      }
      continue;
    }
    if (is_shell) {
      if (has_letter(p->code, c)) {
        a.code_given = true;
        if (a.operands > 0 && !more) a.option = code_next;  // `--entrypoint sh img -c CODE`
      }
      if (has_letter(p->argument, c)) {
        if (!more) a.option = data_next;
        return true;
      }
      continue;
    }
    if (has_letter(p->code, c)) {
      if (more && has_letter(p->code, t[k + 1])) continue;  // node -pe CODE
      code_option(k + 1, k + 1);
      if (p->code_ends_options && !more) a.options_done = true;
      return true;
    }
    if (has_letter(p->file, c)) {
      a.from_file = true;
      if (more) script_word(st, a.command, k + 1); else a.option = file_next;
      return true;
    }
    if (has_letter(p->ends, c)) {
      a.ended = a.options_done = true;
      if (!more) a.option = data_next; else module_named(st, t.substr(k + 1));
      return true;
    }
    if (has_letter(p->argument, c)) {
      if (!more) a.option = data_next;
      return true;
    }
    if (has_letter(p->rest, c)) {
      if (has_letter(p->code_rest, c)) {  // perl -M'strict;system…', m4 -D NAME=VALUE
        a.code_option = std::string("-") + c;
        // perl's -M, -m and -d take theirs attached only (`perl -M strict` is an error, `-d` a
        // debugger): the next word is an option again (`perl -d -e CODE`).
        if (more) code_word(st, k + 1, a.command + " -" + c); else if (p->name != "perl") a.option = code_next;
      }
      return true;
    }
    if (has_letter(p->digits, c))
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
  // A program named by an expansion may be a shell whose option takes this word
  // (`"$SHELL" -o pipefail -c CODE`): arun cannot tell that argument from an operand.
  a.options_done = !a.detached && (p || !a.after_option);
  if (first && p && p->name == "deno" && t == "eval") {  // deno eval CODE
    a.code_given = true;
    a.code_option = "eval";
    a.option = code_next;
    return;
  }
  if (first && p && p->type == shell && has_any(a.flags, p->code)) {
    code_word(st, 0, a.command + " -c");
    if (stdin_is_code(t)) st.stdin_is_script = true;  // `bash -c 'cd /x && sh' <<< …`
    for (const int fd : script_fds_of(t)) learn_script_fd(fd);  // `bash -c 'source /dev/fd/3' 3<<< …`
    return;
  }
  if (p && (p->name == "make" || p->name == "gmake") && t.find('=') != std::string::npos) {
    code_word(st, 0, a.command + " (a variable given on its command line is make code: $(shell …))");
    return;
  }
  if (first && st.shape.many_words) a.first_may_vanish = true;  // `bash "$@"` with no arguments reads stdin
  if (first && p && !a.code_given && !a.ended) {
    script_word(st, a.command);
    return;
  }
  if (literal && !(p && p->operands_are_data)) start_program(st, t);  // `bash script.sh python3 -c …`: the script may run it
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
  if (t == "::::" || t == "::::+") a.flags += ':';
  if (a.separated) {
    if (has_letter(a.flags, ':')) st.keep_argument_inputs();
    if (a.operands == 0) code_word(st, 0, "parallel (its arguments are its commands)");
    if (a.runs_program) code_word(st, 0, "parallel (it appends its arguments to a shell's or interpreter's code)");
    return;
  }
  if (const char pending = std::exchange(a.option, 0)) {
    if (pending == 'a') st.keep_argument_inputs();
    return;
  }
  if (!a.options_done && t.size() >= 2 && st.shape.quoted[0] == '0' && t[0] == '-') {
    if (t.size() == 2 && has_letter("adEIjLnNPSsC", t[1])) a.option = t[1];
    return;
  }
  a.options_done = true;
  ++a.operands;
  // Its arguments and input lines are appended to the command: code when it starts a shell
  // or an interpreter (`parallel sh -c ::: …`, `… | parallel python3 -c`).
  a.command_line += (a.command_line.empty() ? "" : " ") + t;
  a.runs_program = appended_is_code(a.command_line) || stdin_is_code(a.command_line);
  code_word(st, 0, "parallel");
}

// xargs appends its input's words to the command: code when the command still waits for its
// program (`xargs sh -c`, `xargs python3 -c`, `xargs awk`).
bool lexer::awaits_code(const command_state& st) const {
  const auto& a = st.args;
  switch (a.kind) {
    case command_kind::program:
      if (a.option == code_next) return true;
      if (a.program->type == shell) return has_any(a.flags, a.program->code) && a.operands == 0;
      return (a.program->type == awk || a.program->type == sed) && !a.code_given && !a.from_file;
    case command_kind::unknown: return a.option == code_next || a.splits;
    case command_kind::runs_option: return a.option == 'c';
    case command_kind::remote:
    case command_kind::runs_all: return true;
    case command_kind::parallel: return a.operands == 0 || a.runs_program;
    case command_kind::wrapper: return a.command != "xargs";  // `xargs env`: the input is the whole command
    default: return false;
  }
}

bool lexer::reads_code_from_stdin(const command_state& st) const {
  const auto& a = st.args;
  if (st.code_from_substitution) return true;  // runs in this shell, on its stdin
  // Under xargs the command's stdin is not the text: its input lines become arguments.
  if (st.replaces_input || st.appends_input) return (st.replaces_input && st.code_seen) || (st.appends_input && awaits_code(st));
  if (st.stdin_is_script || a.feeds_code) return true;
  switch (a.kind) {
    case command_kind::program:
      if (!a.program->reads_stdin || a.code_given || a.from_file || a.ended) return false;
      if (a.program->name == "crontab" && has_any(a.flags, "lre")) return false;  // lists, removes, edits
      return a.operands == 0 || (a.operands == 1 && a.first_may_vanish) || a.program->operands_are_data || names_stdin(a.first_operand) ||
             (a.program->type == shell && has_letter(a.flags, 's'));
    case command_kind::unknown: return a.splits || (!a.nested && a.operands == 0 && a.flags.empty());
    case command_kind::source: return names_stdin(a.first_operand);
    case command_kind::remote: return a.operands <= 1 || a.runs_program;  // `ssh HOST`: the remote shell reads stdin
    case command_kind::wrapper: return (a.command == "sudo" || a.command == "doas") && has_any(a.flags, "si");  // `sudo -s`
    case command_kind::other:
      if (names_.stdin_functions.contains(a.command)) return true;  // `f() { sh; }; … | f`
      if (a.command == "vagrant") return has_letter(a.flags, 's') && !has_letter(a.flags, 'c');
      return operands_before_shell(a.command) >= 0 && a.operands <= operands_before_shell(a.command);
    case command_kind::runs_option: return a.command != "flock" && !has_letter(a.flags, 'c');
    case command_kind::parallel: return !a.separated && (a.operands == 0 || a.runs_program);
    default: return false;
  }
}

// At the end of a simple command: what it reads from standard input, a sed script.
void lexer::finish_command(command_state& st) {
  auto& a = st.args;
  if (!a.sandbox)
    for (const auto index : a.sed_script) mark_code(index, a.command + " (its script; --sandbox would keep it from running commands)");
  const bool reads_code = st.command_begin != no_offset && reads_code_from_stdin(st);
  // `{ sh; } <<<…`, `while …; do sh; done < <(…)`: the group's redirections are its commands' input.
  const bool group_input = st.command_begin != no_offset && st.after_code_group;
  if (reads_code || group_input) {
    const std::string runner = "the standard input of " + (a.command.empty() ? std::string("the command") : a.command);
    if (reads_code && st.pipeline_begin < st.command_begin)
      mark_code_range({st.pipeline_begin, st.command_begin}, "text piped into " + a.command);
    for (const auto& r : st.stdin_text) mark_code_range(r, runner);
    code_bodies_.resize(out_.heredocs.size());
    for (auto h = st.pipeline_heredocs; h < out_.heredocs.size(); ++h) code_bodies_[h] = runner;
    if (!st.group_code.empty()) st.group_code.back() = true;  // so does the group around it
    if (st.output_list) output_runs_code_ = true;
    if (st.input_list) input_runs_code_ = true;
    if (st.coproc_depth != no_offset) all_code_ = true;  // `coproc sh`: what the script writes to it
  }
  if (reads_code) {
    // `echo … | ( sh )`, `… | while read l; do sh; done`: what is piped into its groups.
    for (std::size_t k = 0; k < st.groups.size(); ++k)
      if (st.groups[k] != no_offset && st.groups[k] < st.group_starts[k])
        mark_code_range({st.groups[k], st.group_starts[k]}, "text piped into " + a.command);
    // `sh <&3 3<<<…`: stdin copied from another descriptor.
    for (const auto& [into, from] : st.fd_dups)
      if (into == 0) learn_script_fd(from);
    if (in_function(st) && names_.stdin_functions.insert(st.function_name).second)
      learned_ = true;
    if (!names_.stdin_code_anywhere) {
      names_.stdin_code_anywhere = true;
      learned_ = true;
    }
  }
  if (a.feeds_code && st.command_begin != no_offset)  // `printf -v PS4 %s …`, `read -r BASH_ENV`: its words become the variable
    mark_code_range({st.command_begin, i_}, "the program reading " + a.code_option);
  // `exec 4<&5`, `sh 4<&5 <&4`: a copy of a descriptor a script is read from.
  for (const auto& [into, from] : st.fd_dups)
    if (into > 0 && script_fd(into)) learn_script_fd(from);
  if (st.coproc_depth != no_offset && names_.any_script_fd) all_code_ = true;  // `sh <&"${COPROC[0]}"`
  const bool inputs_are_code = (a.kind == command_kind::parallel && (a.runs_program || a.operands == 0)) ||
                               (st.replaces_input && st.code_seen) || (st.appends_input && awaits_code(st));
  if (inputs_are_code)
    for (const auto& r : st.argument_inputs) mark_code_range(r, a.command + " (its input becomes code)");
  if (a.kind == command_kind::wrapper && a.command == "exec" && names_.stdin_code_anywhere) {
    // `exec <<< …`, `exec 0< <(…)`, `exec <&3`: stdin of every later command, one of which reads code.
    for (const auto& r : st.stdin_text) mark_code_range(r, "the standard input exec gives the script");
    code_bodies_.resize(out_.heredocs.size());
    for (auto h = st.first_heredoc; h < out_.heredocs.size(); ++h)
      if (h >= heredoc_fds_.size() || heredoc_fds_[h] == 0) code_bodies_[h] = "the standard input exec gives the script";
    for (const auto& [into, from] : st.fd_dups)
      if (into == 0) learn_script_fd(from);
  }
  if (st.output_is_code && st.command_begin != no_offset) {
    // `echo … > >(sh)`, `… | tee >(python3)`: what the command writes is code.
    const std::string runner = "a >( ) that runs its input (" + (a.command.empty() ? std::string("the command") : a.command) + ")";
    mark_code_range({std::min(st.pipeline_begin, st.command_begin), i_}, runner);
    for (const auto& r : st.stdin_text) mark_code_range(r, runner);
    code_bodies_.resize(out_.heredocs.size());
    for (auto h = st.pipeline_heredocs; h < out_.heredocs.size(); ++h) code_bodies_[h] = runner;
    if (a.kind == command_kind::wrapper && a.command == "exec") all_code_ = true;  // `exec > >(sh)`: all later output
  }
  if (st.coproc_depth != no_offset && st.groups.size() <= st.coproc_depth) st.coproc_depth = no_offset;
  st.stdin_text.clear();
  st.replaces_input = st.appends_input = st.code_seen = st.stdin_is_script = st.output_is_code = st.after_code_group = false;
  st.code_from_substitution = false;
  st.fd_dups.clear();
  st.argument_inputs.clear();
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
    if (w == k) return open_group(st);
  for (std::string_view k : {"}", "fi", "done", "esac"})
    if (w == k) return close_group(st);
}

void lexer::open_group(command_state& st) {
  st.groups.push_back(st.pipeline_begin);
  st.group_starts.push_back(st.command_begin == no_offset ? i_ : st.command_begin);
  st.group_code.push_back(false);
}

// The group's redirections feed its commands: when one reads code from stdin, so does the group.
void lexer::close_group(command_state& st) {
  if (st.groups.empty()) return;
  st.pipeline_begin = st.groups.back();
  st.groups.pop_back();
  st.group_starts.pop_back();
  st.after_code_group = st.group_code.back();
  st.group_code.pop_back();
  if (st.after_code_group && !st.group_code.empty()) st.group_code.back() = true;
  if (!st.function_name.empty() && st.groups.size() <= st.function_depth) st.function_name.clear();
}

}  // namespace arun::engine::detail
