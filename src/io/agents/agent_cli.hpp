#pragma once
// The agent CLI an agent step runs (docs/agents.md, "Choosing the CLI"): the presets claude,
// copilot, codex, amplihack and fake, or a user's --agent-command template; where the persona goes
// for each, and the argv. Pure: the runner writes the files and starts the child. docs/agents.md
// describes every shape for users.

#include <boost/json/value.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace arun::io {

enum class agent_cli_kind { claude, copilot, codex, amplihack, fake, custom };

struct agent_cli {
  agent_cli_kind kind = agent_cli_kind::claude;
  agent_cli_kind inner = agent_cli_kind::claude;  ///< amplihack: the CLI it launches
  std::string program = "claude";                 ///< argv[0] (searched on PATH without '/')
  std::vector<std::string> command_template;      ///< custom: the words of --agent-command
  /// Set in every call's environment before the step's env (amplihack: its session limits).
  std::vector<std::pair<std::string, std::string>> env;
  /// Appended to every persona, after a blank line (amplihack: its no-re-entry guard).
  std::string system_prompt_suffix;
  bool allow_all_tools = true;  ///< copilot's --allow-all-tools (AMPLIHACK_NO_ALLOW_ALL_TOOLS clears it)
  /// fake, when no fake agent was found beside arun: where arun looked, for the error a
  /// recipe with agent steps gets (`program` is then "fake-agent", searched on PATH).
  std::vector<std::string> fake_looked_in;
};

/// Every name parse_agent_cli takes (what `--agent-cli <TAB>` offers).
inline constexpr std::string_view agent_cli_names[] = {"claude",           "copilot",           "codex", "amplihack",
                                                       "amplihack:claude", "amplihack:copilot", "amplihack:codex",
                                                       "fake"};

/// `claude`, `copilot`, `codex`, `amplihack` (= `amplihack:claude`), `amplihack:copilot`,
/// `amplihack:codex` or `fake` (run as `fake_program`); else an error naming the choices.
std::variant<agent_cli, std::string> parse_agent_cli(std::string_view name, const std::string& fake_program);

/// An --agent-command template: words split on whitespace, placeholders {prompt_file},
/// {system_prompt_file}, {model}, {working_dir}. Errors: empty, an unknown placeholder.
std::variant<agent_cli, std::string> parse_agent_command(std::string_view text);

/// "claude", "amplihack:copilot", "custom command", ...: for messages.
std::string describe(const agent_cli& cli);

/// The provider an agent CLI talks to, as a license name: claude, copilot, codex (amplihack:
/// the CLI it launches), fake, or a custom command's program name.
std::string provider_name(const agent_cli& cli);

/// How an agent CLI's stdout carries the reply (agent_reply.hpp decodes it).
enum class reply_format {
  text,         ///< the reply itself (copilot, --agent-command templates): no usage
  claude_json,  ///< one `--output-format json` result object (claude, amplihack:claude, fake)
  codex_jsonl,  ///< `codex exec --json` events, one a line (codex, amplihack:codex)
};

/// The format the CLI's preset asks for (agent_argv passes the flags that select it).
reply_format reply_format_of(const agent_cli& cli);

/// What one agent call sends.
struct agent_request {
  std::string system_prompt;  ///< the agent file's body; empty: none
  std::string prompt;
  std::string model;          ///< empty: the CLI's default
  std::string working_dir;    ///< absolute
};

/// Where the persona and the prompt travel for one call.
struct agent_payload {
  std::string prompt;                    ///< the prompt file's text (and stdin's)
  std::string system_prompt;             ///< for --append-system-prompt or {system_prompt_file}; empty: none
  bool prompt_on_stdin = true;           ///< false: stdin is /dev/null (copilot)
  bool needs_system_prompt_file = false; ///< the template names {system_prompt_file}
  /// copilot: -p points to the prompt file instead of holding the prompt (too large for argv,
  /// or it holds a secret, which argv would show to every user: docs/agents.md)
  bool prompt_by_file = false;
};

/// Whether a text holds a secret (secret_masker::clean's negation); none: no secrets.
using secret_check = std::function<bool(std::string_view)>;

/// System prompts up to this size go to claude's --append-system-prompt; larger ones are
/// put in front of the prompt (one argv string is limited to 128 KiB by the kernel).
inline constexpr std::size_t max_system_prompt_arg_bytes = 96 * 1024;
/// Prompts up to this size go in copilot's -p argument; larger ones are pointed to by file.
inline constexpr std::size_t max_prompt_arg_bytes = 96 * 1024;

/// The persona in front of the prompt, for CLIs without a system-prompt channel.
std::string with_instructions(const std::string& persona, const std::string& prompt);

/// The copilot -p text when the prompt is too large for argv: where to read it.
std::string prompt_pointer(const std::string& prompt_file);

/// docs/agents.md, "Choosing the CLI": where the persona goes. claude and fake:
/// --append-system-prompt (in front of the prompt when over max_system_prompt_arg_bytes); copilot
/// and codex: in front of the prompt under `# Instructions`; a template: {system_prompt_file} if it
/// names one, else in front of the prompt. The persona is never dropped. Nothing that
/// `holds_secret` finds a secret in is put where argv would carry it: such a persona goes in front
/// of the prompt, and copilot's prompt is pointed to by file.
agent_payload compose_payload(const agent_cli& cli, const agent_request& request, const secret_check& holds_secret = {});

/// The child's argv: claude `-p --output-format json --add-dir WD [--model M]
/// [--append-system-prompt SYS]` (fake alike), codex `exec --json [--model M] -`, copilot
/// `-p PROMPT [--allow-all-tools] [--model M]`, amplihack `INNER -- <INNER's arguments>`, a
/// template its words with the placeholders filled. `prompt_file` holds payload.prompt; `system_prompt_file` holds
/// payload.system_prompt (only read when payload.needs_system_prompt_file).
std::vector<std::string> agent_argv(const agent_cli& cli, const agent_payload& payload, const agent_request& request,
                                    const std::string& prompt_file, const std::string& system_prompt_file);

/// Whether the CLI runs models of `provider` (case-insensitive): claude `anthropic`, codex
/// `openai`, copilot `anthropic`, `openai` and `github`; fake and templates any.
bool serves_provider(const agent_cli& cli, std::string_view provider);

struct model_choice {
  std::string model;  ///< empty: the CLI's default
  std::vector<std::string> warnings;
};

/// The model of one call (docs/reference/recipe.md, "Agent steps"; docs/agents.md,
/// "Choosing the CLI"): the step's `model`; else the first `provider_preferences` entry whose
/// provider the CLI serves — its model when literal; when a glob (`claude-haiku-*`), the agent
/// file's model if it matches, else the CLI's default (a warning says so); else the agent file's
/// `model`. A step `provider` the CLI does not serve is a warning (the CLI runs anyway).
model_choice choose_model(const agent_cli& cli, const std::string& step_model, const std::string& provider,
                          const boost::json::value& preferences, const std::string& agent_model);

}  // namespace arun::io
