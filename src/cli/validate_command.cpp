// `arun validate RECIPE`: every diagnostic on stderr (or as one JSON document on stdout); exit
// 0 when clean or warnings only, 2 on any error, 3/4 when there is no recipe
// (docs/reference/exit-codes.md).
#include "commands.hpp"
#include "exit_codes.hpp"
#include "agent_setup.hpp"
#include "run_output.hpp"

#include "output/result_format.hpp"

#include <cstdio>

namespace arun::cli {

int validate_command(const recipe_options& given, const std::string& format, const agent_settings& agents) {
  recipe_options o = given;
  o.check_shell = true;   // bash -n and the schema: validate's job, not explain's or graph's
  o.check_schema = true;
  // The agent CLI the recipe would run with (--agent-cli, $ARUN_AGENT_CLI, claude): is it there?
  const auto cli = choose_agent_cli(agents);
  if (const auto* error = std::get_if<std::string>(&cli)) {
    // A bad --agent-cli is a usage error; a bad $ARUN_AGENT_CLI is the run's to refuse (a
    // recipe without agent steps never needs it), so validate only leaves the check out.
    if (!agents.cli.empty() || !agents.command.empty()) {
      std::fprintf(stderr, "arun: %s\n", error->c_str());
      return exit_usage;
    }
  } else {
    o.check_agent_cli = &std::get<io::agent_cli>(cli);
  }
  add_limit_checks(agents, o);  // validate takes no --limit: the recipe's limits are checked
  o.diagnostics_json = format == "json";
  auto in = load_recipe_input(o, false);
  const int code = in.value ? exit_success : in.exit_code;
  if (format == "json") {
    // One document whatever the outcome, for editors and CI to annotate the recipe with.
    auto doc = io::document_header();
    doc["recipe"] = o.recipe;
    doc["file"] = in.path.empty() ? boost::json::value(nullptr) : boost::json::value(in.path);
    doc["valid"] = in.value.has_value();
    doc["errors"] = in.errors;
    doc["warnings"] = in.warnings;
    doc["diagnostics"] = std::move(in.diagnostics);
    return write_json_stdout(doc) ? code : exit_output_failed;
  }
  if (!in.value) return code;
  return write_stdout(o.recipe + ": valid" + (in.warnings > 0 ? " (with warnings)" : "") + "\n") ? code
                                                                                                : exit_output_failed;
}

}  // namespace arun::cli
