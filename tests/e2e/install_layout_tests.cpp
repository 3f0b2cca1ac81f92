// What arun finds beside itself (src/io/install_layout.*) and the commands built on it:
// `arun init`, the shipped example recipes in discovery, and the fake agent of
// `--agent-cli fake` wherever the binary is. (tests/package/package_test.py checks the same
// from a real install and from the .deb packages.)
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <filesystem>
#include <vector>

#include <sys/stat.h>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

// `binary ARGS...` in `dir`, with ARUN_FAKE_AGENT removed from the environment.
arun::test::arun_run run_binary(const std::string& binary, std::vector<std::string> args, const std::string& dir) {
  arun::io::process_spec spec;
  spec.launch.argv = {binary};
  spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
  spec.launch.env = arun::io::current_environment();
  std::erase_if(spec.launch.env, [](const std::string& e) { return e.starts_with("ARUN_FAKE_AGENT="); });
  spec.launch.working_dir = dir;
  spec.timeout = std::chrono::seconds(60);
  auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  REQUIRE(r.launched());
  return {r.exit_code.value_or(-1), r.out.text, r.err.text, {}};
}

const std::string hello_recipe = "name: hi\nsteps:\n  - id: ask\n    prompt: say hi\n";

}  // namespace

TEST_CASE("arun init writes a commented starter recipe that validates and runs, and keeps an existing file") {
  temp_dir dir("arun-e2e-init");
  const auto root = dir.root.string();
  auto r = run_arun({"init"}, root);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto file = dir.root / "recipe.yaml";
  REQUIRE(fs::exists(file));
  std::ifstream in(file);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  // The file is for the next person too: no path of this checkout, build or prefix (editors
  // map the schema in their settings), and the schema's path goes to stderr instead.
  CHECK(text.starts_with("# recipe: a recipe for arun."));
  CHECK(text.find(ARUN_SOURCE_DIR) == std::string::npos);
  CHECK(text.find(fs::path(ARUN_BINARY).parent_path().string()) == std::string::npos);
  CHECK(text.find("$schema") == std::string::npos);
  CHECK_THAT(r.err, Catch::Contains("editors: map " + std::string(ARUN_SOURCE_DIR) + "/schema/recipe.schema.json"));
  // What the comment says of foreach is what it does: one item at a time unless `parallel`.
  CHECK(text.find("one item at a time") != std::string::npos);
  CHECK(text.find("up to --max-concurrent at a time") == std::string::npos);
  r = run_arun({"explain", "recipe.yaml"}, root);
  CHECK_THAT(r.out, Catch::Contains("for each file in \"{{files}}\", 1 at a time"));
  CHECK(text.find("name: \"recipe\"\n") != std::string::npos);
  CHECK(run_arun({"validate", "--strict", "recipe.yaml"}, root).exit_code == 0);
  r = run_arun({"recipe.yaml", "-q", "--output-format", "json"}, root);
  CHECK(r.exit_code == 0);
  CHECK(arun::test::result_json(r).at("output") ==
        boost::json::parse(R"(["would process a.txt","would process b.txt"])"));

  SECTION("an existing file is kept unless --force") {
    std::ofstream(file) << "mine\n";
    r = run_arun({"init"}, root);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("recipe.yaml already exists") && Catch::Contains("--force"));
    std::ifstream again(file);
    CHECK(std::string(std::istreambuf_iterator<char>(again), {}) == "mine\n");
    CHECK(run_arun({"init", "--force"}, root).exit_code == 0);
    CHECK(run_arun({"validate", "recipe.yaml"}, root).exit_code == 0);
  }
  SECTION("a NAME that cannot name a recipe, or a place that cannot be written, is refused with the reason") {
    r = run_arun({"init", "my recipe"}, root);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("'my recipe' cannot name a recipe"));
    for (const std::string& bad : std::vector<std::string>{".hidden", "a.b", "a..b", "null.", std::string(101, 'x')})
      CHECK(run_arun({"init", bad}, root).exit_code == 2);
    ::mkfifo((dir.root / "pipe.yaml").c_str(), 0600);  // --force must not hang on it
    r = run_arun({"init", "pipe", "--force"}, root, std::chrono::seconds(10));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("not a regular file"));
    CHECK(run_arun({"init", "--", "-x"}, root).exit_code == 2);  // would read as an option
    CHECK(run_arun({"init", "null"}, root).exit_code == 0);      // quoted: a name, not YAML's null
    CHECK(run_arun({"validate", "null.yaml"}, root).exit_code == 0);
    r = run_arun({"init", "no/such/dir/x"}, root);
    CHECK(r.exit_code == 74);
    CHECK_THAT(r.err, Catch::Contains("cannot write no/such/dir/x.yaml: No such file or directory"));
    fs::create_symlink(dir.root / "elsewhere.yaml", dir.root / "linked.yaml");
    CHECK(run_arun({"init", "linked", "--force"}, root).exit_code == 74);  // never through a link
    CHECK_FALSE(fs::exists(dir.root / "elsewhere.yaml"));
  }
  SECTION("NAME names the recipe and its file") {
    CHECK(run_arun({"init", "nightly"}, root).exit_code == 0);
    CHECK(run_arun({"validate", "nightly.yaml"}, root).exit_code == 0);
    CHECK(run_arun({"init", "weekly.yml"}, root).exit_code == 0);
    CHECK(fs::exists(dir.root / "weekly.yml"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("arun list and discovery find the shipped tutorials and patterns after the user's own recipes") {
  temp_dir dir("arun-e2e-shipped");
  // From the repository root (its recipes/ holds only folders) and from anywhere else.
  for (const std::string& where : {std::string(ARUN_SOURCE_DIR), dir.root.string()}) {
    INFO(where);
    const auto r = run_arun({"list"}, where);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains(std::string(ARUN_SOURCE_DIR) + "/recipes/tutorials/01-hello.yaml"));
    CHECK_THAT(r.out, Catch::Contains(std::string(ARUN_SOURCE_DIR) + "/recipes/patterns/consensus.yaml"));
  }
  // A recipe of the user's with a shipped name wins: the shipped one is listed as shadowed.
  dir.write("recipes/01-hello.yaml", "name: my-hello\nsteps:\n  - id: a\n    command: echo mine\n");
  auto r = run_arun({"list"}, dir.root.string());
  CHECK_THAT(r.out, Catch::Contains("[shadowed]"));
  r = run_arun({"01-hello", "-q", "--output-format", "json"}, dir.root.string());
  CHECK(arun::test::result_json(r).at("output") == boost::json::value("mine"));
  // A shipped pattern runs by name from anywhere: its personas are in agents/ beside it.
  r = run_arun({"consensus", "--agent-cli", "fake", "-q", "--output-format", "json"}, dir.root.string(),
               std::chrono::seconds(90), {"ARUN_FAKE_AGENT=" + std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(arun::test::result_json(r).at("output").as_object().at("decision") == boost::json::value("yes"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("the fake agent of --agent-cli fake is found beside a copied binary, and otherwise the error says where arun looked") {
  temp_dir dir("arun-e2e-fake-agent");
  const auto copy = dir.root / "bin" / "arun";
  fs::create_directories(copy.parent_path());
  fs::copy_file(ARUN_BINARY, copy);
  dir.write("hi.yaml", hello_recipe);
  const auto root = dir.root.string();

  // Like any agent CLI that is not there for a step that must run: one error naming where
  // arun looked, and nothing runs (exit 2).
  auto r = run_binary(copy.string(), {"hi.yaml", "--agent-cli", "fake", "-q"}, root);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("the fake agent (--agent-cli fake) was not found"));
  CHECK_THAT(r.err, Catch::Contains((dir.root / "bin" / "fake-agent").string()));
  CHECK_THAT(r.err, Catch::Contains((dir.root / "share" / "arun" / "fake-agent").string()));
  CHECK_THAT(r.err, Catch::Contains("ARUN_FAKE_AGENT"));
  // Never the advice that just failed.
  CHECK_THAT(r.err, !Catch::Contains("rehearses"));
  // A recipe without agent steps does not need it.
  dir.write("plain.yaml", "name: plain\nsteps:\n  - id: a\n    command: echo plain\n");
  CHECK(run_binary(copy.string(), {"plain.yaml", "--agent-cli", "fake", "-q"}, root).exit_code == 0);

  SECTION("in ../share/arun, as an install lays it out") {
    fs::create_directories(dir.root / "share" / "arun");
    fs::copy_file(std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent", dir.root / "share" / "arun" / "fake-agent");
    r = run_binary(copy.string(), {"hi.yaml", "--agent-cli", "fake", "-q", "--output-format", "json"}, root);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("next to the binary") {
    fs::copy_file(std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent", dir.root / "bin" / "fake-agent");
    r = run_binary(copy.string(), {"hi.yaml", "--agent-cli", "fake", "-q", "--output-format", "json"}, root);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  SECTION("$ARUN_FAKE_AGENT naming nothing runnable is named in the error") {
    r = run_arun({"hi.yaml", "--agent-cli", "fake", "-q"}, root, std::chrono::seconds(60),
                 {"ARUN_FAKE_AGENT=" + root + "/missing-fake"});
    CHECK(r.exit_code == 2);  // the step must run: nothing runs without it
    CHECK_THAT(r.err, Catch::Contains(root + "/missing-fake ($ARUN_FAKE_AGENT)"));
  }
  SECTION("a sub-recipe named like a shipped example is not one: it is not found") {
    dir.write("caller.yaml", "name: caller\nsteps:\n  - id: call\n    recipe: consensus\n");
    r = run_arun({"validate", "caller.yaml"}, root);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("consensus"));
    CHECK_THAT(r.err, !Catch::Contains("recipes/patterns"));
  }
  CHECK(arun::test::leftover_processes().empty());
}
