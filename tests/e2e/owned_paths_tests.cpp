// Issue 33, trust rule 2: what arun removes lies inside the directory it made for it, and the
// files of a session are data. A workspaces.json naming a directory elsewhere, a symlink
// planted in a session, in the session root or in the cache, a FIFO as state.json, and escape
// sequences in state.json: none of them makes arun delete, hang or drive the terminal.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

struct victim_setup {
  arun::test::temp_dir dir{"arun-e2e-owned"};
  fs::path sessions = dir.root / "sessions";
  fs::path victim = dir.root / "victim-precious";
  fs::path session;

  victim_setup() {
    fs::create_directories(victim / "inner");
    std::ofstream(victim / "precious") << "keep me";
    std::ofstream(victim / "inner" / "deep") << "keep me too";
    // `last` always fails: the session stays resumable, every resume starts by removing trees.
    const auto file = dir.write("r.yaml", "name: r\nsteps:\n  - id: a\n    command: echo a\n"
                                          "  - id: last\n    command: exit 1\n");
    const auto r = run_arun({file, "--session-dir", sessions.string(), "-q"}, dir.root.string());
    REQUIRE(r.exit_code == 1);
    session = fs::directory_iterator(sessions)->path();
  }
  bool victim_whole() const { return fs::exists(victim / "precious") && fs::exists(victim / "inner" / "deep"); }
  void index(const std::string& kind, const std::string& root) const {
    std::ofstream(session / "workspaces.json", std::ios::trunc)
        << "{\"trees\":{\"x\":{\"kind\":\"" << kind << "\",\"root\":\"" << root << "\"}}}";
  }
  arun::test::arun_run resume() const {
    return run_arun({"resume", session.filename().string(), "--session-dir", sessions.string(), "-q"}, dir.root.string());
  }
  arun::test::arun_run clean() const {
    return run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", sessions.string()}, dir.root.string());
  }
};

}  // namespace

