// Naming a session on the command line (docs/sessions.md, "Naming a session"): every command
// that takes a session takes its id, `last` or `-`, or a unique prefix or suffix, and says the
// same thing when the name fits no session, or several; `arun sessions` alone lists them,
// `arun sessions clean ID` removes one, `arun help` is help, and parse errors begin `arun:`.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct named_sessions {
  arun::test::temp_dir dir{"arun-e2e-ids"};
  fs::path sessions = dir.root / "sessions";
  std::string ok = dir.write("ok.yaml", "name: ok\nsteps:\n  - id: say\n    command: echo ok-output\n");
  std::string bad = dir.write("bad.yaml", "name: bad\nsteps:\n  - id: say\n    command: echo bad-output; exit 1\n");

  arun::test::arun_run arun(std::vector<std::string> args) const {
    args.insert(args.end(), {"--session-dir", sessions.string()});
    return run_arun(args, dir.root.string());
  }
  // Runs `recipe` and returns its new session's id.
  std::string session_of(const std::string& recipe, int exit_code) const {
    const auto before = ids();
    REQUIRE(arun({recipe, "-q"}).exit_code == exit_code);
    for (const auto& id : ids())
      if (std::find(before.begin(), before.end(), id) == before.end()) return id;
    FAIL("no new session");
    return {};
  }
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(sessions, ec)) out.push_back(e.path().filename().string());
    return out;
  }
  std::string none_message(const std::string& given) const {
    return "arun: no session '" + given + "' in " + sessions.string() + " (arun sessions lists them)\n";
  }
};

// Every command that takes a session, with the session last.
const std::vector<std::vector<std::string>> session_commands = {
    {"resume"}, {"logs"}, {"approve"}, {"deny"}, {"sessions", "show"}, {"sessions", "clean"}};

}  // namespace

