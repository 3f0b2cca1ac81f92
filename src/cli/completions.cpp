// Shell completion. The scripts `arun completions bash|zsh|fish` prints are thin: on TAB they
// run `arun __complete -- WORDS…`, and this file answers from the CLI11 app itself (the same
// model --help and the man pages come from), so completion never drifts from the parser.
// Recipe names come from discovery and session ids from the session directory, at TAB time.
#include "commands.hpp"
#include "exit_codes.hpp"

#include "agent_setup.hpp"
#include "user_config.hpp"

#include "agents/agent_cli.hpp"
#include "executor/step_environment.hpp"
#include "process/spawn.hpp"
#include "recipe/discovery.hpp"
#include "output/terminal_text.hpp"
#include "session/session_lookup.hpp"
#include "session/session_store.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace arun::cli {
namespace fs = std::filesystem;

namespace {

// What a shell should add itself: files, directories, or recipe files (*.yaml, *.yml).
constexpr const char* files_directive = ":files";
constexpr const char* dirs_directive = ":dirs";
constexpr const char* yaml_directive = ":yaml";
// How many sessions are offered (newest first).
constexpr std::size_t max_sessions_offered = 50;

bool visible(const CLI::App* cmd) { return !cmd->get_name().empty() && !cmd->get_group().empty(); }
bool visible(const CLI::Option* opt) { return !opt->get_group().empty(); }

std::vector<CLI::App*> subcommands_of(CLI::App& cmd) {
  return cmd.get_subcommands([](CLI::App* sub) { return visible(sub); });
}

CLI::App* subcommand_named(CLI::App& cmd, std::string_view name) {
  for (auto* sub : subcommands_of(cmd))
    if (sub->get_name() == name) return sub;
  return nullptr;
}

const CLI::Option* option_named(const CLI::App& cmd, const std::string& word) {
  for (const auto* opt : cmd.get_options())
    if (!opt->get_positional() && opt->check_name(word)) return opt;
  return nullptr;
}

bool takes_value(const CLI::Option* opt) { return opt->get_type_size_max() > 0; }

std::string one_line(std::string text) {
  if (const auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  std::replace(text.begin(), text.end(), '\t', ' ');
  return text;
}

struct candidates {
  std::string prefix;  ///< what is typed so far: only candidates starting with it are offered
  std::vector<std::pair<std::string, std::string>> values;  ///< value, description
  std::set<std::string> directives;

  void add(const std::string& value, const std::string& description = {}) {
    if (value.starts_with(prefix)) values.emplace_back(value, one_line(description));
  }
};

// The choices in a CLI11 type name such as "WHEN:{auto,always,never}".
std::vector<std::string> choices_of(const std::string& type_name) {
  const auto open = type_name.find('{');
  const auto close = type_name.rfind('}');
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string_view rest(type_name.data() + open + 1, close - open - 1);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    out.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

void add_recipe_names(candidates& out, const std::string& working_dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& dir : io::search_dirs(io::command_line_discovery({}, working_dir)))
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (const auto ext = entry.path().extension(); ext == ".yaml" || ext == ".yml")
        names.insert(entry.path().stem().string());
  for (const auto& name : names) out.add(name, "recipe");
}

// The session root TAB looks in: --session-dir on the line, else the config file's, as the
// commands themselves use (read quietly; a broken config is the commands' to report, not TAB's).
std::string session_root_of(std::string session_dir) {
  if (session_dir.empty()) {
    const auto config = load_user_config();
    if (config.errors.empty() && !config.from_default("session_dir")) session_dir = config.value("session_dir");
  }
  return io::session_root(session_dir);
}

std::string text_in(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Whether `arun resume` has something to do in a session of this state: it has not completed,
// or an instance failed at any depth (--retry-failed runs it again).
bool resumable(const boost::json::object& state) {
  if (text_in(state, "status") != "completed") return true;
  if (const auto* failed = state.if_contains("failed_instances"); failed && failed->is_int64() && failed->get_int64() > 0)
    return true;
  const auto* steps = state.if_contains("steps");
  if (!steps || !steps->is_array()) return false;
  return std::any_of(steps->get_array().begin(), steps->get_array().end(), [](const auto& step) {
    return step.is_object() && text_in(step.get_object(), "status") == "failed";
  });
}

// `resumable_only` (arun resume): neither completed nor held by a running arun.
void add_session_ids(candidates& out, const std::string& session_dir, bool resumable_only) {
  const auto root = session_root_of(session_dir);
  std::size_t offered = 0;
  for (const auto& id : io::session_ids(root)) {
    if (!id.starts_with(out.prefix)) continue;
    const auto dir = (fs::path(root) / id).string();
    if (resumable_only && io::session_is_live(dir)) continue;
    std::string description;
    // Read without blocking and bounded (a FIFO or a huge state.json must not hang TAB), and
    // shown escaped (no state.json drives the terminal). A damaged one may still be resumed.
    if (auto state = io::session_store::read_state(dir, std::size_t{16} << 20);
        const auto* object = std::get_if<boost::json::object>(&state)) {
      if (resumable_only && !resumable(*object)) continue;
      description = io::printable_text(text_in(*object, "status") + " " + text_in(*object, "recipe_name"));
    }
    if (offered++ == max_sessions_offered) break;
    out.add(id, description);
  }
}

// `arun logs ID <TAB>`: the instances of that session with a log, in run order.
void add_instance_ids(candidates& out, const std::string& session_dir, const std::string& given) {
  const auto root = session_root_of(session_dir);
  const auto found = io::find_session(root, given);
  if (found.id.empty()) return;
  for (const auto& instance : logged_instances(root + "/" + found.id))
    out.add(instance, "instance");
}

// `--agent-cli <TAB>`: the presets whose program is on PATH (each described by where it is);
// all of them when none is, so that TAB still shows the names.
void add_agent_clis(candidates& out) {
  const auto env = io::current_environment();
  std::vector<std::pair<std::string, std::string>> found, all;
  for (const auto name : io::agent_cli_names) {
    agent_settings settings;
    settings.cli = std::string(name);
    const auto chosen = choose_agent_cli(settings);
    const auto* cli = std::get_if<io::agent_cli>(&chosen);
    const auto program = cli ? io::find_program(cli->program, env) : std::nullopt;
    if (program) found.emplace_back(name, *program);
    all.emplace_back(name, "not found on PATH");
  }
  for (const auto& [name, where] : found.empty() ? all : found) out.add(name, where);
}

// What the words typed so far say about the one being completed.
struct line_state {
  CLI::App* command;
  const CLI::Option* pending = nullptr;  ///< an option whose value is being typed
  std::size_t positionals = 0;           ///< positional words before the current one
  std::vector<std::string> words;        ///< those words (`logs ID`: the ID)
  std::string session_dir;               ///< --session-dir given on the line
  std::string working_dir;               ///< -C given on the line
};

// A word as the shell passes it, quotes included ("my dir", 'x, or "20261 being typed):
// one layer of quotes removed.
std::string dequoted(std::string_view word) {
  if (word.empty() || (word.front() != '"' && word.front() != '\'')) return std::string(word);
  if (word.size() >= 2 && word.back() == word.front()) return std::string(word.substr(1, word.size() - 2));
  return std::string(word.substr(1));
}

// Notes what an option's value says about the rest of the line.
void remember(line_state& s, const CLI::Option* opt, const std::string& value) {
  if (opt->check_name("--session-dir")) s.session_dir = value;
  if (opt->check_name("-C")) s.working_dir = value;
}

line_state walk(CLI::App& app, const std::vector<std::string>& typed) {
  line_state s{&app};
  bool options_ended = false;
  for (const auto& word : typed) {
    if (s.pending) {
      remember(s, s.pending, word);
      s.pending = nullptr;
    } else if (!options_ended && word == "--") {
      options_ended = true;
    } else if (!options_ended && word.starts_with("-") && word.size() > 1) {
      if (const auto eq = word.find('='); eq != std::string::npos) {  // --name=value: complete in itself
        if (const auto* opt = option_named(*s.command, word.substr(0, eq))) remember(s, opt, dequoted(word.substr(eq + 1)));
        continue;
      }
      const auto* opt = option_named(*s.command, word);
      if (opt && takes_value(opt)) s.pending = opt;
    } else if (auto* sub = s.positionals == 0 ? subcommand_named(*s.command, word) : nullptr) {
      s.command = sub;
    } else {
      ++s.positionals;
      s.words.push_back(word);
    }
  }
  return s;
}

void add_value_of(candidates& out, const CLI::Option* opt, const line_state& s) {
  const auto type_name = opt->get_type_name();
  if (const auto choices = choices_of(type_name); !choices.empty()) {
    for (const auto& c : choices) out.add(c);
  } else if (type_name == "DIR") {
    out.directives.insert(dirs_directive);
  } else if (type_name == "FILE") {
    out.directives.insert(files_directive);
  } else if (opt->get_name() == "recipe") {
    add_recipe_names(out, s.working_dir);
    out.directives.insert(yaml_directive);
  } else if (opt->get_name() == "session") {
    add_session_ids(out, s.session_dir, s.command->get_name() == "resume");
  } else if (opt->get_name() == "instance" && !s.words.empty()) {
    add_instance_ids(out, s.session_dir, s.words.front());
  } else if (opt->check_name("--agent-cli")) {
    add_agent_clis(out);
  }
}

candidates complete(CLI::App& app, std::vector<std::string> words) {
  for (auto& word : words) word = dequoted(word);
  const std::vector<std::string> typed(words.begin(), words.end() - (words.empty() ? 0 : 1));
  const auto s = walk(app, typed);
  candidates out{words.empty() ? std::string() : words.back(), {}, {}};
  if (s.pending) {
    add_value_of(out, s.pending, s);
    return out;
  }
  // --name=VALUE being typed: the option's values, each offered whole ("--color=always").
  if (const auto eq = out.prefix.find('='); out.prefix.starts_with("-") && eq != std::string::npos) {
    const auto* opt = option_named(*s.command, out.prefix.substr(0, eq));
    if (!opt || !takes_value(opt)) return out;
    candidates values{dequoted(out.prefix.substr(eq + 1)), {}, {}};
    add_value_of(values, opt, s);
    for (auto& [value, description] : values.values) out.values.emplace_back(out.prefix.substr(0, eq + 1) + value, description);
    out.directives = std::move(values.directives);
    return out;
  }
  if (out.prefix.starts_with("-")) {
    for (const auto* opt : s.command->get_options()) {
      if (opt->get_positional() || !visible(opt)) continue;
      for (const auto& name : opt->get_lnames()) out.add("--" + name, opt->get_description());
      for (const auto& name : opt->get_snames()) out.add("-" + name, opt->get_description());
    }
    return out;
  }
  if (s.positionals == 0)
    for (auto* sub : subcommands_of(*s.command)) out.add(sub->get_name(), sub->get_description());
  std::size_t index = 0;
  for (const auto* opt : s.command->get_options())
    if (opt->get_positional() && index++ == s.positionals) add_value_of(out, opt, s);
  return out;
}

void list_commands(CLI::App& cmd, const std::string& path, std::string& text) {
  for (auto* sub : subcommands_of(cmd)) {
    const auto sub_path = path.empty() ? sub->get_name() : path + " " + sub->get_name();
    text += sub_path + "\t" + one_line(sub->get_description()) + "\n";
    list_commands(*sub, sub_path, text);
  }
}

// The scripts. Each passes the words up to the cursor to `arun __complete --` and turns the
// answer ("value<TAB>description" lines and :files/:dirs/:yaml) into the shell's own form.
constexpr const char* bash_script = R"(# bash completion for arun (generated by `arun completions bash`).
# Install: copy to /usr/share/bash-completion/completions/arun, or `source` it from ~/.bashrc.
_arun() {
  local cur=${COMP_WORDS[COMP_CWORD]} line=${COMP_LINE:0:COMP_POINT} files= i pos=0 gap
  local -a found=() words=()
  # bash splits `--color=al` and `a:b` at = and : (COMP_WORDBREAKS); arun wants them whole:
  # pieces with no blank between them in the line are one word again.
  for ((i = 0; i <= COMP_CWORD; i++)); do
    gap=
    while [[ ${line:pos:1} == [[:space:]] ]]; do pos=$((pos + 1)); gap=1; done
    pos=$((pos + ${#COMP_WORDS[i]}))
    ((i == 0)) && continue
    if [[ -z $gap && ${#words[@]} -gt 0 ]]; then words[-1]+=${COMP_WORDS[i]}; else words+=("${COMP_WORDS[i]}"); fi
  done
  while IFS= read -r line; do
    case $line in
      :files|:dirs|:yaml) files=$line ;;
      *) found+=("${line%%$'\t'*}") ;;
    esac
  done < <(command "${COMP_WORDS[0]}" __complete -- "${words[@]}" 2>/dev/null)
  # bash replaces only what follows the last = or : of the word: offer just that part.
  local whole=${words[-1]}
  local head=${whole%"${whole##*[=:]}"}
  [[ $cur == [=:] ]] && cur=
  COMPREPLY=("${found[@]#"$head"}")
  local IFS=$'\n'
  case $files in
    :files) COMPREPLY+=($(compgen -f -- "$cur")) ;;
    :dirs) COMPREPLY+=($(compgen -d -- "$cur")) ;;
    :yaml) COMPREPLY+=($(compgen -f -X '!*.yaml' -- "$cur") $(compgen -f -X '!*.yml' -- "$cur") $(compgen -d -- "$cur")) ;;
  esac
  [[ -n $files ]] && compopt -o filenames 2>/dev/null
  return 0
}
complete -F _arun arun
)";

constexpr const char* zsh_script = R"(#compdef arun
# zsh completion for arun (generated by `arun completions zsh`).
# Install: save as _arun in a directory of $fpath (Debian: /usr/share/zsh/vendor-completions).
_arun() {
  local line files=
  local -a found
  while IFS= read -r line; do
    case $line in
      :files|:dirs|:yaml) files=$line ;;
      *$'\t'*) found+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}") ;;
      *) found+=("${line//:/\\:}") ;;
    esac
  done < <(command ${words[1]} __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)
  (( ${#found} )) && _describe -t values arun found
  case $files in
    :files) _files ;;
    :dirs) _files -/ ;;
    :yaml) _files -g '*.(yaml|yml)(-.)' ;;
  esac
  return 0
}
if [[ $funcstack[1] == _arun ]]; then _arun "$@"; else compdef _arun arun; fi
)";

