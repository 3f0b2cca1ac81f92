// Discovery, recipe paths and extends (docs/running.md) on small trees in a temp directory.
#include <catch2/catch.hpp>

#include "recipe/discovery.hpp"
#include "recipe/recipe_chain.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace arun::io;

namespace {

struct temp_tree : arun::test::temp_dir {
  temp_tree() : arun::test::temp_dir("arun-disc") {}
  discovery_options options(std::vector<std::string> dirs = {}, std::string env_path = {}) const {
    discovery_options o;
    o.recipe_dirs = std::move(dirs);
    o.working_dir = root.string();
    o.home = (root / "home").string();
    o.recipe_path_env = std::move(env_path);
    return o;
  }
};

std::string errors_of(const load_result& r) {
  std::string all;
  for (const auto& d : r.diagnostics) all += format_diagnostic(d) + "\n";
  return all;
}

}  // namespace

TEST_CASE("the search order is -R, ARUN_RECIPE_PATH, the caller's dir, then the fixed places") {
  temp_tree t;
  const auto dirs = search_dirs(t.options({"/r1", "/r2"}, "/e1::/e2"), "/caller");
  const auto r = t.root.string();
  CHECK(dirs == std::vector<std::string>{"/r1", "/r2", "/e1", "/e2", "/caller", r + "/recipes", r + "/.claude/recipes",
                                         r + "/amplifier-bundle/recipes", r + "/home/.amplihack/.claude/recipes"});
}

TEST_CASE("names are also looked up in amplifier-bundle/recipes up to the git root and in AMPLIHACK_PACKAGE_RECIPE_DIR") {
  temp_tree t;
  t.write("project/.git/HEAD", "ref: refs/heads/main\n");
  t.write("project/amplifier-bundle/recipes/at-root.yaml", "name: r\n");
  t.write("project/sub/amplifier-bundle/recipes/in-sub.yaml", "name: s\n");
  t.write("amplifier-bundle/recipes/above-git.yaml", "name: above\n");
  t.write("package/from-package.yaml", "name: p\n");
  fs::create_directories(t.root / "project/sub/deeper");
  auto o = t.options();
  o.working_dir = (t.root / "project/sub/deeper/").string();
  o.package_recipe_dir = (t.root / "package").string();
  const auto p = (t.root / "project").string();
  const auto dirs = search_dirs(o);
  // ./…, then each directory above -C up to the work tree's root (not above it), the package dir, ~.
  const std::vector<std::string> tail(dirs.end() - 4, dirs.end());
  CHECK(tail == std::vector<std::string>{p + "/sub/amplifier-bundle/recipes", p + "/amplifier-bundle/recipes",
                                         o.package_recipe_dir, (t.root / "home/.amplihack/.claude/recipes").string()});
  CHECK(find_recipe("at-root", o).path == p + "/amplifier-bundle/recipes/at-root.yaml");
  CHECK(find_recipe("in-sub", o).path == p + "/sub/amplifier-bundle/recipes/in-sub.yaml");
  CHECK(find_recipe("from-package", o).path == o.package_recipe_dir + "/from-package.yaml");
  CHECK(find_recipe("above-git", o).path.empty());
  // Outside a git work tree nothing above -C is searched.
  o.working_dir = (t.root / "package").string();
  CHECK(search_dirs(o).size() == 5);
  // A -C that goes through the work tree and out again is outside it: nothing above is searched.
  o.working_dir = (t.root / "project/sub/../../package").string();
  CHECK(search_dirs(o).size() == 5);
}

TEST_CASE("the first match wins and .yaml comes before .yml") {
  temp_tree t;
  t.write("recipes/deploy.yml", "name: deploy-yml\n");
  t.write("recipes/deploy.yaml", "name: deploy-yaml\n");
  t.write("extra/deploy.yml", "name: from-r\n");
  t.write("home/.amplihack/.claude/recipes/only-home.yaml", "name: h\n");
  CHECK(find_recipe("deploy", t.options()).path == (t.root / "recipes/deploy.yaml").string());
  CHECK(find_recipe("deploy", t.options({(t.root / "extra").string()})).path == (t.root / "extra/deploy.yml").string());
  CHECK(find_recipe("only-home", t.options()).path == (t.root / "home/.amplihack/.claude/recipes/only-home.yaml").string());
  const auto missing = find_recipe("ghost", t.options());
  CHECK(missing.path.empty());
  CHECK(missing.looked_in.size() == 4);
}

TEST_CASE("names with '/', '..' or a leading '.' are refused") {
  CHECK(invalid_name_reason("a/b") == "a recipe name cannot contain '/'");
  CHECK(invalid_name_reason("a..b") == "a recipe name cannot contain '..'");
  CHECK(invalid_name_reason(".hidden") == "a recipe name cannot start with '.'");
  CHECK(invalid_name_reason("fine-name_1").empty());
  temp_tree t;
  t.write("recipes/.hidden.yaml", "name: h\n");
  CHECK(find_recipe(".hidden", t.options()).path.empty());
}

