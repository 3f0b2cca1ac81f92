// `arun logs` end to end: every instance's output kept in its session and named in the failure
// line, printed by instance glob and stream, bounded by --max-output, and followed with -f
// while another arun runs the session. Every test checks that no process is left.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct logs_project {
  arun::test::temp_dir dir{"arun-e2e-logs"};
  fs::path sessions = dir.root / "sessions";

  arun::test::arun_run arun(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string()});
    return run_arun(args, dir.root.string());
  }
  std::string only_session() const {
    std::vector<std::string> ids;
    for (const auto& e : fs::directory_iterator(sessions)) ids.push_back(e.path().filename().string());
    REQUIRE(ids.size() == 1);
    return ids[0];
  }
};

const char* fan_recipe = R"(name: fan-logs
steps:
  - id: fan
    foreach: "[1,2,3]"
    as: n
    command: |
      echo "out {{n}}"
      echo "err {{n}}" >&2
      [ {{n}} -ne 2 ] || exit 3
  - id: after
    command: echo after
)";

}  // namespace

TEST_CASE("logs: every instance's output is kept, named in the failure line and printed by glob and stream") {
  logs_project p;
  const auto recipe = p.dir.write("fan.yaml", fan_recipe);
  const auto run = p.arun({recipe, "-k", "--progress", "plain"});
  REQUIRE(run.exit_code == 1);  // fan[1] failed; -k ran the rest
  const auto id = p.only_session();
  const auto logs = p.sessions / id / "logs";
  CHECK(read_text(logs / "fan[1].err") == "err 2\n");
  CHECK(read_text(logs / "fan[2].out") == "out 3\n");
  CHECK(read_text(logs / "after.out") == "after\n");
  // The failure line of fan[1] names the log of its stderr.
  CHECK(run.err.find("     log: " + (logs / "fan[1].err").string() + "\n") != std::string::npos);

  SECTION("one instance and stream: the bytes alone") {
    const auto r = p.arun({"logs", id, "fan[1]", "--stream", "err"});
    CHECK(r.exit_code == 0);
    CHECK(r.out == "err 2\n");
  }
  SECTION("several: each under a header, in run order, iterations by number") {
    const auto r = p.arun({"logs", id, "--stream", "out"});
    CHECK(r.exit_code == 0);
    CHECK(r.out ==
          "==> fan[0] (stdout) <==\nout 1\n\n==> fan[1] (stdout) <==\nout 2\n\n==> fan[2] (stdout) <==\nout 3\n\n"
          "==> after (stdout) <==\nafter\n");
  }
  SECTION("--failed: only the failed instances' logs, also within a glob") {
    auto r = p.arun({"logs", id, "--failed"});
    CHECK(r.exit_code == 0);
    CHECK(r.out == "==> fan[1] (stdout) <==\nout 2\n\n==> fan[1] (stderr) <==\nerr 2\n");
    r = p.arun({"logs", id, "--failed", "--stream", "err"});
    CHECK(r.out == "err 2\n");
    r = p.arun({"logs", id, "after", "--failed"});
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.find("no instance of session " + id + " matching 'after' failed") != std::string::npos);
    // A glob that matches no instance at all is a mistake, not "nothing failed".
    r = p.arun({"logs", id, "fun*", "--failed"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("no log of session " + id + " matches 'fun*'") != std::string::npos);
    CHECK(p.arun({"logs", id, "--failed", "--transcript"}).exit_code == 2);
  }
  SECTION("a glob that matches nothing says which instances have output") {
    const auto r = p.arun({"logs", id, "fun*"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("no log of session " + id + " matches 'fun*'; instances with output: fan[0], fan[1], fan[2], after") !=
          std::string::npos);
  }
  SECTION("a session that does not exist, or is not an id") {
    CHECK(p.arun({"logs", "20990101-000000-abcdef"}).err.find("no session '20990101-000000-abcdef' in ") !=
          std::string::npos);
    const auto bad = p.arun({"logs", "../x"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("no session '../x' in ") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("logs: --max-output bounds each log, which keeps the newest lines") {
  logs_project p;
  const auto recipe = p.dir.write("loud.yaml", "name: loud\nsteps:\n  - id: loud\n    command: seq 1 20000\n");
  REQUIRE(p.arun({recipe, "-q", "--max-output", "4096"}).exit_code == 0);
  const auto logs = p.sessions / p.only_session() / "logs";
  CHECK(fs::file_size(logs / "loud.out") <= 4096);
  CHECK(fs::file_size(logs / "loud.out.1") <= 4096);
  const auto r = p.arun({"logs", p.only_session(), "loud"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.ends_with("\n19999\n20000\n"));
  CHECK(r.out.size() > 4096);  // the rotated file first, then the current one
  CHECK(r.out.find("\n1\n2\n") == std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("logs: -f follows a running session's output and ends when the run ends") {
  logs_project p;
  const auto gate = p.dir.root / "go";
  const auto recipe = p.dir.write("slow.yaml", "name: slow\nsteps:\n  - id: talk\n    command: |\n"
                                               "      echo first\n"
                                               "      while [ ! -e " + gate.string() + " ]; do sleep 0.05; done\n"
                                               "      echo second\n");
  fs::create_directories(p.dir.root / "run");
  arun::test::background_arun run({recipe, "-q", "--session-dir", p.sessions.string()}, p.dir.root / "run");
  // The session exists once the run started; its first line reaches the log within a second.
  std::string id;
  for (int i = 0; i < 200 && id.empty(); ++i) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(p.sessions, ec)) id = e.path().filename().string();
    if (id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  REQUIRE_FALSE(id.empty());
  fs::create_directories(p.dir.root / "follow");
  arun::test::background_arun follow({"logs", id, "-f", "--session-dir", p.sessions.string()}, p.dir.root / "follow");
  bool saw_first = false;
  for (int i = 0; i < 400 && !saw_first; ++i) {
    saw_first = read_text(follow.out).find("first\n") != std::string::npos;
    if (!saw_first) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  CHECK(saw_first);
  // Still following: the run has not ended.
  CHECK(read_text(follow.out).find("second") == std::string::npos);
  std::ofstream(gate) << "go";
  CHECK(run.wait_exit(std::chrono::seconds(30)) == 0);
  CHECK(follow.wait_exit(std::chrono::seconds(10)) == 0);
  CHECK(read_text(follow.out) == "==> talk (stdout) <==\nfirst\nsecond\n");
  CHECK(arun::test::leftover_processes().empty());
}
