// The built `arun` on how sub-recipes are called (src/io/recipe/sub_recipes.cpp, check_calls):
// a sub-recipe's own limits, which count only when it runs on its own, and a loop that runs a
// sub-recipe with approval gates for several items at once (the Python dialect's warning,
// worded for what arun does: docs/sessions.md, "Approvals").
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <string>
#include <vector>

namespace {

using arun::test::run_arun;

// The codes of `validate --output-format json`'s diagnostics, in order.
std::vector<std::string> codes_of(const arun::test::arun_run& r) {
  std::vector<std::string> out;
  const auto result = boost::json::parse(r.out);
  for (const auto& d : result.at("diagnostics").as_array())
    out.emplace_back(d.at("code").as_string());
  return out;
}

const std::string review = "name: review\nsteps:\n  - id: check\n    command: echo checking {{pkg}}\n"
                           "  - id: ok\n    requires_approval: true\n    approval_prompt: \"ship {{pkg}}?\"\n";

}  // namespace

TEST_CASE("a sub-recipe's own limits warn that only the top-level recipe's count") {
  arun::test::temp_dir dir("arun-calls");
  dir.write("child.yaml", "name: child\nlimits: {claude: 2}\nsteps:\n  - id: c\n    command: echo child\n");
  const auto top = dir.write("top.yaml", "name: top\nsteps:\n  - id: call\n    recipe: child.yaml\n"
                                         "  - id: again\n    recipe: child.yaml\n");
  const auto v = run_arun({"validate", top});
  CHECK(v.exit_code == 0);
  CHECK(arun::test::occurrences(v.err, "child.yaml:2:9: warning: the 'limits' of child count only when it runs on its own: called from "
                     "top, the top-level recipe's limits apply") == 1);
  CHECK(run_arun({"validate", top, "--strict"}).exit_code == 2);
  CHECK(codes_of(run_arun({"validate", top, "--output-format", "json"})) == std::vector<std::string>{"ineffective-field"});
  // Run on its own, its limits are the run's: nothing to say.
  const auto alone = run_arun({"validate", (dir.root / "child.yaml").string()});
  CHECK(alone.exit_code == 0);
  CHECK_THAT(alone.err, !Catch::Contains("count only"));
}

TEST_CASE("a loop running a sub-recipe with gates for several items at once warns, at its parallel setting") {
  arun::test::temp_dir dir("arun-calls");
  dir.write("review.yaml", review);
  dir.write("plain.yaml", "name: plain\nsteps:\n  - id: p\n    command: echo {{pkg}}\n");
  dir.write("outer.yaml", "name: outer\nsteps:\n  - id: nested\n    recipe: review.yaml\n");
  const auto top = dir.write(
      "top.yaml",
      "name: top\nsteps:\n  - id: fan\n    foreach: [a, b, c]\n    as: pkg\n    parallel: true\n"
      "    type: recipe\n    recipe: review.yaml\n"
      // one at a time: nothing to say
      "  - id: one\n    foreach: [a]\n    as: pkg\n    type: recipe\n    recipe: review.yaml\n"
      // no gates below: nothing to say
      "  - id: quiet\n    foreach: [a, b]\n    as: pkg\n    parallel: 2\n    recipe: plain.yaml\n"
      // the gate two calls down, the call in a loop body
      "  - id: body\n    foreach: [a, b]\n    as: pkg\n    max_concurrent: 2\n    steps:\n"
      "      - id: inner\n        recipe: outer.yaml\n"
      // the same recipe twice in one body: said once
      "      - id: again\n        recipe: outer.yaml\n");
  const auto v = run_arun({"validate", top});
  CHECK(v.exit_code == 0);
  CHECK(arun::test::occurrences(v.err, "top.yaml:6:15: warning: loop 'fan' runs review, which asks for approval (itself or "
                                       "in a recipe it calls), for several items at once: each item asks its own gates") == 1);
  CHECK(arun::test::occurrences(v.err, "help: to ask once for the whole loop, put a gate step before it; to decide the items' gates "
                     "together, arun approve ID --step 'fan[*]/...'") == 1);
  CHECK(arun::test::occurrences(v.err, "top.yaml:22:21: warning: loop 'body' runs outer, which asks for approval") == 1);
  CHECK(arun::test::occurrences(v.err, "warning: loop") == 2);
  CHECK(run_arun({"validate", top, "--strict"}).exit_code == 2);
  CHECK(codes_of(run_arun({"validate", top, "--output-format", "json"})) == std::vector<std::string>{"approval", "approval"});
  // What it says is what happens: without a terminal the run stops at every item's gate.
  const auto fan = dir.write("fan.yaml", "name: fan\nsteps:\n  - id: fan\n    foreach: [a, b, c]\n    as: pkg\n"
                                         "    parallel: true\n    recipe: review.yaml\n");
  const auto run = run_arun({fan, "--no-input", "--output-format", "json", "--session-dir",
                             (dir.root / "sessions").string()});
  CHECK(run.exit_code == 5);
  CHECK(arun::test::result_json(run).at("waiting_approvals").as_array().size() == 3);
  CHECK(arun::test::leftover_processes().empty());
}