TEST_CASE("a RECIPE argument is a path when it looks like one") {
  CHECK(looks_like_path("dir/x"));
  CHECK(looks_like_path("x.yaml"));
  CHECK(looks_like_path("x.yml"));
  CHECK_FALSE(looks_like_path("deploy"));
}

TEST_CASE("relative recipe paths may use .. but must stay inside an allowed root, symlinks included") {
  temp_tree t;
  t.write("project/recipes/child.yaml", "name: c\n");
  t.write("project/shared/lib.yaml", "name: l\n");
  t.write("outside/secret.yaml", "name: s\n");
  fs::create_symlink(t.root / "outside/secret.yaml", t.root / "project/recipes/link.yaml");
  const std::vector<std::string> roots = {(t.root / "project").string()};
  std::string error;
  const auto caller = (t.root / "project/recipes").string();
  CHECK(resolve_inside("../shared/lib.yaml", caller, roots, error) == (t.root / "project/shared/lib.yaml").string());
  CHECK_FALSE(resolve_inside("../../outside/secret.yaml", caller, roots, error));
  CHECK_THAT(error, Catch::Contains("outside the recipe's directory"));
  CHECK_FALSE(resolve_inside("link.yaml", caller, roots, error));
  CHECK_THAT(error, Catch::Contains("resolves to " + (t.root / "outside/secret.yaml").string()));
  CHECK_FALSE(resolve_inside("missing.yaml", caller, roots, error));
  CHECK_THAT(error, Catch::StartsWith("recipe 'missing.yaml' not found"));
}

TEST_CASE("extends merges context, replaces steps in place and appends new ones") {
  temp_tree t;
  t.write("base.yaml", "name: base\ndescription: from base\ncontext: {who: parent, keep: 1}\n"
                       "hooks: {pre_step: echo pre}\nrecursion: {max_depth: 3}\n"
                       "steps:\n  - id: a\n    command: echo a\n  - id: b\n    command: echo parent-b\n");
  const auto child = t.write("child.yaml", "name: child\nextends: base\ncontext: {who: child}\n"
                                           "steps:\n  - id: b\n    command: echo child-b\n  - id: c\n    command: echo c\n");
  const auto r = load_recipe_chain(child, t.options());
  REQUIRE(r.value);
  const auto& m = *r.value;
  CHECK(m.name == "child");
  CHECK(m.description == "from base");
  CHECK(m.context.at("who") == "child");
  CHECK(m.context.at("keep") == 1);
  REQUIRE(m.steps.size() == 3);
  CHECK(m.steps[0].command == "echo a");
  CHECK(m.steps[1].command == "echo child-b");
  CHECK(m.steps[1].where.file == child);
  CHECK(m.steps[2].id == "c");
  CHECK(m.hooks.pre_step == "echo pre");
  CHECK(m.recursion.max_depth == 3);
}

TEST_CASE("extends chains through several parents, by name or by path") {
  temp_tree t;
  t.write("recipes/grand.yaml", "name: grand\ncontext: {level: grand, g: 1}\nsteps:\n  - id: g\n    command: echo g\n");
  t.write("lib/parent.yaml", "name: parent\nextends: grand\ncontext: {level: parent}\nsteps:\n  - id: p\n    command: echo p\n");
  const auto child = t.write("lib/child.yaml", "name: child\nextends: parent.yaml\nsteps:\n  - id: c\n    command: echo c\n");
  const auto r = load_recipe_chain(child, t.options());
  REQUIRE(r.value);
  CHECK(r.value->steps.size() == 3);
  CHECK(r.value->context.at("level") == "parent");
  CHECK(r.value->context.at("g") == 1);
}

TEST_CASE("an extends cycle and a missing parent are errors at the extends line") {
  temp_tree t;
  t.write("a.yaml", "name: a\nextends: b\nsteps:\n  - id: x\n    command: x\n");
  t.write("b.yaml", "name: b\nextends: a\nsteps:\n  - id: y\n    command: y\n");
  auto r = load_recipe_chain((t.root / "a.yaml").string(), t.options());
  CHECK_FALSE(r.value);
  CHECK_THAT(errors_of(r), Catch::Contains("b.yaml:2:10: error: extends forms a cycle: a.yaml -> b.yaml -> a.yaml"));
  const auto lonely = t.write("lonely.yaml", "name: l\nextends: nowhere\nsteps:\n  - id: x\n    command: x\n");
  r = load_recipe_chain(lonely, t.options());
  CHECK_FALSE(r.value);
  CHECK_THAT(errors_of(r), Catch::Contains("lonely.yaml:2:10: error: extends 'nowhere': no such recipe"));
}
