#pragma once
// The command line's model: which options each command takes (command_line.cpp). Included by
// the files that build or walk the CLI11 app; the commands themselves see only their settings.

#include "agent_setup.hpp"
#include "commands.hpp"
#include "recipe_input.hpp"

#include <CLI/CLI.hpp>

namespace arun::cli {

/// A validator without the description CLI11 would add to the option's help ("FLOAT in
/// [0 - 86400]"): the option's text says the range in words.
inline CLI::Validator quiet(CLI::Validator v) {
  v.description("");
  return v;
}

/// The help of every SESSION argument: the forms io::find_session takes.
inline constexpr const char* session_argument_help =
    "The session: its id, last (or -) for the newest, or a unique prefix or suffix of its id (arun sessions "
    "lists them)";

/// RECIPE, -R, -C, --set, --strict, --lenient, --max-recipe-bytes, --color.
void add_recipe_options(CLI::App& app, recipe_options& o);
/// --secret KEY=VALUE and --secret-env KEY (run and resume).
void add_secret_options(CLI::App& app, recipe_options& o);
/// --agent-dir and --allow-missing-agents; turns on the check of agent references.
void add_agent_options(CLI::App& app, recipe_options& o);
/// --agent-cli and --agent-command (run, resume, validate).
void add_agent_cli_options(CLI::App& app, agent_settings& a);
/// Those, --auto-stage and the rate-limit options (run and resume).
void add_agent_run_options(CLI::App& app, agent_settings& a);
/// RECIPE and every option of `run`.
void add_run_options(CLI::App& app, run_settings& s);
/// The options of how a run executes and reports (shared by `run` and `resume`).
void add_execution_options(CLI::App& app, run_settings& s);
/// `resume ID` and its options.
void add_resume_options(CLI::App& app, resume_settings& r);
/// `logs ID [INSTANCE-GLOB] [--stream out|err] [-f]`.
void add_logs_options(CLI::App& app, logs_settings& s);

}  // namespace arun::cli
