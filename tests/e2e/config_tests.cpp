// Defaults and housekeeping (issue 14 item 8): the user's config file, the project's
// `.arun.yaml` and ARUN_* variables, later winning, shown by `arun config` with their sources;
// a bad config is an error with its file, line and caret; retention prunes old sessions when
// a run starts (never one waiting for approval); `sessions clean --dry-run` removes nothing.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct config_project {
  arun::test::temp_dir dir{"arun-e2e-config"};
  fs::path home = dir.root / "xdg";
  fs::path project = dir.root / "project";
  fs::path sessions = dir.root / "sessions";

  config_project() { fs::create_directories(project); }
  std::vector<std::string> env(std::vector<std::string> more = {}) const {
    more.push_back("XDG_CONFIG_HOME=" + home.string());
    for (const char* unset : {"ARUN_MAX_CONCURRENT", "ARUN_COLOR", "ARUN_RETENTION_DAYS", "ARUN_RETENTION_SESSIONS",
                              "ARUN_SESSION_DIR", "ARUN_LOG"})
      if (std::find_if(more.begin(), more.end(), [&](const std::string& e) { return e.starts_with(unset); }) == more.end())
        more.emplace_back(unset);
    return more;
  }
  arun::test::arun_run arun(std::vector<std::string> args, std::vector<std::string> more_env = {}) const {
    return run_arun(std::move(args), project.string(), std::chrono::seconds(60), env(std::move(more_env)));
  }
};

