#pragma once
// "Did you mean" for the command line, as cargo and git give it: a mistyped subcommand is
// never looked up as a recipe name, and a mistyped option names the option it is close to.

#include <string>
#include <vector>

namespace CLI {
class App;
class Error;
}  // namespace CLI

namespace arun::cli {

/// When argv[1] is no subcommand, no recipe file and no recipe discovery finds, but within
/// two edits of a subcommand: the message to print (exit 2). Empty otherwise.
std::string mistyped_subcommand(int argc, char** argv, const CLI::App& app);

/// After a parse error: an option in argv that the chosen (sub)command does not have, with the
/// nearest one it has. Empty when every option is known.
std::string mistyped_option(int argc, char** argv, const CLI::App& app);

/// `arun help [COMMAND...]` is `arun [COMMAND...] --help`: rewrites `args` (argv) so. The
/// message to print (exit 2) when a word after `help` names no command; empty otherwise.
std::string help_command_as_flag(std::vector<char*>& args, const CLI::App& app);

/// A parse error's message as arun's other errors read: `arun: WHAT`, then which --help lists
/// the options of the command that was being parsed.
std::string parse_failure_message(const CLI::App* app, const CLI::Error& e);

}  // namespace arun::cli