TEST_CASE("resume never removes a tree root workspaces.json names outside the session") {
  victim_setup v;
  for (const auto& root : {std::string("../victim-precious"), (v.session / ".." / ".." / "victim-precious").string(),
                           v.victim.string(), (v.session / "copies" / ".." / ".." / ".." / "victim-precious").string()}) {
    INFO(root);
    v.index("copy", root);
    const auto r = v.resume();
    INFO(r.err);
    CHECK(v.victim_whole());
    CHECK_THAT(r.err, Catch::Contains("alone") && Catch::Contains("arun makes that tree only at"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("resume does not follow a symlinked copies/ or a tree that is a symlink into the victim") {
  victim_setup v;
  // copies/ itself leads to the victim's parent: copies/x would be the victim.
  fs::create_directories(v.dir.root / "parent");
  fs::rename(v.victim, v.dir.root / "parent" / "x");
  v.victim = v.dir.root / "parent" / "x";
  fs::create_directory_symlink(v.dir.root / "parent", v.session / "copies");
  v.index("copy", (v.session / "copies" / "x").string());
  auto r = v.resume();
  INFO(r.err);
  CHECK(v.victim_whole());
  CHECK_THAT(r.err, Catch::Contains((v.session / "copies").string() + " is a symbolic link"));
  // The tree itself a symlink to the victim: the link goes, the victim stays.
  fs::remove(v.session / "copies");
  fs::create_directories(v.session / "worktrees");
  fs::create_directory_symlink(v.victim, v.session / "worktrees" / "x");
  v.index("worktree", (v.session / "worktrees" / "x").string());
  r = v.clean();
  INFO(r.err);
  CHECK(v.victim_whole());
  CHECK_FALSE(fs::exists(v.session));
}

TEST_CASE("sessions clean and the retention prune never remove a tree root outside the session") {
  SECTION("sessions clean") {
    victim_setup v;
    v.index("copy", "../victim-precious");
    const auto r = v.clean();
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(v.victim_whole());
    CHECK_FALSE(fs::exists(v.session));  // the session itself goes
    CHECK_THAT(r.err, Catch::Contains("alone"));
  }
  SECTION("the prune when a run starts") {
    victim_setup v;
    v.index("copy", v.victim.string());
    const auto ok = v.dir.write("ok.yaml", "name: ok\nsteps:\n  - id: a\n    command: 'true'\n");
    const auto r = run_arun({ok, "--session-dir", v.sessions.string()}, v.dir.root.string(), std::chrono::seconds(90),
                            {"ARUN_RETENTION_SESSIONS=1"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(v.victim_whole());
    CHECK_FALSE(fs::exists(v.session));
  }
}

TEST_CASE("the session root's symlinks are no sessions: clean leaves what they lead to") {
  victim_setup v;
  // Looks like a session in every way, but is reached through a symlink in the root.
  fs::create_directories(v.dir.root / "elsewhere" / "20990101-000000-abcdef");
  const auto fake = v.dir.root / "elsewhere" / "20990101-000000-abcdef";
  for (const auto& name : {"lock", "recipe.yaml"}) std::ofstream(fake / name) << "";
  fs::copy_file(v.session / "state.json", fake / "state.json");
  // ... with a tree of its own, which a removal through the link would reach.
  fs::create_directories(fake / "copies" / "x");
  std::ofstream(fake / "copies" / "x" / "precious") << "keep me";
  const auto link = v.sessions / "20990101-000000-abcdef";
  std::ofstream(fake / "workspaces.json")
      << "{\"trees\":{\"x\":{\"kind\":\"copy\",\"root\":\"" << (link / "copies" / "x").string() << "\"}}}";
  fs::create_directory_symlink(fake, link);
  const auto r = v.clean();
  INFO(r.err);
  CHECK(fs::exists(fake / "state.json"));
  CHECK(fs::exists(fake / "lock"));
  CHECK(fs::exists(fake / "copies" / "x" / "precious"));
  CHECK_FALSE(fs::exists(v.session));
}

TEST_CASE("the retention prune keeps a session holding a kept copy, sessions clean removes it") {
  arun::test::temp_dir dir{"arun-e2e-kept"};
  const auto sessions = dir.root / "sessions";
  dir.write("data/work.txt", "the user's work");
  const auto failing = dir.write("f.yaml", "name: f\nsteps:\n  - id: edit\n    isolation: copy\n    working_dir: data\n"
                                           "    command: echo agent-edit > work.txt; exit 3\n");
  auto r = run_arun({failing, "--session-dir", sessions.string(), "-q"}, dir.root.string());
  REQUIRE(r.exit_code == 1);
  const auto kept = fs::directory_iterator(sessions)->path();
  REQUIRE(fs::exists(kept / "copies" / "edit" / "work.txt"));
  const auto ok = dir.write("ok.yaml", "name: ok\nsteps:\n  - id: a\n    command: 'true'\n");
  for (const char* rule : {"ARUN_RETENTION_SESSIONS=1", "ARUN_RETENTION_DAYS=1"}) {
    INFO(rule);
    // Sessions older than a day: made so by their state.json's time.
    fs::last_write_time(kept / "state.json", fs::file_time_type::clock::now() - std::chrono::hours(72));
    r = run_arun({ok, "--session-dir", sessions.string()}, dir.root.string(), std::chrono::seconds(90), {rule});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(kept / "copies" / "edit" / "work.txt"));
    CHECK_THAT(r.err, Catch::Contains("kept 1 old session holding worktrees or copies") &&
                          Catch::Contains(kept.filename().string()));
  }
  r = run_arun({"sessions", "clean", "--older-than", "0", "--session-dir", sessions.string()}, dir.root.string());
  INFO(r.err);
  CHECK_FALSE(fs::exists(kept));
  CHECK_THAT(r.err, Catch::Contains("removing its kept tree " + (kept / "copies" / "edit").string()));
}

TEST_CASE("cache clear never removes a file through a symlinked shard") {
  arun::test::temp_dir dir{"arun-e2e-cache-link"};
  const auto cache = dir.root / "cache";
  const auto outside = dir.root / "outside";
  fs::create_directories(cache / "results");
  fs::create_directories(outside);
  const std::string key = "ab" + std::string(62, '0');
  std::ofstream(outside / (key + ".json")) << "{\"precious\": true}";
  fs::create_directory_symlink(outside, cache / "results" / "ab");
  auto r = run_arun({"cache", "clear", "--cache-dir", cache.string()}, dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(outside / (key + ".json")));
  CHECK_THAT(r.err, Catch::Contains("warning: left " + (cache / "results" / "ab").string() + " alone"));
  r = run_arun({"cache", "list", "--cache-dir", cache.string()}, dir.root.string());
  CHECK_THAT(r.out, Catch::Contains("0 cached outputs"));
}

TEST_CASE("a resume writes nothing through a link, a FIFO or a hard link planted among the session's files") {
  // Each names what it plants in the session, which a resume would otherwise write through.
  const std::vector<std::pair<std::string, std::function<void(const victim_setup&)>>> plants = {
      {"lock -> a file of the victim's (truncated to a pid)",
       [](const victim_setup& v) { fs::remove(v.session / "lock"), fs::create_symlink(v.victim / "precious", v.session / "lock"); }},
      {"journal.jsonl -> a file",
       [](const victim_setup& v) {
         fs::remove(v.session / "journal.jsonl"), fs::create_symlink(v.victim / "precious", v.session / "journal.jsonl");
       }},
      {"events.jsonl -> a file",
       [](const victim_setup& v) {
         fs::remove(v.session / "events.jsonl"), fs::create_symlink(v.victim / "precious", v.session / "events.jsonl");
       }},
      {"logs -> a directory",
       [](const victim_setup& v) { fs::remove_all(v.session / "logs"), fs::create_directory_symlink(v.victim, v.session / "logs"); }},
      {"outputs -> a directory", [](const victim_setup& v) { fs::create_directory_symlink(v.victim, v.session / "outputs"); }},
      {"logs/deeper -> a directory",
       [](const victim_setup& v) { fs::create_directory_symlink(v.victim, v.session / "logs" / "deeper"); }},
      {"logs/last.out a hard link to a file",
       [](const victim_setup& v) {
         fs::remove(v.session / "logs" / "last.out"), fs::create_hard_link(v.victim / "precious", v.session / "logs" / "last.out");
       }},
      {"journal.jsonl a FIFO (an open for writing would wait for a reader)",
       [](const victim_setup& v) {
         fs::remove(v.session / "journal.jsonl");
         REQUIRE(::mkfifo((v.session / "journal.jsonl").c_str(), 0600) == 0);
       }},
  };
  for (const auto& [what, plant] : plants) {
    INFO(what);
    victim_setup v;
    plant(v);
    const auto r = run_arun({"resume", v.session.filename().string(), "--session-dir", v.sessions.string(), "-q"},
                            v.dir.root.string(), std::chrono::seconds(20));
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("which no session arun made holds"));
    CHECK(read_text(v.victim / "precious") == "keep me");
    CHECK(std::distance(fs::directory_iterator(v.victim), fs::directory_iterator()) == 2);  // precious, inner/
  }
}

TEST_CASE("a FIFO as a Slurm session's slurm-jobs record hangs neither sessions clean nor the prune") {
  for (const bool prune : {false, true}) {
    INFO((prune ? "the prune when a run starts" : "sessions clean"));
    victim_setup v;
    auto state = read_text(v.session / "state.json");
    const std::string local = "\"executor\":{\"name\":\"local\",\"shared_dir\":\"\"";
    const auto at = state.find(local);
    REQUIRE(at != std::string::npos);
    state.replace(at, local.size(), "\"executor\":{\"name\":\"slurm\",\"shared_dir\":\"" + (v.dir.root / "shared").string() + "\"");
    std::ofstream(v.session / "state.json", std::ios::trunc) << state;
    REQUIRE(::mkfifo((v.session / "slurm-jobs").c_str(), 0600) == 0);
    // Two days old: past a retention of one day.
    fs::last_write_time(v.session / "state.json", fs::file_time_type::clock::now() - std::chrono::hours(48));
    const auto r = prune ? run_arun({v.dir.write("ok.yaml", "name: ok\nsteps:\n  - id: a\n    command: echo ok\n"),
                                     "--session-dir", v.sessions.string(), "-q"},
                                    v.dir.root.string(), std::chrono::seconds(20), {"ARUN_RETENTION_DAYS=1"})
                         : v.clean();
    INFO(r.err);
    CHECK(r.exit_code == 0);  // a hang is a timeout, exit -1
    CHECK_FALSE(fs::exists(v.session));
  }
}

TEST_CASE("a resume reads a recipe file's copy only from the session's sources/, whatever sources.json names") {
  for (const auto* name : {"../../../victim-precious/precious", "../recipe.yaml", "/etc/passwd"}) {
    INFO(name);
    victim_setup v;
    std::ofstream(v.session / "sources.json", std::ios::trunc)
        << "{\"" << (v.dir.root / "sub.yaml").string() << "\":\"" << name << "\"}\n";
    const auto r = v.resume();
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("which is no file in " + (v.session / "sources").string()));
  }
  // A link planted in sources/ is refused before (no session arun made holds one).
}

TEST_CASE("a FIFO as state.json neither hangs sessions list nor TAB completion") {
  victim_setup v;
  fs::remove(v.session / "state.json");
  REQUIRE(::mkfifo((v.session / "state.json").c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = run_arun({"sessions", "list", "--session-dir", v.sessions.string()}, v.dir.root.string(), std::chrono::seconds(20));
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("unreadable") && Catch::Contains("not a regular file"));
  r = run_arun({"__complete", "--", "resume", ""}, v.dir.root.string(), std::chrono::seconds(20),
               {"ARUN_SESSION_DIR=" + v.sessions.string()});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains(v.session.filename().string()));
  r = run_arun({"sessions", "show", v.session.filename().string(), "--session-dir", v.sessions.string()},
               v.dir.root.string(), std::chrono::seconds(20));
  CHECK(r.exit_code != 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("escape sequences in a session's working directory are printed escaped by resume") {
  victim_setup v;
  auto state = read_text(v.session / "state.json");
  const std::string from = "\"working_dir\":\"" + v.dir.root.string() + "\"";
  const auto at = state.find(from);
  REQUIRE(at != std::string::npos);
  state.replace(at, from.size(), "\"working_dir\":\"" + v.dir.root.string() + "/gone\\u001b]0;owned\\u0007\"");
  std::ofstream(v.session / "state.json", std::ios::trunc) << state;
  const auto r = v.resume();
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK_THAT(r.err, Catch::Contains("gone\\e]0;owned\\x07 is gone"));
}

TEST_CASE("escape sequences in state.json and events.jsonl are printed escaped") {
  victim_setup v;
  auto state = read_text(v.session / "state.json");
  const std::string from = "\"recipe_name\":\"r\"";
  const auto at = state.find(from);
  REQUIRE(at != std::string::npos);
  state.replace(at, from.size(), "\"recipe_name\":\"r\\u001b]0;owned\\u0007\\u009b2J\"");
  std::ofstream(v.session / "state.json", std::ios::trunc) << state;
  std::ofstream(v.session / "events.jsonl", std::ios::app) << "{\"event\":\"warning\",\"message\":\"\\u001b[2Jgone\"}\n";
  auto r = run_arun({"sessions", "list", "--session-dir", v.sessions.string()}, v.dir.root.string());
  INFO(r.out);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(r.out.find("\xc2\x9b") == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains("r\\e]0;owned\\x07\\xc2\\x9b2J"));
  r = run_arun({"sessions", "show", v.session.filename().string(), "--session-dir", v.sessions.string()}, v.dir.root.string());
  INFO(r.out);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains("\\e[2Jgone"));
  r = run_arun({"__complete", "--", "resume", ""}, v.dir.root.string(), std::chrono::seconds(20),
               {"ARUN_SESSION_DIR=" + v.sessions.string()});
  CHECK(r.out.find('\x1b') == std::string::npos);
}

TEST_CASE("a resume does not copy into or clear a directory a symlinked copies/ leads to") {
  arun::test::temp_dir dir{"arun-e2e-copies-link"};
  const auto sessions = dir.root / "sessions";
  dir.write("work/s/file.txt", "the step's input");
  dir.write("victim/s/keep.txt", "keep me");
  const auto failing = dir.write("f.yaml", "name: f\nsteps:\n  - id: s\n    isolation: copy\n    working_dir: work\n"
                                           "    command: exit 3\n");
  auto r = run_arun({failing, "--session-dir", sessions.string(), "-q"}, dir.root.string());
  REQUIRE(r.exit_code == 1);
  const auto session = fs::directory_iterator(sessions)->path();
  // The step's tree sits at copies/s; copies/ now leads to the victim, where s/ is theirs.
  fs::rename(session / "copies", session / "copies.orig");
  fs::create_directory_symlink(dir.root / "victim", session / "copies");
  r = run_arun({"resume", session.filename().string(), "--session-dir", sessions.string()}, dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code != 0);
  CHECK(read_text(dir.root / "victim" / "s" / "keep.txt") == "keep me");
  CHECK_FALSE(fs::exists(dir.root / "victim" / "s" / "file.txt"));
  CHECK_FALSE(fs::exists(dir.root / "victim" / "work"));
  // Refused before the run starts: no session arun made holds a link.
  CHECK_THAT(r.err, Catch::Contains((session / "copies").string() + " is a symbolic link"));
}
