// What `run` prepares before the engine starts: the sub-recipe library, the
// context_validation pre-flight, and the dry-run plan.
#include <catch2/catch.hpp>

#include "recipe/context_checks.hpp"
#include "recipe/recipe_library.hpp"
#include "recipe/recipe_loader.hpp"
#include "temp_dir.hpp"

#include <arun/plan.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace arun;

namespace {

struct temp_dir : test::temp_dir {
  temp_dir() : test::temp_dir("arun-inputs") {}
  io::discovery_options discovery() const {
    io::discovery_options o;
    o.working_dir = root.string();
    o.home = (root / "home").string();
    return o;
  }
};

recipe load(const std::string& path) {
  auto r = io::load_recipe_file(path);
  REQUIRE(r.value);
  return *r.value;
}

}  // namespace

TEST_CASE("the recipe library loads sub-recipes by path and name once and reports invalid ones") {
  temp_dir t;
  const auto top = t.write("top.yaml", "name: top\nsteps:\n  - id: c\n    recipe: lib/child.yaml\n");
  t.write("lib/child.yaml", "name: child\nsteps:\n  - id: s\n    command: echo hi\n");
  t.write("recipes/named.yaml", "name: named\nsteps:\n  - id: s\n    command: echo named\n");
  t.write("lib/broken.yaml", "name: broken\nsteps:\n  - id: s\n    comand: echo\n");
  t.write("lib/reads_caller.yaml", "name: reads\nsteps:\n  - id: s\n    command: echo {{from_caller}}\n");
  io::recipe_library lib(t.discovery(), top);
  const auto caller = load(top);
  const auto child = lib.load("lib/child.yaml", caller);
  REQUIRE(child.value);
  CHECK(child.value->name == "child");
  CHECK(lib.load("lib/child.yaml", caller).value == child.value);  // cached: the same recipe
  const auto named = lib.load("named", caller);
  REQUIRE(named.value);
  CHECK(named.value->name == "named");
  const auto broken = lib.load("lib/broken.yaml", caller);
  CHECK_FALSE(broken.value);
  CHECK_THAT(broken.error, Catch::StartsWith("sub-recipe 'lib/broken.yaml' is not valid: ") && Catch::Contains("broken.yaml:3:5: error: step 's' has no body"));
  CHECK(lib.load("lib/reads_caller.yaml", caller).value);  // names from the caller are checked at run time
  const auto missing = lib.load("nowhere", caller);
  CHECK_THAT(missing.error, Catch::Contains("'nowhere' not found"));
  const auto outside = lib.load("../../../etc/passwd.yaml", caller);
  CHECK_FALSE(outside.value);
  CHECK_FALSE(outside.error.empty());
}

TEST_CASE("context_validation checks nonempty, path and git_repo before a run") {
  temp_dir t;
  fs::create_directories(t.root / "repo" / ".git");
  fs::create_directories(t.root / "plain");
  recipe r;
  r.name = "cv";
  r.context["name"] = "";
  r.context["file"] = "missing.txt";
  r.context["repo"] = "repo";
  r.context["notrepo"] = "plain";
  r.context_validation = {{"name", context_check::nonempty},  {"file", context_check::path},
                          {"repo", context_check::git_repo},  {"notrepo", context_check::git_repo},
                          {"unset", context_check::optional}, {"absent", context_check::nonempty}};
  const auto problems = io::check_context(r, t.root.string());
  REQUIRE(problems.size() == 4);
  CHECK_THAT(problems[0], Catch::Contains("'name' must be set and non-empty"));
  CHECK_THAT(problems[1], Catch::Contains("missing.txt' does not exist"));
  CHECK_THAT(problems[2], Catch::Contains("is not inside a git repository"));
  CHECK_THAT(problems[3], Catch::Contains("'absent' must be set"));
  r.context["name"] = "ok";
  r.context["file"] = "repo";
  r.context["notrepo"] = "repo";
  r.context["absent"] = 1;
  CHECK(io::check_context(r, t.root.string()).empty());
}

TEST_CASE("the dry-run plan evaluates conditions it can and defers those on outputs") {
  recipe r;
  r.name = "plan";
  r.context["mode"] = "fast";
  step a;
  a.id = "a";
  a.command = "echo a";
  a.output = "result";
  a.condition = "mode == 'fast'";
  step b = a;
  b.id = "b";
  b.output.reset();
  b.condition = "mode == 'slow'";
  step c = b;
  c.id = "c";
  c.condition = "{{result}} == 1";
  step d = b;
  d.id = "d";
  d.condition = "";
  d.when_tags = {"slow"};
  r.steps = {a, b, c, d};
  run_options o;
  o.exclude_tags = {"slow"};
  const auto plan = plan_run(r, o);
  REQUIRE(plan.size() == 4);
  CHECK(plan[0].verdict == plan_verdict::runs);
  CHECK(plan[1].verdict == plan_verdict::skipped);
  CHECK(plan[2].verdict == plan_verdict::at_run_time);
  CHECK_THAT(plan[2].reason, Catch::Contains("result"));
  CHECK(plan[3].verdict == plan_verdict::skipped);
  CHECK(plan[0].what == "echo a");
}

TEST_CASE("the dry-run plan applies stage conditions to the stage's steps") {
  recipe r;
  r.name = "staged";
  r.context["deploy"] = false;
  stage build;
  build.name = "build";
  step b;
  b.id = "b";
  b.command = "make";
  build.steps = {b};
  stage ship = build;
  ship.name = "ship";
  ship.condition = "deploy == true";
  ship.steps[0].id = "d";
  r.stages = {build, ship};
  const auto plan = plan_run(r, {});
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].verdict == plan_verdict::runs);
  CHECK(plan[1].verdict == plan_verdict::skipped);
  CHECK(plan[1].stage == "ship");
  CHECK_THAT(plan[1].reason, Catch::Contains("stage condition"));
}
