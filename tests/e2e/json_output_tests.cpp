// --output-format json of validate, explain, list, agents list, --dry-run and run: one
// document each, one vocabulary (format_version, arun_version, step_id), and a stdout that
// cannot be written is an error exit, never a silent success.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>

#include <string>

namespace json = boost::json;
using arun::test::epoch_seconds;
using arun::test::result_json;
using arun::test::run_arun;

namespace {

std::string arun_version() {
  const auto r = run_arun({"--version"});
  return r.out.substr(r.out.find(' ') + 1, r.out.find('\n') - r.out.find(' ') - 1);
}

void check_header(const json::object& doc) {
  CHECK(doc.at("format_version") == 1);
  CHECK(doc.at("arun_version") == json::value(arun_version()));
}

// `arun ARGS > /dev/full`: exit code and stderr.
arun::test::arun_run run_into_full_disk(const std::vector<std::string>& args) {
  std::vector<std::string> shell = {"/bin/bash", "-c", "exec \"$@\" > /dev/full", "bash", ARUN_BINARY};
  shell.insert(shell.end(), args.begin(), args.end());
  arun::io::process_spec spec;
  spec.launch.argv = shell;
  spec.launch.env = arun::io::current_environment();
  spec.launch.working_dir = ARUN_SOURCE_DIR;
  auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  REQUIRE(r.launched());
  return {r.exit_code.value_or(-1), r.out.text, r.err.text, {}};
}

}  // namespace

