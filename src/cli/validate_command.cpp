// `arun validate RECIPE`: every diagnostic on stderr; exit 0 when clean or warnings only, 2
// on any error (SPEC §13).
#include "commands.hpp"
#include "exit_codes.hpp"

#include <cstdio>

namespace arun::cli {

int validate_command(const recipe_options& given) {
  recipe_options o = given;
  o.check_shell = true;  // bash -n: validate's job, not explain's or graph's
  const auto in = load_recipe_input(o, false);
  if (!in.value) return in.exit_code;
  std::fprintf(stdout, "%s: valid%s\n", o.recipe.c_str(), in.had_warnings ? " (with warnings)" : "");
  return exit_success;
}

}  // namespace arun::cli
