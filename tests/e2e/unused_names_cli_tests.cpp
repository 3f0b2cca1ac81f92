// The built `arun` on names nothing uses (docs/running.md, "Names nothing uses"): a warning
// with its did-you-mean from both `validate` and a run, said once, and an error (exit 2,
// nothing run) under --strict. Conditions naming what only a caller declares run with it null.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <string>

namespace {

using arun::test::run_arun;

const std::string hello = "name: hello\ncontext:\n  who: world\nsteps:\n  - id: greet\n    command: echo hello {{who}}\n"
                          "    output: greeting\n";

}  // namespace

TEST_CASE("a --set of a name the recipe never reads warns once, runs, and fails under --strict") {
  arun::test::temp_dir dir("arun-unused");
  const auto file = dir.write("hello.yaml", hello);
  const std::string warning = "--set: warning: --set whom: the recipe reads no 'whom'";
  const auto run = run_arun({file, "--set", "whom=Ada", "--quiet"});
  CHECK(run.exit_code == 0);
  CHECK(arun::test::occurrences(run.err, warning) == 1);
  CHECK_THAT(run.err, Catch::Contains("help: did you mean 'who'?"));
  const auto validate = run_arun({"validate", file, "--set", "whom=Ada"});
  CHECK(validate.exit_code == 0);
  CHECK(arun::test::occurrences(validate.err, warning) == 1);
  CHECK_THAT(validate.out, Catch::Contains("valid (with warnings)"));
  const auto strict = run_arun({file, "--set", "whom=Ada", "--strict", "--output-format", "json"});
  CHECK(strict.exit_code == 2);
  CHECK_THAT(strict.err, Catch::Contains("--set: error: --set whom: the recipe reads no 'whom'"));
  CHECK_THAT(strict.out, !Catch::Contains("hello world"));
  CHECK(run_arun({"validate", file, "--set", "whom=Ada", "--strict"}).exit_code == 2);
  // A name it reads: nothing to say.
  const auto fine = run_arun({file, "--set", "who=Ada", "--quiet"});
  CHECK(fine.exit_code == 0);
  CHECK(fine.err.empty());
}

TEST_CASE("a --limit or limits: key naming no provider and no limit_group warns with the nearest name") {
  arun::test::temp_dir dir("arun-unused");
  const auto file = dir.write("fleet.yaml", "name: fleet\nlimits:\n  fakee: 3\nsteps:\n  - id: a\n    command: echo hi\n");
  const auto run = run_arun({file, "--limit", "fak=1", "--quiet"});
  CHECK(run.exit_code == 0);
  CHECK(arun::test::occurrences(run.err, "fleet.yaml:3:3: warning: 'limits' names 'fakee', which is no agent provider and no step's "
                       "limit_group: it limits nothing") == 1);
  CHECK(arun::test::occurrences(run.err, "--limit: warning: --limit fak: no agent provider and no step's limit_group is named 'fak': it "
                       "limits nothing") == 1);
  CHECK(arun::test::occurrences(run.err, "help: did you mean 'fake'?") == 2);
  // validate takes no --limit; it reports the recipe's limits key.
  const auto validate = run_arun({"validate", file, "--output-format", "json"});
  CHECK(validate.exit_code == 0);
  const auto doc = boost::json::parse(validate.out).as_object();
  REQUIRE(doc.at("diagnostics").as_array().size() == 1);
  const auto& d = doc.at("diagnostics").as_array()[0].as_object();
  CHECK(d.at("code") == "unused-name");
  CHECK(d.at("line") == 3);
  CHECK(d.at("column") == 3);
  CHECK(d.at("severity") == "warning");
  CHECK(run_arun({file, "--limit", "fak=1", "--strict", "--quiet"}).exit_code == 2);
  // A custom --agent-command's program is a provider; so is a step's limit_group.
  const auto own = dir.write("own.yaml", "name: own\nlimits: {my-agent: 2, api: 1}\nsteps:\n  - id: a\n    command: echo\n"
                                         "    limit_group: api\n");
  const auto custom = run_arun({own, "--agent-command", "my-agent {prompt_file}", "--strict", "--quiet"});
  CHECK(custom.exit_code == 0);
  CHECK(custom.err.empty());
}