TEST_CASE("validate --output-format json: every diagnostic with position, span, code and help") {
  arun::test::temp_dir dir;
  const auto bad = dir.write("bad.yaml",
                             "name: b\n"
                             "x-owner: team\n"
                             "context: {greeting: hi}\n"
                             "steps:\n"
                             "  - id: a\n"
                             "    command: |\n"
                             "      echo start\n"
                             "      echo {{greting}}\n"
                             "    depends_on: [nope]\n");
  auto r = run_arun({"validate", bad, "--output-format", "json"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.empty());  // everything is in the document
  auto doc = result_json(r);
  check_header(doc);
  CHECK(doc.at("recipe") == json::value(bad));
  CHECK(doc.at("file") == json::value(bad));
  CHECK(doc.at("valid") == false);
  CHECK(doc.at("errors") == 2);
  CHECK(doc.at("warnings") == 1);
  const auto& ds = doc.at("diagnostics").as_array();
  REQUIRE(ds.size() == 3);
  // Sorted by position, as the text form is.
  CHECK(ds[0] == json::parse(R"({"file":")" + bad + R"(","line":2,"column":1,"end_column":8,"severity":"warning",
        "code":"unknown-key","message":"unknown key 'x-owner' in the recipe","help":null,"key":"x-owner"})"));
  CHECK(ds[1].at("line") == 8);
  CHECK(ds[1].at("column") == 12);
  CHECK(ds[1].at("end_column") == 23);  // exclusive: {{greting}} is 11 columns
  CHECK(ds[1].at("code") == "undefined-name");
  CHECK(ds[1].at("help") == "did you mean 'greeting'?");
  CHECK(ds[2].at("code") == "depends-on");
  CHECK(ds[2].at("severity") == "error");

  // Clean: valid, no diagnostics, exit 0.
  const auto good = dir.write("good.yaml", "name: g\nsteps:\n  - id: a\n    command: echo hi\n");
  r = run_arun({"validate", good, "--output-format", "json"});
  CHECK(r.exit_code == 0);
  doc = result_json(r);
  CHECK(doc.at("valid") == true);
  CHECK(doc.at("diagnostics").as_array().empty());

  // Shell and YAML mistakes have their own codes.
  const auto shell = dir.write("shell.yaml", "name: s\nsteps:\n  - id: a\n    command: |\n      if true; then\n        echo x\n");
  doc = result_json(run_arun({"validate", shell, "--output-format", "json"}));
  CHECK(doc.at("diagnostics").at(0).at("code") == "shell-syntax");
  const auto yaml = dir.write("yaml.yaml", "name: y\nsteps:\n  - id: a\n    command: {{x}}\n");
  doc = result_json(run_arun({"validate", yaml, "--output-format", "json"}));
  CHECK(doc.at("diagnostics").at(0).at("code") == "invalid-field");
  CHECK_THAT(std::string(doc.at("diagnostics").at(0).at("help").as_string()), Catch::Contains("quote"));

  // No recipe file: still one document, with the exit codes of the text form.
  r = run_arun({"validate", "no/such.yaml", "--output-format", "json"});
  CHECK(r.exit_code == 3);
  doc = result_json(r);
  CHECK(doc.at("file").is_null());
  CHECK(doc.at("diagnostics").at(0).at("code") == "recipe-not-found");
  CHECK(doc.at("diagnostics").at(0).at("line").is_null());
  r = run_arun({"validate", "--output-format", "json"});
  CHECK(r.exit_code == 4);
  CHECK(result_json(r).at("diagnostics").at(0).at("code") == "no-recipe");
  CHECK(run_arun({"validate", good, "--output-format", "yaml"}).exit_code == 2);
}

TEST_CASE("explain --output-format json: the recipe, its steps with only the keys they use, and stages") {
  arun::test::temp_dir dir;
  const auto file = dir.write("views.yaml",
                              "name: views\ndescription: shows views\ncontext: {n: 1}\nsteps:\n"
                              "  - id: first\n    command: echo one\n    timeout: 30\n"
                              "  - id: fan\n    foreach: [1, 2]\n    parallel: 2\n    command: echo {{item}}\n"
                              "    depends_on: [first]\n    on_error: continue\n    output: seen\n");
  const auto r = run_arun({"explain", file, "--output-format", "json"});
  CHECK(r.exit_code == 0);
  const auto doc = result_json(r);
  check_header(doc);
  CHECK(doc.at("recipe").at("name") == "views");
  CHECK(doc.at("recipe").at("context") == json::parse(R"({"n":1})"));
  CHECK(doc.at("recipe").at("execution") == "sequential");
  CHECK(doc.at("steps").at(0) == json::parse(R"({"step_id":"first","type":"bash","command":"echo one","timeout":30.0})"));
  const auto& fan = doc.at("steps").at(1).as_object();
  CHECK(fan.at("step_id") == "fan");
  CHECK(fan.at("foreach") == json::parse(R"({"as":"item","items":[1,2],"max_concurrent":2,"max_iterations":10000})"));
  CHECK(fan.at("depends_on") == json::parse(R"(["first"])"));
  CHECK(fan.at("on_error") == "continue");
  CHECK(fan.at("output") == "seen");
  CHECK(doc.at("stages").as_array().empty());

  const auto staged = dir.write("staged.yaml",
                                "name: staged\nstages:\n"
                                "  - name: build\n    approval: {required: true, prompt: \"Ship {{artifact}}?\"}\n"
                                "    steps:\n      - id: make\n        command: echo a.tar\n        output: artifact\n");
  const auto stage = result_json(run_arun({"explain", staged, "--output-format", "json"})).at("stages").at(0);
  CHECK(stage.at("name") == "build");
  CHECK(stage.at("approval").at("when") == "after");
  CHECK(stage.at("steps").at(0).at("step_id") == "make");
}

TEST_CASE("list and agents list --output-format json: every entry, valid or not, shadowed or not") {
  arun::test::temp_dir dir;
  dir.write("a/one.yaml", "name: one\nversion: 2.0.0\ndescription: the first\nsteps:\n  - id: a\n    command: echo ok\n");
  dir.write("a/broken.yaml", "name: broken\nsteps: 3\n");
  dir.write("b/one.yaml", "name: other\nsteps:\n  - id: a\n    command: x\n");
  auto r = run_arun({"list", "-R", (dir.root / "a").string(), "-R", (dir.root / "b").string(), "-C", dir.root.string(),
                     "--output-format", "json"});
  CHECK(r.exit_code == 0);
  auto doc = result_json(r);
  check_header(doc);
  const auto& recipes = doc.at("recipes").as_array();
  REQUIRE(recipes.size() >= 3);
  CHECK(recipes[0] == json::parse(R"({"name":"broken","version":null,"description":"","path":")" +
                                  (dir.root / "a/broken.yaml").string() + R"(","valid":false,"shadowed":false})"));
  CHECK(recipes[1].at("name") == "one");
  CHECK(recipes[1].at("version") == "2.0.0");
  CHECK(recipes[1].at("shadowed") == false);
  CHECK(recipes[2].at("path") == json::value((dir.root / "b/one.yaml").string()));
  CHECK(recipes[2].at("shadowed") == true);

  dir.write("agents/ns/rev.md", "---\ndescription: Reviews\n---\nbody\n");
  dir.write("agents/bad.md", "---\nmodel: [unclosed\n---\nbody\n");
  r = run_arun({"agents", "list", "--agent-dir", (dir.root / "agents").string(), "-C", dir.root.string(),
                "--output-format", "json"});
  CHECK(r.exit_code == 0);
  doc = result_json(r);
  check_header(doc);
  bool saw_rev = false, saw_bad = false;
  for (const auto& a : doc.at("agents").as_array()) {
    if (a.at("reference") == "ns:rev") {
      saw_rev = true;
      CHECK(a.at("description") == "Reviews");
      CHECK(a.at("valid") == true);
      CHECK(a.at("error").is_null());
      CHECK(a.at("shadowed") == false);
    }
    if (a.at("reference") == "bad") {
      saw_bad = true;
      CHECK(a.at("valid") == false);
      CHECK(a.at("error").is_string());
    }
  }
  CHECK(saw_rev);
  CHECK(saw_bad);
}