TEST_CASE("session ids: the id, a unique prefix or suffix, last and - name a session in every command") {
  named_sessions p;
  const auto older = p.session_of(p.ok, 0);
  const auto newer = p.session_of(p.bad, 1);
  // The older session was changed last: what `last` means is when a session was created.
  const auto later = fs::file_time_type::clock::now() + std::chrono::hours(1);
  fs::last_write_time(p.sessions / older / "state.json", later);
  fs::last_write_time(p.sessions / older, later);

  for (const std::string newest : {"last", "-"}) {
    const auto logs = p.arun({"logs", newest});
    CHECK(logs.exit_code == 0);
    CHECK(logs.out == "bad-output\n");
  }
  const auto prefix = older.substr(0, 21), suffix = older.substr(16);
  for (const auto& name : {prefix, suffix, older}) {
    INFO(name);
    const auto show = p.arun({"sessions", "show", name});
    CHECK(show.exit_code == 0);
    CHECK(show.out.starts_with("session  " + older + "\n"));
    CHECK(p.arun({"logs", name}).out == "ok-output\n");
  }
  // approve and deny find it, then say why they cannot decide.
  for (const char* verb : {"approve", "deny"}) {
    const auto r = p.arun({verb, suffix});
    CHECK(r.exit_code == 2);
    CHECK(r.err == "arun: cannot " + std::string(verb) + ": session " + older + " is not waiting for approval\n");
  }
  // resume by suffix: a completed session is said to be one, by its full id.
  const auto done = p.arun({"resume", suffix});
  CHECK(done.exit_code == 0);
  CHECK(done.err.starts_with("arun: session " + older + " has completed; there is nothing to resume"));
  // resume last: the failed one runs again.
  const auto again = p.arun({"resume", "last"});
  CHECK(again.exit_code == 1);
  CHECK(again.err.find("arun: resuming session " + newer + " (") != std::string::npos);
  // The newest completed: resume last says which session that is, and why nothing runs.
  const auto newest = p.session_of(p.ok, 0);
  const auto nothing = p.arun({"resume", "-"});
  CHECK(nothing.exit_code == 0);
  CHECK(nothing.err.starts_with("arun: the newest session, " + newest + ", has completed; there is nothing to resume"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("session ids: no match, several, and ids that could be paths get one message and exit 2") {
  named_sessions p;
  const auto a = p.session_of(p.ok, 0);
  const auto b = p.session_of(p.ok, 0);
  // A session outside the root, which a path-like id would reach.
  const auto outside = p.dir.root / "20990101-000000-abcdef";
  fs::create_directories(outside);
  std::ofstream(outside / "lock") << "";
  fs::copy_file(p.sessions / a / "state.json", outside / "state.json");
  for (const auto& command : session_commands)
    for (const std::string given : {"nothing", "../20990101-000000-abcdef", "20990101-000000-abcdef/..", "..", "a/b"}) {
      auto args = command;
      args.push_back(given);
      INFO(args.front() << " " << given);
      const auto r = p.arun(args);
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(r.err == p.none_message(given));
    }
  CHECK(fs::exists(outside / "state.json"));
  // Several fit: each is listed, newest first, and nothing is done.
  for (const auto& command : session_commands) {
    auto args = command;
    args.push_back("20");
    INFO(args.front());
    const auto r = p.arun(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err == "arun: '20' matches 2 sessions in " + p.sessions.string() + ": " + b + ", " + a +
                       " (give more of the id)\n");
  }
  CHECK(p.ids().size() == 2);
  // No session at all: `last` names none either.
  arun::test::temp_dir empty{"arun-e2e-ids-empty"};
  const auto r = run_arun({"logs", "last", "--session-dir", empty.root.string()}, p.dir.root.string());
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: no session 'last' in " + empty.root.string() + " (arun sessions lists them)\n");
}

TEST_CASE("session ids: arun sessions alone lists the sessions, as sessions list does") {
  named_sessions p;
  const auto a = p.session_of(p.ok, 0);
  const auto b = p.session_of(p.bad, 1);
  const auto alone = p.arun({"sessions"});
  CHECK(alone.exit_code == 0);
  CHECK(alone.out == p.arun({"sessions", "list"}).out);
  CHECK(alone.out.find(b) < alone.out.find(a));  // newest first
  const auto as_json = p.arun({"sessions", "--output-format", "json"});
  CHECK(as_json.exit_code == 0);
  CHECK(as_json.out == p.arun({"sessions", "list", "--output-format", "json"}).out);
  CHECK(json::parse(as_json.out).as_array().size() == 2);
}

TEST_CASE("session ids: sessions clean ID removes that session alone, never one a running arun holds") {
  named_sessions p;
  const auto a = p.session_of(p.ok, 0);
  const auto b = p.session_of(p.bad, 1);
  const auto c = p.session_of(p.ok, 0);
  // Held by a running arun: refused, and kept.
  const int fd = ::open((p.sessions / c / "lock").c_str(), O_RDWR);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  auto r = p.arun({"sessions", "clean", c});
  ::close(fd);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: cannot remove session " + c + ": a running arun holds it\n");
  CHECK(fs::exists(p.sessions / c / "state.json"));
  // --dry-run says so and removes nothing.
  r = p.arun({"sessions", "clean", a, "--dry-run"});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "would remove " + a + "\n");
  CHECK(fs::exists(p.sessions / a));
  // By a suffix: that one goes, the others stay.
  r = p.arun({"sessions", "clean", a.substr(16)});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "removed " + a + "\n");
  CHECK_FALSE(fs::exists(p.sessions / a));
  CHECK(fs::exists(p.sessions / b));
  CHECK(fs::exists(p.sessions / c));
  // Named, a session waiting for approval goes too (the age rule keeps those).
  auto state = json::parse(read_text(p.sessions / b / "state.json")).as_object();
  state["status"] = "waiting_approval";
  std::ofstream(p.sessions / b / "state.json", std::ios::trunc) << json::serialize(state);
  CHECK(p.arun({"sessions", "clean", b}).exit_code == 0);
  CHECK_FALSE(fs::exists(p.sessions / b));
  // A directory named like a session that arun did not make (no lock) stays.
  const auto stranger = p.sessions / "20261124-010222-abcdef";
  fs::create_directories(stranger / "data");
  r = p.arun({"sessions", "clean", "20261124-010222-abcdef"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is not a session directory arun made") != std::string::npos);
  CHECK(fs::exists(stranger / "data"));
  // A symlink in the root is no session: what it leads to stays.
  const auto elsewhere = p.dir.root / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "lock") << "";
  fs::create_directory_symlink(elsewhere, p.sessions / "20990101-000000-abcdef");
  r = p.arun({"sessions", "clean", "20990101-000000-abcdef"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == p.none_message("20990101-000000-abcdef"));
  CHECK(fs::exists(elsewhere / "lock"));
  // Neither a session nor --older-than, or both: a usage error.
  r = p.arun({"sessions", "clean"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: sessions clean takes a session (arun sessions clean ID) or --older-than DAYS\n");
  r = p.arun({"sessions", "clean", c, "--older-than", "0"});
  CHECK(r.exit_code == 2);
  CHECK(r.err == "arun: sessions clean takes a session (arun sessions clean ID) or --older-than DAYS, not both\n");
  CHECK(fs::exists(p.sessions / c));
}

TEST_CASE("help: arun help [COMMAND] is arun [COMMAND] --help") {
  const std::vector<std::vector<std::string>> commands = {{}, {"resume"}, {"sessions", "clean"}};
  for (const auto& command : commands) {
    auto help = command, flag = command;
    help.insert(help.begin(), "help");
    flag.push_back("--help");
    const auto r = run_arun(help);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(r.out.empty());
    CHECK(r.out == run_arun(flag).out);
  }
  const auto unknown = run_arun({"help", "sessions", "nosuch"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err == "arun: help: arun sessions has no command 'nosuch' (arun sessions --help lists them)\n");
}

TEST_CASE("cli: the option parser's errors begin with arun: and name the command's --help") {
  const auto missing = run_arun({"resume"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "arun: session is required (arun resume --help lists the options)\n");
  const auto range = run_arun({"sessions", "clean", "--older-than", "-3"});
  CHECK(range.exit_code == 2);
  CHECK(range.err.starts_with("arun: "));
  CHECK(range.err.ends_with(" (arun sessions clean --help lists the options)\n"));
  const auto extra = run_arun({"completions", "bash", "zsh"});
  CHECK(extra.exit_code == 2);
  CHECK(extra.err.starts_with("arun: "));
}
