// Command-line dispatch: `arun [run] RECIPE`, `arun validate RECIPE`, `arun --version`.
#include "commands.hpp"
#include "exit_codes.hpp"

namespace arun::cli {

int main(int argc, char** argv) {
  CLI::App app{"arun: an asynchronous recipe runner", "arun"};
  app.set_version_flag("--version", std::string("arun ") + ARUN_VERSION);
  app.require_subcommand(0, 1);
  // `arun RECIPE` is `arun run RECIPE`: the run options live on the top level too.
  run_settings settings;
  add_run_options(app, settings);
  auto* run = app.add_subcommand("run", "Run a recipe (the default command)");
  add_run_options(*run, settings);
  recipe_options validate_options;
  auto* validate = app.add_subcommand("validate", "Check a recipe: every diagnostic, exit 0 or 2");
  add_recipe_options(*validate, validate_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? exit_success : exit_usage;
  }
  if (validate->parsed()) return validate_command(validate_options);
  return run_command(settings);
}

}  // namespace arun::cli