TEST_CASE("run and --dry-run JSON: the header, step_id, and when the run and each step started and ended") {
  arun::test::temp_dir dir;
  const auto file = dir.write("r.yaml",
                              "name: timed\nsteps:\n  - id: first\n    command: sleep 0.2; echo one\n"
                              "  - id: never\n    condition: 'false'\n    command: echo no\n");
  auto r = run_arun({"--dry-run", file, "--output-format", "json"});
  CHECK(r.exit_code == 0);
  auto doc = result_json(r);
  check_header(doc);
  CHECK(doc.at("dry_run") == true);
  CHECK(doc.at("steps").at(0).at("step_id") == "first");
  CHECK_FALSE(doc.at("steps").at(0).as_object().contains("step"));

  r = run_arun({file, "--output-format", "json", "-q", "--session-dir", (dir.root / "sessions").string()});
  CHECK(r.exit_code == 0);
  doc = result_json(r);
  check_header(doc);
  const double run_start = epoch_seconds(doc.at("started_at").as_string());
  const double run_end = epoch_seconds(doc.at("ended_at").as_string());
  const auto& first = doc.at("step_results").at(0);
  const double step_start = epoch_seconds(first.at("started_at").as_string());
  const double step_end = epoch_seconds(first.at("ended_at").as_string());
  CHECK(run_start <= step_start);
  CHECK(step_end - step_start >= 0.19);  // the step's sleep
  CHECK(step_end <= run_end);
  CHECK(run_end - run_start == Approx(doc.at("duration").as_double()).margin(0.002));
  // A skipped step never started.
  CHECK(doc.at("step_results").at(1).at("status") == "skipped");
  CHECK(doc.at("step_results").at(1).at("started_at").is_null());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a stdout that cannot be written is exit 74 with the reason, the session keeps the result") {
  arun::test::temp_dir dir;
  const auto file = dir.write("r.yaml", "name: full\nsteps:\n  - id: a\n    command: echo hi\n");
  const auto sessions = (dir.root / "sessions").string();
  auto r = run_into_full_disk({file, "-q", "--session-dir", sessions});
  CHECK(r.exit_code == 74);
  CHECK_THAT(r.err, Catch::Contains("arun: cannot write to stdout: No space left on device"));
  CHECK_THAT(r.err, Catch::Contains("its session keeps the result: arun sessions show "));
  CHECK(run_arun({"sessions", "list", "--session-dir", sessions}).out.find("completed") != std::string::npos);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{file, "--dry-run"}, {file, "--output-format", "json", "-q", "--session-dir", sessions},
        {"validate", file}, {"validate", file, "--output-format", "json"}, {"explain", file}, {"graph", file},
        {"list", "-R", dir.root.string()}, {"agents", "list", "--output-format", "json"},
        {"sessions", "list", "--session-dir", sessions}, {"sessions", "list", "--session-dir", sessions, "--output-format", "json"}}) {
    INFO(args.at(0) << " " << args.at(1));
    r = run_into_full_disk(args);
    CHECK(r.exit_code == 74);
    CHECK_THAT(r.err, Catch::Contains("cannot write to stdout"));
  }
  CHECK(arun::test::leftover_processes().empty());
}