std::size_t sessions_in(const fs::path& root) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) n += e.is_directory() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("config: the user's file, the project's .arun.yaml and ARUN_* set defaults, shown with their sources") {
  config_project p;
  p.dir.write("xdg/arun/config.yaml", "max_concurrent: 3\nsession_dir: " + p.sessions.string() + "\ncolor: always\n");
  p.dir.write("project/.arun.yaml", "# the project's\ncolor: never\n");
  const auto r = p.arun({"config", "--output-format", "json"}, {"ARUN_RETENTION_DAYS=7"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto doc = arun::test::result_json(r);
  const auto& s = doc.at("settings");
  CHECK(s.at("max_concurrent").at("value") == "3");
  CHECK(s.at("max_concurrent").at("source").as_string() == (p.home / "arun/config.yaml").string() + ":1");
  CHECK(s.at("color").at("value") == "never");
  CHECK(s.at("color").at("source") == ".arun.yaml:2");
  CHECK(s.at("retention_days").at("value") == "7");
  CHECK(s.at("retention_days").at("source") == "$ARUN_RETENTION_DAYS");
  CHECK(s.at("retention_sessions").at("source") == "default");
  const auto text = p.arun({"config"});
  CHECK(text.out.find("max_concurrent      3            " + (p.home / "arun/config.yaml").string() + ":1\n") !=
        std::string::npos);

  SECTION("a run takes them: its session lands in the configured directory, with -j 3; an option wins") {
    p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
    REQUIRE(p.arun({"r.yaml", "-q"}).exit_code == 0);
    REQUIRE(sessions_in(p.sessions) == 1);
    fs::path session;
    for (const auto& e : fs::directory_iterator(p.sessions)) session = e.path();
    CHECK(read_text(session / "arun.log").find(", -j 3") != std::string::npos);
    REQUIRE(p.arun({"r.yaml", "-q", "-j", "5", "--session-dir", (p.dir.root / "other").string()}).exit_code == 0);
    for (const auto& e : fs::directory_iterator(p.dir.root / "other")) session = e.path();
    CHECK(read_text(session / "arun.log").find(", -j 5") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("config: a bad value is an error with its place; an unknown key a warning with a suggestion") {
  config_project p;
  p.dir.write("project/.arun.yaml", "max_concurent: 3\nmax_concurrent: lots\n");
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  const auto r = p.arun({"r.yaml", "--session-dir", p.sessions.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(".arun.yaml:1:1: warning: unknown key 'max_concurent' (ignored)") != std::string::npos);
  CHECK(r.err.find("did you mean 'max_concurrent'?") != std::string::npos);
  CHECK(r.err.find(".arun.yaml:2:17: error: 'max_concurrent' must be a whole number from 1 to 4096\n  |\n2 | "
                   "max_concurrent: lots\n  |                 ^") != std::string::npos);
  CHECK_FALSE(fs::exists(p.sessions));
  // `arun config` still shows what it can, and says what is wrong.
  const auto shown = p.arun({"config"});
  CHECK(shown.exit_code == 2);
  CHECK(shown.out.find("max_concurrent      8") != std::string::npos);
  const auto env = p.arun({"config"}, {"ARUN_MAX_CONCURRENT=0"});
  CHECK(env.err.find("ARUN_MAX_CONCURRENT=0 is not a valid value: it must be a whole number from 1 to 4096; ignored") !=
        std::string::npos);
}

TEST_CASE("config: retention prunes old sessions when a run starts, never one waiting; clean --dry-run removes nothing") {
  config_project p;
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  p.dir.write("project/gate.yaml", "name: gate\nsteps:\n  - id: g\n    requires_approval: true\n    approval_prompt: ok?\n");
  const std::vector<std::string> where = {"--session-dir", p.sessions.string(), "-q"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), where.begin(), where.end());
    return args;
  };
  REQUIRE(p.arun(with({"gate.yaml", "--no-input"})).exit_code == 5);
  REQUIRE(p.arun(with({"r.yaml"})).exit_code == 0);
  REQUIRE(p.arun(with({"r.yaml"})).exit_code == 0);
  REQUIRE(sessions_in(p.sessions) == 3);
  // Every session 40 days old.
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 40);
  for (const auto& e : fs::directory_iterator(p.sessions)) {
    fs::last_write_time(e.path() / "state.json", old);
    fs::last_write_time(e.path(), old);
  }
  // What is not surely a session is never removed: another directory, an id without a lock.
  p.dir.write("sessions/notes/keep.txt", "mine");
  p.dir.write("sessions/20200101-000000-abcdef/state.json", "{}");
  for (const auto* other : {"notes", "20200101-000000-abcdef"}) fs::last_write_time(p.sessions / other, old);
  const auto dry = p.arun({"sessions", "clean", "--older-than", "30", "--dry-run", "--session-dir", p.sessions.string()});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("would remove ") != std::string::npos);
  CHECK(dry.err.find("2 session(s) would be removed (--dry-run: nothing was), 1 kept") != std::string::npos);
  CHECK(sessions_in(p.sessions) == 5);
  // A new run prunes the two old finished ones (default: 30 days) and keeps the waiting one.
  const auto run = p.arun({"r.yaml", "--session-dir", p.sessions.string()});
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("arun: removed 2 old sessions (retention: 30 days, 200 sessions; arun config)") != std::string::npos);
  CHECK(sessions_in(p.sessions) == 4);
  CHECK(fs::exists(p.sessions / "notes" / "keep.txt"));
  CHECK(fs::exists(p.sessions / "20200101-000000-abcdef"));
  // A count limit: the newest N stay (this run's included).
  REQUIRE(p.arun(with({"r.yaml"})).exit_code == 0);
  REQUIRE(p.arun(with({"r.yaml"}), {"ARUN_RETENTION_SESSIONS=2"}).exit_code == 0);
  CHECK(sessions_in(p.sessions) == 5);  // the newest two, the waiting one, and the two that are not sessions
  // A damaged session counts among the newest and is never removed: the prune reads a state
  // only when it would remove the session (so the next run removes the older good one).
  std::vector<std::pair<fs::file_time_type, fs::path>> by_age;
  for (const auto& e : fs::directory_iterator(p.sessions))
    if (fs::exists(e.path() / "lock")) by_age.emplace_back(fs::last_write_time(e.path() / "state.json"), e.path());
  std::sort(by_age.rbegin(), by_age.rend());
  REQUIRE(by_age.size() == 3);
  const auto damaged = by_age[0].second, older = by_age[1].second;
  const auto stamp = fs::last_write_time(damaged / "state.json");
  std::ofstream(damaged / "state.json") << "not json";
  fs::last_write_time(damaged / "state.json", stamp);
  REQUIRE(p.arun(with({"r.yaml"}), {"ARUN_RETENTION_SESSIONS=2"}).exit_code == 0);
  CHECK(fs::exists(damaged));
  CHECK_FALSE(fs::exists(older));
  CHECK(sessions_in(p.sessions) == 5);
  CHECK(arun::test::leftover_processes().empty());
}
