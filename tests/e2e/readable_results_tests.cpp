// Results people can read (issue 14 item 3): the text result shows the recipe's output, each
// failure's relevant stderr lines and log, and a summary; a failed run's JSON result and
// state.json carry its error; `sessions show` shows the output, the error and the output
// lines; the progress shortens a long line and caps a step's echoed lines.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

const char* failing_recipe = R"(name: failing
output: summary
steps:
  - id: ok
    command: echo fine
    output: summary
  - id: fan
    foreach: '[1,2,3]'
    as: n
    command: |
      echo "processing {{n}}"
      echo "warning: something minor" >&2
      if [ {{n}} = 2 ]; then
        echo "Error: item 2 is broken" >&2
        for i in 1 2 3 4; do echo "trace line $i" >&2; done
        exit 1
      fi
)";

std::string only_session(const fs::path& root) {
  std::string id;
  for (const auto& e : fs::directory_iterator(root)) id = e.path().filename().string();
  return id;
}

}  // namespace

TEST_CASE("results: a failed run's text shows the output, the failure's lines and log, and a summary") {
  arun::test::temp_dir dir{"arun-e2e-results"};
  const auto sessions = dir.root / "sessions";
  const auto recipe = dir.write("failing.yaml", failing_recipe);
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "-q"}, dir.root.string());
  CHECK(r.exit_code == 1);
  const auto id = only_session(sessions);
  const auto log = (sessions / id / "logs" / "fan[1].err").string();
  CHECK(r.out.starts_with("failing: failed in "));
  CHECK(r.out.find("\n  completed ok (") != std::string::npos);
  // The failure's line, its relevant stderr lines (the error line, then the last three) and
  // log, the output the recipe names, and the counts, in that order; the error is the loop's
  // line already, so it is not said again.
  const std::string tail = "iterations 1/3 completed, 1 failed, 1 not run step 'fan[1]' (item: 2): exit code 1\n"
                           "            | Error: item 2 is broken\n"
                           "            | …\n"
                           "            | trace line 2\n"
                           "            | trace line 3\n"
                           "            | trace line 4\n"
                           "            log: " + log + "\n"
                           "output: fine\n"
                           "2 steps: 1 completed, 1 failed · 3 iterations: 1 completed, 1 failed, 1 not run\n"
                           "resume with: arun resume " + id + "\n";
  CHECK(r.out.ends_with(tail));
  CHECK(read_text(log) == "warning: something minor\nError: item 2 is broken\ntrace line 1\ntrace line 2\n"
                          "trace line 3\ntrace line 4\n");

  SECTION("JSON and state.json carry the run's error and output; JSON names the log") {
    fs::remove_all(sessions);
    const auto j = run_arun({recipe, "--session-dir", sessions.string(), "-q", "--output-format", "json"}, dir.root.string());
    const auto result = arun::test::result_json(j);
    CHECK(result.at("error") == "step 'fan[1]' (item: 2): exit code 1");
    const auto session = only_session(sessions);
    CHECK(result.at("step_results").at(1).at("log").as_string() == (sessions / session / "logs" / "fan[1].err").string());
    const auto state = boost::json::parse(read_text(sessions / session / "state.json")).as_object();
    CHECK(state.at("error") == "step 'fan[1]' (item: 2): exit code 1");
    CHECK(state.at("output") == "fine");

    const auto show = run_arun({"sessions", "show", session, "--session-dir", sessions.string()}, dir.root.string());
    CHECK(show.exit_code == 0);
    CHECK(show.out.find("\noutput   fine\n") != std::string::npos);
    CHECK(show.out.find("\nerror    step 'fan[1]' (item: 2): exit code 1\n") != std::string::npos);
    CHECK(show.out.find("\nlogs     arun logs " + session + " [INSTANCE-GLOB]\n") != std::string::npos);
    CHECK(show.out.find("step_output    fan[1] | Error: item 2 is broken\n") != std::string::npos);
    CHECK(show.out.find("step_end       fan[1] failed: step 'fan[1]' (item: 2): exit code 1\n") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("results: the progress shortens a long line and echoes at most 20 lines of a step") {
  arun::test::temp_dir dir{"arun-e2e-results-progress"};
  const auto recipe = dir.write("long.yaml", "name: long-lines\nsteps:\n"
                                             "  - id: list\n    command: seq -s, 1 2000 | sed 's/.*/[&]/'\n"
                                             "    output: items\n"
                                             "  - id: many\n    command: seq 1 50\n");
  const auto r = run_arun({recipe, "--session-dir", (dir.root / "s").string(), "--progress", "plain"}, dir.root.string());
  CHECK(r.exit_code == 0);
  const auto session = only_session(dir.root / "s");
  CHECK(r.err.find("     list | [1,2,3,4,5,") != std::string::npos);
  CHECK(r.err.find("… (2,000 items, 8.7 KB)\n") != std::string::npos);
  CHECK(r.err.find("1999,2000]") == std::string::npos);
  CHECK(r.err.find("     many | 20\n") != std::string::npos);
  CHECK(r.err.find("     many | 21\n") == std::string::npos);
  CHECK(r.err.find("     many | … 30 more lines: arun logs " + session + " 'many'\n") != std::string::npos);
  // The text result's output line is one line too.
  CHECK(r.out.find("\noutput: 1\xe2\x80\xa6 (50 lines, 140 bytes)\n") != std::string::npos);
  // -v shows every line whole.
  const auto v = run_arun({recipe, "--session-dir", (dir.root / "s").string(), "-v"}, dir.root.string());
  CHECK(v.err.find("     many | 50\n") != std::string::npos);
  CHECK(v.err.find("1999,2000]") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}
