// arun's own log (issue 14 item 7): `arun.log` in the session (mode 0600), its level from
// --log-level or $ARUN_LOG, and what it records: spawns with their instance, signals sent and
// the SIGKILL after the grace, journal fsyncs, the run's end; --log-stderr copies it.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

const char* stubborn = R"(name: stubborn
steps:
  - id: quick
    command: echo quick
  - id: slow
    command: trap '' TERM; sleep 5
    timeout: 0.3
)";

fs::path only_session(const fs::path& root) {
  fs::path dir;
  for (const auto& e : fs::directory_iterator(root)) dir = e.path();
  return dir;
}

}  // namespace

TEST_CASE("arun log: spawns, signals, fsyncs and the end go to the session's arun.log") {
  arun::test::temp_dir dir{"arun-e2e-log"};
  const auto recipe = dir.write("stubborn.yaml", stubborn);
  const auto sessions = dir.root / "s";
  const auto r = run_arun({recipe, "--session-dir", sessions.string(), "-q", "--kill-grace", "0.2", "--log-level", "debug"},
                          dir.root.string());
  CHECK(r.exit_code == 1);
  const auto file = only_session(sessions) / "arun.log";
  const auto log = read_text(file);
  INFO(log);
  CHECK(log.find("info  [") != std::string::npos);
  CHECK(log.find("runs 'stubborn' from " + recipe) != std::string::npos);
  CHECK(log.find(" for quick: /bin/bash in ") != std::string::npos);
  CHECK(log.find(" for slow: /bin/bash in ") != std::string::npos);
  CHECK(log.find(": SIGTERM to its group (timed out)") != std::string::npos);
  CHECK(log.find("still running 0.200 s after SIGTERM: SIGKILL to its group") != std::string::npos);
  CHECK(log.find("ended: signal 9 after") != std::string::npos);
  CHECK(log.find("journal fsync") != std::string::npos);
  CHECK(log.find("run failed in ") != std::string::npos);
  struct stat st{};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(r.err.find("spawned pid") == std::string::npos);  // not on stderr unless asked

  SECTION("a child that waits for a slot says how long") {
    // Three members of a parallel group under -j 1: two wait for the slot.
    std::string group = "name: group\nsteps:\n";
    for (const char* id : {"a", "b", "c"})
      group += std::string("  - id: ") + id + "\n    parallel_group: g\n    command: sleep 0.2\n";
    const auto fan = dir.write("group.yaml", group);
    fs::remove_all(sessions);
    REQUIRE(run_arun({fan, "--session-dir", sessions.string(), "-q", "-j", "1", "--log-level", "debug"},
                     dir.root.string()).exit_code == 0);
    const auto text = read_text(only_session(sessions) / "arun.log");
    INFO(text);
    CHECK(text.find("] c waited ") != std::string::npos);
    CHECK(text.find(" ms for a slot (max_concurrent or an agent limit)") != std::string::npos);
  }

  SECTION("$ARUN_LOG sets the level; --log-stderr copies the log to stderr") {
    fs::remove_all(sessions);
    const auto warn = run_arun({recipe, "--session-dir", sessions.string(), "-q", "--kill-grace", "0.2", "--log-stderr"},
                               dir.root.string(), std::chrono::seconds(60), {"ARUN_LOG=warn"});
    const auto text = read_text(only_session(sessions) / "arun.log");
    CHECK(text.find("SIGKILL to its group") != std::string::npos);
    CHECK(text.find("spawned pid") == std::string::npos);
    CHECK(text.find("runs 'stubborn'") == std::string::npos);
    CHECK(warn.err.find("SIGKILL to its group") != std::string::npos);
  }
  SECTION("off: no log; a level that is not one is a warning") {
    fs::remove_all(sessions);
    run_arun({recipe, "--session-dir", sessions.string(), "-q", "--kill-grace", "0.2", "--log-level", "off"},
             dir.root.string());
    CHECK_FALSE(fs::exists(only_session(sessions) / "arun.log"));
    const auto bad = run_arun({recipe, "--session-dir", sessions.string(), "-q", "--kill-grace", "0.2"},
                              dir.root.string(), std::chrono::seconds(60), {"ARUN_LOG=loud"});
    CHECK(bad.err.find("ARUN_LOG=loud is not a valid value: it must be off, error, warn, info, debug or trace; ignored") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}