constexpr const char* fish_script = R"(# fish completion for arun (generated by `arun completions fish`).
# Install: save as ~/.config/fish/completions/arun.fish (Debian: /usr/share/fish/vendor_completions.d).
function __arun_complete
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    for line in (command $words[1] __complete -- $words[2..-1] $current 2>/dev/null)
        switch $line
            case :files
                __fish_complete_path $current
            case :dirs
                __fish_complete_directories $current
            case :yaml
                __fish_complete_suffix .yaml
                __fish_complete_suffix .yml
            case '*'
                echo $line
        end
    end
end
complete -c arun -f -a '(__arun_complete)'
)";

}  // namespace

int completions_command(CLI::App&, const std::string& shell) {
  const char* script = shell == "bash" ? bash_script : shell == "zsh" ? zsh_script : fish_script;
  return std::fputs(script, stdout) >= 0 && std::fflush(stdout) == 0 ? exit_success : exit_output_failed;
}

int complete_command(CLI::App& app, const std::vector<std::string>& args) {
  std::string text;
  if (!args.empty() && args.front() == "--commands") {
    list_commands(app, "", text);
  } else {
    const bool dashes = !args.empty() && args.front() == "--";
    const auto found = complete(app, std::vector<std::string>(args.begin() + (dashes ? 1 : 0), args.end()));
    for (const auto& [value, description] : found.values)
      text += description.empty() ? value + "\n" : value + "\t" + description + "\n";
    for (const auto& d : found.directives) text += d + std::string("\n");
  }
  return std::fputs(text.c_str(), stdout) >= 0 && std::fflush(stdout) == 0 ? exit_success : exit_output_failed;
}

}  // namespace arun::cli