TEST_CASE("a top-level output naming nothing warns, and the run's output is null") {
  arun::test::temp_dir dir("arun-unused");
  const auto file = dir.write("out.yaml", "name: out\noutput: reslt\nsteps:\n  - id: a\n    command: echo 42\n"
                                          "    output: result\n");
  const auto run = run_arun({file, "--output-format", "json", "--quiet"});
  CHECK(run.exit_code == 0);
  CHECK(arun::test::occurrences(run.err, "out.yaml:2:1: warning: the recipe's output 'reslt' names no step output or context variable") == 1);
  CHECK_THAT(run.err, Catch::Contains("did you mean 'result'?"));
  CHECK(arun::test::result_json(run).at("output").is_null());
  CHECK(run_arun({"validate", file, "--strict"}).exit_code == 2);
}

TEST_CASE("a depends_on typo is refused with the nearest id, at the name") {
  arun::test::temp_dir dir("arun-unused");
  const auto file = dir.write("dag.yaml", "name: dag\nsteps:\n  - id: build-server\n    command: echo b\n  - id: test\n"
                                          "    command: echo t\n    depends_on: [lint, build-sever]\n  - id: lint\n"
                                          "    command: echo l\n");
  const auto validate = run_arun({"validate", file});
  CHECK(validate.exit_code == 2);
  CHECK_THAT(validate.err, Catch::Contains("dag.yaml:7:24: error: step 'test' depends on 'build-sever', which no step "
                                           "has as id") &&
                               Catch::Contains("help: did you mean 'build-server'?"));
}

TEST_CASE("a condition naming what only a caller declares runs with it null, and a likely typo is refused") {
  arun::test::temp_dir dir("arun-unused");
  const auto fragment = dir.write("fragment.yaml", "name: fragment\nsteps:\n  - id: maybe\n    command: echo ran\n"
                                                   "    condition: caller_flag\n  - id: always\n    command: echo always\n"
                                                   "    output: last\n");
  const auto run = run_arun({fragment, "--output-format", "json", "--quiet"});
  CHECK(run.exit_code == 0);
  CHECK(arun::test::occurrences(run.err, "fragment.yaml:5:16: warning: undefined name 'caller_flag' in the condition of step 'maybe': "
                       "null unless a caller or --set provides it") == 1);
  const auto result = arun::test::result_json(run);
  const auto& steps = result.at("step_results").as_array();
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].at("status") == "skipped");  // null is false
  CHECK(steps[1].at("status") == "completed");
  // --set provides it: no warning, and the step runs.
  const auto given = run_arun({fragment, "--set", "caller_flag=true", "--output-format", "json", "--quiet"});
  CHECK(given.exit_code == 0);
  CHECK(given.err.empty());
  CHECK(arun::test::result_json(given).at("step_results").as_array()[0].at("status") == "completed");
  // A caller that declares it: the fragment runs under it, quietly.
  const auto caller = dir.write("caller.yaml", "name: caller\ncontext:\n  caller_flag: true\nsteps:\n  - id: call\n"
                                               "    recipe: fragment.yaml\n");
  const auto called = run_arun({caller, "--quiet"});
  CHECK(called.exit_code == 0);
  CHECK(called.err.empty());
  const auto typo = dir.write("typo.yaml", "name: typo\ncontext:\n  round: 1\nsteps:\n  - id: again\n    command: echo\n"
                                           "    condition: rounds < 3\n");
  const auto refused = run_arun({typo, "--quiet"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("typo.yaml:7:16: error: undefined name 'rounds' in the condition of step "
                                          "'again': it is null at run time") &&
                              Catch::Contains("help: did you mean 'round'?"));
  // --strict refuses both.
  CHECK(run_arun({fragment, "--strict", "--quiet"}).exit_code == 2);
  CHECK(run_arun({typo, "--strict", "--quiet"}).exit_code == 2);
}

