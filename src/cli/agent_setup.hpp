#pragma once
// The run options of agent steps (docs/agents.md, "Choosing the CLI",
// "Output, JSON and flaky agents", "Running agent steps"): which agent CLI, where agent files
// resolve, rate-limit retries, auto_stage.

#include "commands.hpp"

#include "executor/process_step_runner.hpp"

#include <arun/engine.hpp>

#include <optional>
#include <variant>
#include <string>
#include <string_view>
#include <utility>

namespace arun::cli {

/// The agent CLI --agent-cli, --agent-command or $ARUN_AGENT_CLI chooses (claude when none
/// does); a message when the choice is invalid.
std::variant<io::agent_cli, std::string> choose_agent_cli(const agent_settings& a);

/// `NAME=N` of --limit: a provider or limit_group name (letters, digits, `_ . : -`) and a
/// limit from 1 to 4096; none when it is not one.
std::optional<std::pair<std::string, int>> parse_limit(std::string_view text);

/// Gives `o` the --limit NAMEs of `a` and the provider of the agent CLI `a` chooses (a custom
/// command's program), which a limit may name beside the presets' providers.
void add_limit_checks(const agent_settings& a, recipe_options& o);

/// Fills the runner's agent CLI and search, and the engine's agent options, from the settings
/// and $ARUN_AGENT_CLI. An error message (a usage error) when the CLI choice is invalid.
/// `recipe_path`: the recipe run, whose agents/ folder is searched last.
std::optional<std::string> configure_agents(const run_settings& s, const std::string& base_dir,
                                            const std::string& recipe_path, io::runner_options& runner,
                                            run_options& engine);

}  // namespace arun::cli
