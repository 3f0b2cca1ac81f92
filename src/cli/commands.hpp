#pragma once
// The subcommands of arun. Each adds its options to the parser, then runs.

#include "recipe_input.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace arun::cli {

struct run_settings {
  recipe_options recipe;  ///< recipe.working_dir is -C
  std::string output_format = "text";
  double kill_grace = 5.0;
  std::size_t max_output = 10u << 20;
  bool quiet = false;
  int max_concurrent = 8;
  bool dry_run = false;
  std::vector<std::string> include_tags, exclude_tags;
  std::string events_file;
  std::string audit_dir;
  std::string progress = "auto";
  double heartbeat = 60.0;
};

void add_run_options(CLI::App& app, run_settings& s);
int run_command(const run_settings& s);

int validate_command(const recipe_options& o);
int explain_command(const recipe_options& o);
int graph_command(const recipe_options& o, const std::string& format);
int list_command(const recipe_options& o);
/// `arun agents list`: one line per agent file (reference, path, source), exit 0.
int agents_list_command(const recipe_options& o);

/// Parses argv and runs the chosen command; returns the process exit code.
int main(int argc, char** argv);

}  // namespace arun::cli
