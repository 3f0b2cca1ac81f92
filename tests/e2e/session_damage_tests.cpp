// Damage to a session on disk is noticed and said before a resume runs anything: a damaged
// journal line, a deleted journal, a corrupt state.json (rebuilt from origin.json).
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct failed_session {
  arun::test::temp_dir dir{"arun-e2e-damage"};
  fs::path sessions = dir.root / "sessions";
  fs::path log = dir.root / "ran.txt";
  fs::path session;

  failed_session() {
    // `last` fails until the file `fixed` exists: the session stays resumable.
    const auto file = dir.write("r.yaml", "name: r\nsteps:\n"
                                          "  - id: a\n    command: echo a >> " + log.string() + "\n"
                                          "  - id: b\n    command: echo b >> " + log.string() + "\n"
                                          "  - id: last\n    command: test -e " + (dir.root / "fixed").string() + "\n");
    const auto r = run_arun({file, "--session-dir", sessions.string(), "-q"}, dir.root.string());
    REQUIRE(r.exit_code == 1);
    session = fs::directory_iterator(sessions)->path();
    dir.write("fixed", "");
  }
  arun::test::arun_run resume() const {
    return run_arun({"resume", session.filename().string(), "--session-dir", sessions.string(), "-q"}, dir.root.string());
  }
  int runs_of(const std::string& step) const {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line == step;
    return n;
  }
};

void replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  auto text = read_text(file);
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(file, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("resume warns about a damaged journal line and runs that step again") {
  failed_session s;
  replace_in(s.session / "journal.jsonl", "\"step_id\":\"a\"", "\"step_id\":\"A\"");
  const auto r = s.resume();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("warning: 1 line of " + (s.session / "journal.jsonl").string() +
                                    " is damaged (line 1): the step instances recorded there run again"));
  CHECK(s.runs_of("a") == 2);
  CHECK(s.runs_of("b") == 1);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("resume warns about a deleted journal, and rebuilds a corrupt state.json") {
  failed_session s;
  fs::remove(s.session / "journal.jsonl");
  std::ofstream(s.session / "state.json", std::ios::trunc) << "{\"format\": 1, \"stat";
  const auto r = s.resume();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("state.json is not a JSON object") &&
                        Catch::Contains("rebuilt from origin.json and the journal"));
  CHECK(s.runs_of("a") == 2);
  CHECK(s.runs_of("b") == 2);
  CHECK(boost::json::parse(read_text(s.session / "state.json")).at("status") == "completed");
  CHECK(arun::test::leftover_processes().empty());
}
