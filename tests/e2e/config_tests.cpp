// Defaults and housekeeping (issue 14 item 8): the user's config file, the project's
// `.arun.yaml` and ARUN_* variables, later winning, shown by `arun config` with their sources;
// a bad config is an error with its file, line and caret; retention prunes old sessions when
// a run starts (never one waiting for approval); `sessions clean --dry-run` removes nothing.
// A project's `.arun.yaml` is untrusted until `arun config trust` records its content's hash
// (issue 33, trust rule 1): until then it sets only harmless keys.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <sys/stat.h>
#include <unistd.h>

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

  config_project() {
    fs::create_directories(project);
    // A directory others can write makes its .arun.yaml untrustable: not the case here, whatever the umask.
    fs::permissions(project, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
  }
  std::vector<std::string> env(std::vector<std::string> more = {}) const {
    more.push_back("XDG_CONFIG_HOME=" + home.string());
    more.push_back("HOME=" + (dir.root / "home").string());
    more.push_back("XDG_STATE_HOME=" + (dir.root / "state").string());
    for (const char* unset : {"ARUN_MAX_CONCURRENT", "ARUN_COLOR", "ARUN_RETENTION_DAYS", "ARUN_RETENTION_SESSIONS",
                              "ARUN_SESSION_DIR", "ARUN_LOG"})
      if (std::find_if(more.begin(), more.end(), [&](const std::string& e) { return e.starts_with(unset); }) == more.end())
        more.emplace_back(unset);
    return more;
  }
  arun::test::arun_run arun(std::vector<std::string> args, std::vector<std::string> more_env = {}) const {
    return arun_in(project, std::move(args), std::move(more_env));
  }
  arun::test::arun_run arun_in(const fs::path& where, std::vector<std::string> args,
                               std::vector<std::string> more_env = {}) const {
    return run_arun(std::move(args), where.string(), std::chrono::seconds(60), env(std::move(more_env)));
  }
  // The sessions a run without --session-dir makes (XDG_STATE_HOME's).
  fs::path default_sessions() const { return dir.root / "state" / "arun" / "sessions"; }
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

TEST_CASE("config: a bad value is an error with its place (an unknown key a warning with a suggestion)") {
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

TEST_CASE("config: retention prunes old sessions when a run starts (never one waiting) and clean --dry-run removes nothing") {
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

namespace {

std::vector<std::string> session_ids_in(const fs::path& root) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

const char* const every_key = "color: never\nmax_concurrent: 3\nlog_level: debug\nsession_dir: planted\n"
                              "agent_cli: fake\nretention_days: 1\nretention_sessions: 1\n";

}  // namespace

TEST_CASE("config: an untrusted ./.arun.yaml sets only harmless keys until 'config trust' records its hash (an edit undoes it)") {
  config_project p;
  p.dir.write("project/.arun.yaml", every_key);
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  auto settings = [&] {
    const auto r = p.arun({"config", "--output-format", "json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return arun::test::result_json(r);
  };
  const auto before = settings();
  const auto& s = before.at("settings");
  CHECK(s.at("color").at("source") == ".arun.yaml:1");
  CHECK(s.at("max_concurrent").at("value") == "3");
  CHECK(s.at("log_level").at("value") == "debug");
  for (const char* key : {"session_dir", "agent_cli", "retention_days", "retention_sessions"})
    CHECK(s.at(key).at("source") == "default");
  const auto& project = before.at("project_file");
  CHECK(project.at("trusted") == false);
  CHECK(project.at("state") == "not_trusted");
  CHECK(project.at("real_path").as_string() == fs::canonical(p.project / ".arun.yaml").string());
  CHECK(project.at("ignored") == boost::json::parse(R"(["session_dir","agent_cli","retention_days","retention_sessions"])"));

  // A run: one warning line naming the ignored keys and the command; the session goes where
  // the user's defaults say, not where the file says.
  const auto run = p.arun({"r.yaml"});
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("arun: ./.arun.yaml is not trusted: ignored session_dir, agent_cli, retention_days, "
                     "retention_sessions (review it, then run 'arun config trust')\n") != std::string::npos);
  CHECK(arun::test::occurrences(run.err, "arun config trust") == 1);
  CHECK_FALSE(fs::exists(p.project / "planted"));
  CHECK(sessions_in(p.default_sessions()) == 1);
  // ARUN_* variables stay the user's word.
  const auto env_dir = p.dir.root / "from-env";
  CHECK(p.arun({"r.yaml", "-q"}, {"ARUN_SESSION_DIR=" + env_dir.string()}).exit_code == 0);
  CHECK(sessions_in(env_dir) == 1);

  // Trusted: every key applies, silently; the record is the user's only.
  const auto trusted = p.arun({"config", "trust"});
  INFO(trusted.err);
  CHECK(trusted.exit_code == 0);
  CHECK(trusted.err.find("arun: trusted .arun.yaml (" + fs::canonical(p.project / ".arun.yaml").string()) !=
        std::string::npos);
  const auto record = p.home / "arun" / "trusted.json";
  REQUIRE(fs::exists(record));
  CHECK((fs::status(record).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  const auto after = settings();
  CHECK(after.at("project_file").at("trusted") == true);
  CHECK(after.at("settings").at("session_dir").at("source") == ".arun.yaml:4");
  CHECK(after.at("settings").at("retention_sessions").at("value") == "1");
  const auto trusted_run = p.arun({"r.yaml"});
  CHECK(trusted_run.exit_code == 0);
  CHECK(trusted_run.err.find("not trusted") == std::string::npos);
  CHECK(sessions_in(p.project / "planted") == 1);

  SECTION("an edited file is untrusted again, and says it changed") {
    p.dir.write("project/.arun.yaml", std::string(every_key) + "# one more line\n");
    const auto edited = p.arun({"r.yaml", "-q"});
    CHECK(edited.err.find("arun: ./.arun.yaml changed since it was trusted: ignored session_dir, agent_cli, "
                          "retention_days, retention_sessions (review it, then run 'arun config trust')") !=
          std::string::npos);
    CHECK(sessions_in(p.project / "planted") == 1);
    CHECK(settings().at("project_file").at("state") == "changed");
    CHECK(p.arun({"config"}).out.find("project file: ./.arun.yaml changed since it was trusted: ignored session_dir") !=
          std::string::npos);
  }
  SECTION("untrust forgets it") {
    CHECK(p.arun({"config", "untrust"}).err.find("is no longer trusted") != std::string::npos);
    CHECK(settings().at("project_file").at("state") == "not_trusted");
    CHECK(p.arun({"config", "untrust"}).err.find("was not trusted") != std::string::npos);
  }
  SECTION("a damaged trust record trusts nothing and is not overwritten") {
    p.dir.write("xdg/arun/trusted.json", "{not json");
    fs::permissions(record, fs::perms::owner_read | fs::perms::owner_write);
    CHECK(settings().at("project_file").at("state") == "unknown");
    const auto refused = p.arun({"config", "trust"});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("arun: cannot use the trust record: " + record.string() + " is not a trust record arun wrote") !=
          std::string::npos);
    CHECK(read_text(record) == "{not json");
  }
}

TEST_CASE("config: a project file another user owns or others can write is never trusted (by hash or by 'config trust')") {
  if (::geteuid() != 0) {
    WARN("needs root to chown files to another user");
    return;
  }
  config_project p;
  const auto file = p.project / ".arun.yaml";
  p.dir.write("project/.arun.yaml", every_key);
  // Whatever the umask: the file and its directory start as a careful user's.
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(p.project, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
  const auto real = fs::canonical(file).string();
  auto trust = [&] { return p.arun({"config", "trust"}); };

  REQUIRE(::chown(file.c_str(), 4242, 4242) == 0);
  auto r = trust();
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("arun: refusing to trust .arun.yaml: " + real + " is owned by uid 4242 (you are root (uid 0)), mode 0644") !=
        std::string::npos);
  CHECK(r.err.find("chown, chmod go-w") != std::string::npos);
  CHECK_FALSE(fs::exists(p.home / "arun" / "trusted.json"));
  CHECK(p.arun({"config"}).out.find("project file: ./.arun.yaml cannot be trusted (" + real + " is owned by uid 4242") !=
        std::string::npos);

  REQUIRE(::chown(file.c_str(), 0, 0) == 0);
  fs::permissions(file, fs::perms::group_write, fs::perm_options::add);
  r = trust();
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(real + " is writable by group (owner root (uid 0), mode 0664)") != std::string::npos);

  fs::permissions(file, fs::perms::group_write, fs::perm_options::remove);
  fs::permissions(p.project, fs::perms::all, fs::perm_options::replace);
  r = trust();
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the directory " + fs::canonical(p.project).string() +
                   " is writable by group and others (owner root (uid 0), mode 0777)") != std::string::npos);

  // Trusted while it was safe, then handed to another user: its hash alone no longer trusts it.
  fs::permissions(p.project, fs::perms::others_write | fs::perms::group_write, fs::perm_options::remove);
  REQUIRE(trust().exit_code == 0);
  REQUIRE(p.arun({"config"}).out.find("project file: ./.arun.yaml is trusted") != std::string::npos);
  REQUIRE(::chown(file.c_str(), 4242, 4242) == 0);
  const auto shown = arun::test::result_json(p.arun({"config", "--output-format", "json"})).at("project_file");
  CHECK(shown.at("state") == "refused");
  CHECK(shown.at("reason").as_string().starts_with("cannot be trusted (" + real + " is owned by uid 4242"));
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  const auto refused_run = p.arun({"r.yaml", "-q", "--session-dir", (p.dir.root / "s").string()});
  CHECK(refused_run.err.find("arun: ./.arun.yaml cannot be trusted (" + real + " is owned by uid 4242") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(p.project / "planted"));

  // A link is resolved and its target judged: the real path is what is trusted and shown.
  fs::remove(file);
  p.dir.write("elsewhere/shared.yaml", every_key);
  REQUIRE(::chown((p.dir.root / "elsewhere/shared.yaml").c_str(), 4242, 4242) == 0);
  fs::create_symlink(p.dir.root / "elsewhere/shared.yaml", file);
  const auto linked = p.arun({"config"});
  CHECK(linked.out.find("project file: ./.arun.yaml (a link to " + fs::canonical(file).string() +
                        ") cannot be trusted") != std::string::npos);
  CHECK(trust().exit_code == 2);

  // A link to a file another directory trusted lends it no trust here: its settings would
  // apply in this directory (a clone's `.arun.yaml -> ../trusted/.arun.yaml`).
  fs::remove(file);
  p.dir.write("trusted/.arun.yaml", every_key);
  const auto trusted_file = p.dir.root / "trusted/.arun.yaml";
  fs::permissions(p.dir.root / "trusted", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                              fs::perms::others_read | fs::perms::others_exec);
  REQUIRE(p.arun({"config", "trust", trusted_file.string()}).exit_code == 0);
  fs::create_symlink(trusted_file, file);
  const auto borrowed = p.arun({"config"});
  CHECK(borrowed.out.find("is a link to a file in another directory") != std::string::npos);
  CHECK(borrowed.out.find("is trusted") == std::string::npos);
  CHECK(trust().exit_code == 2);
}

TEST_CASE("config: a cloned directory's .arun.yaml cannot move the sessions or prune the user's own (issue 33)") {
  config_project p;
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  const auto elsewhere = p.dir.root / "elsewhere";
  fs::create_directories(elsewhere);
  // The victim's own sessions, in the default session directory.
  for (int i = 0; i < 3; ++i) REQUIRE(p.arun_in(elsewhere, {(p.project / "r.yaml").string(), "-q"}).exit_code == 0);
  const auto victims = session_ids_in(p.default_sessions());
  REQUIRE(victims.size() == 3);
  // The clone: a planted session directory with a fake old session that claims a tree outside it.
  p.dir.write("victim-precious/work.txt", "mine");
  REQUIRE(p.arun({"r.yaml", "-q", "--session-dir", (p.project / ".arun-sessions").string()}).exit_code == 0);
  const auto planted = session_ids_in(p.project / ".arun-sessions");
  REQUIRE(planted.size() == 1);
  p.dir.write("project/.arun-sessions/" + planted[0] + "/workspaces.json",
              R"({"trees":{"x":{"kind":"copy","root":")" + (p.dir.root / "victim-precious").string() + R"("}}})");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 400);
  fs::last_write_time(p.project / ".arun-sessions" / planted[0] / "state.json", old);
  p.dir.write("project/.arun.yaml", "session_dir: .arun-sessions\nretention_sessions: 1\n");

  const auto run = p.arun({"r.yaml"});
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("ignored session_dir, retention_sessions") != std::string::npos);
  CHECK(session_ids_in(p.project / ".arun-sessions") == planted);
  CHECK(fs::exists(p.dir.root / "victim-precious/work.txt"));
  auto now = session_ids_in(p.default_sessions());
  CHECK(now.size() == 4);
  for (const auto& id : victims) CHECK(std::find(now.begin(), now.end(), id) != now.end());

  // Retention alone (defect 5): the user's own sessions stay.
  p.dir.write("project/.arun.yaml", "retention_sessions: 1\nretention_days: 0\n");
  CHECK(p.arun({"r.yaml", "-q"}).exit_code == 0);
  now = session_ids_in(p.default_sessions());
  CHECK(now.size() == 5);
  for (const auto& id : victims) CHECK(std::find(now.begin(), now.end(), id) != now.end());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("config: a FIFO ./.arun.yaml is ignored (never waited on) and a user config others can write gets a warning") {
  config_project p;
  REQUIRE(::mkfifo((p.project / ".arun.yaml").c_str(), 0644) == 0);
  p.dir.write("project/r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n");
  const auto run = p.arun({"r.yaml", "-q"});
  CHECK(run.exit_code == 0);
  CHECK(run.err.find("arun: ./.arun.yaml cannot be read: " + fs::canonical(p.project).string() +
                     "/.arun.yaml is not a regular file (ignored)") != std::string::npos);
  // The user's own file stays the user's word, with a warning like ssh's StrictModes.
  fs::remove(p.project / ".arun.yaml");
  p.dir.write("xdg/arun/config.yaml", "max_concurrent: 3\n");
  fs::permissions(p.home / "arun", fs::perms::all, fs::perm_options::replace);
  const auto loose = p.arun({"config", "--output-format", "json"});
  CHECK(arun::test::result_json(loose).at("settings").at("max_concurrent").at("value") == "3");
  CHECK(loose.err.find("arun: warning: your config file " + (p.home / "arun/config.yaml").string() +
                       " could be changed by another user: the directory " + fs::canonical(p.home / "arun").string() +
                       " is writable by group and others") != std::string::npos);
}

TEST_CASE("config: 'config trust' writes no trust record in a directory others can write, nor through a link planted there") {
  config_project p;
  p.dir.write("project/.arun.yaml", "color: never\n");
  const auto victim = p.dir.write("victim-file", "keep me\n");
  fs::create_directories(p.home / "arun");
  fs::permissions(p.home / "arun", fs::perms::all, fs::perm_options::replace);
  fs::create_symlink(victim, p.home / "arun" / "trusted.json.tmp");
  const auto r = p.arun({"config", "trust"});
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("not writing the trust record") && Catch::Contains("writable by group and others"));
  CHECK(arun::test::read_text(victim) == "keep me\n");
  CHECK_FALSE(fs::exists(p.home / "arun" / "trusted.json"));
}
