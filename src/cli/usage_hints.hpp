#pragma once
// "Did you mean" for the command line, as cargo and git give it: a mistyped subcommand is
// never looked up as a recipe name, and a mistyped option names the option it is close to.

#include <CLI/CLI.hpp>

#include <string>

namespace arun::cli {

/// A validator without the description CLI11 would add to the option's help ("FLOAT in
/// [0 - 86400]"): the option's text says the range in words.
inline CLI::Validator quiet(CLI::Validator v) {
  v.description("");
  return v;
}

/// When argv[1] is no subcommand, no recipe file and no recipe discovery finds, but within
/// two edits of a subcommand: the message to print (exit 2). Empty otherwise.
std::string mistyped_subcommand(int argc, char** argv, const CLI::App& app);

/// After a parse error: an option in argv that the chosen (sub)command does not have, with the
/// nearest one it has. Empty when every option is known.
std::string mistyped_option(int argc, char** argv, const CLI::App& app);

}  // namespace arun::cli