TEST_CASE("a condition's {{name}} follows the bare name's rule: null and a warning, or an error for a likely typo") {
  arun::test::temp_dir dir("arun-unused");
  const auto fragment =
      dir.write("fragment.yaml", "name: fragment\ncontext:\n  round: 1\nsteps:\n  - id: flagged\n    command: echo ran\n"
                                 "    condition: \"{{caller_flag}} == 'yes'\"\n  - id: quoted\n    command: echo q\n"
                                 "    condition: \"'{{caller_flag}}' == ''\"\n");
  const auto run = run_arun({fragment, "--output-format", "json", "--quiet"});
  CHECK(run.exit_code == 0);
  CHECK(arun::test::occurrences(run.err, "fragment.yaml:7:17: warning: undefined variable 'caller_flag' in {{caller_flag}} of step "
                       "'flagged': null unless a caller or --set provides it") == 1);
  auto steps = arun::test::result_json(run).at("step_results").as_array();
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].at("status") == "skipped");    // null == 'yes' is false
  CHECK(steps[1].at("status") == "completed");  // inside quotes: the empty text
  const auto given = run_arun({fragment, "--set", "caller_flag=yes", "--output-format", "json", "--quiet"});
  CHECK(given.exit_code == 0);
  CHECK(given.err.empty());
  steps = arun::test::result_json(given).at("step_results").as_array();
  CHECK(steps[0].at("status") == "completed");
  CHECK(steps[1].at("status") == "skipped");
  CHECK(run_arun({fragment, "--strict", "--quiet"}).exit_code == 2);
  // A likely typo of a declared name is refused before anything runs.
  const auto typo = dir.write("typo.yaml", "name: typo\ncontext:\n  round: 1\nsteps:\n  - id: again\n    command: echo\n"
                                           "    condition: \"{{rounds}} < 3\"\n");
  const auto refused = run_arun({typo, "--quiet"});
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("typo.yaml:7:17: error: undefined variable 'rounds' in {{rounds}} of step "
                                          "'again': it is null at run time") &&
                              Catch::Contains("help: did you mean 'round'?"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a resume does not warn again about the run's own --set and --limit, and checks the ones given to it") {
  arun::test::temp_dir dir("arun-unused");
  const auto flag = (dir.root / "flag").string();
  const auto file = dir.write("res.yaml", "name: res\ncontext:\n  who: x\nsteps:\n  - id: a\n    command: echo {{who}}\n"
                                          "  - id: b\n    command: test -f " + flag + "\n");
  const auto sessions = (dir.root / "sessions").string();
  const auto run = run_arun({file, "--set", "whom=Ada", "--limit", "fak=1", "--session-dir", sessions, "--quiet"});
  CHECK(run.exit_code == 1);
  CHECK(arun::test::occurrences(run.err, "--set whom: the recipe reads no 'whom'") == 1);
  CHECK(arun::test::occurrences(run.err, "--limit fak:") == 1);
  dir.write("flag", "");
  const auto resumed = run_arun({"resume", "last", "--session-dir", sessions, "--quiet"});
  CHECK(resumed.exit_code == 0);
  CHECK(resumed.err.empty());
  // Given again to a resume, they are checked as given.
  std::filesystem::remove(flag);
  CHECK(run_arun({file, "--set", "whom=Ada", "--session-dir", sessions, "--quiet"}).exit_code == 1);
  dir.write("flag", "");
  const auto again = run_arun({"resume", "last", "--session-dir", sessions, "--set", "whim=1", "--limit", "fok=2",
                               "--quiet"});
  CHECK(again.exit_code == 0);
  CHECK(arun::test::occurrences(again.err, "--set whim: the recipe reads no 'whim'") == 1);
  CHECK(arun::test::occurrences(again.err, "--limit fok:") == 1);
  CHECK_THAT(again.err, !Catch::Contains("whom"));
  CHECK(arun::test::leftover_processes().empty());
}
