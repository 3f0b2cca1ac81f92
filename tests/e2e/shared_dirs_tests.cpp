// Directories shared with other users (docs/security.md): the session directory, the cache
// and the Slurm shared directory are refused when another user owns or can write them; a
// shared sticky directory gives the user's own subdirectory; another user's cache entries are
// never hits. uid 4242 (through setpriv) is the other user; the tests run as root in CI.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "files/directory_trust.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::temp_dir;

namespace {

constexpr uid_t other = 4242;

// Skipped (with a warning) where the test cannot act as another user.
bool cannot_switch_users() {
  if (::geteuid() == 0 && fs::exists("/usr/bin/setpriv")) return false;
  WARN("not root, or no setpriv: the multi-user tests are skipped");
  return true;
}

void make(const fs::path& p, mode_t mode, uid_t owner = 0) {
  fs::create_directories(p);
  REQUIRE(::chmod(p.c_str(), mode) == 0);
  REQUIRE(::chown(p.c_str(), owner, owner) == 0);
}

arun::test::arun_run run_spec(arun::io::process_spec spec) {
  spec.timeout = std::chrono::seconds(60);
  auto r = arun::test::run_sync(arun::io::run_process(std::move(spec)));
  REQUIRE(r.launched());
  REQUIRE_FALSE(r.timed_out);
  arun::test::arun_run out;
  out.exit_code = r.exit_code.value_or(-1);
  out.out = r.out.text;
  out.err = r.err.text;
  return out;
}

// `arun ARGS` as uid 4242 (setpriv), in `cwd`, with its own HOME and sessions below `home`
// and this process's environment plus `extra_env` otherwise.
arun::test::arun_run run_as_other(const std::vector<std::string>& args, const fs::path& cwd, const fs::path& home,
                                  const std::vector<std::string>& extra_env = {}) {
  make(home, 0700, other);
  arun::io::process_spec spec;
  spec.launch.argv = {"/usr/bin/setpriv", "--reuid", "4242", "--regid", "4242", "--clear-groups", ARUN_BINARY};
  spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
  spec.launch.env = arun::io::current_environment();
  std::vector<std::string> env = {"HOME=" + home.string(), "XDG_CACHE_HOME", "XDG_STATE_HOME",
                                  "ARUN_SESSION_DIR=" + (home / "sessions").string()};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  for (const auto& kv : env) {
    const auto name = kv.substr(0, kv.find('='));
    std::erase_if(spec.launch.env, [&](const std::string& e) { return e.starts_with(name + "="); });
    if (kv.find('=') != std::string::npos) spec.launch.env.push_back(kv);
  }
  spec.launch.working_dir = cwd.string();
  return run_spec(std::move(spec));
}

// The output of the recipe's one step, from arun's JSON result.
std::string output_of(const arun::test::arun_run& r) {
  const auto result = arun::test::result_json(r);
  const auto& step = result.at("step_results").as_array().at(0).as_object();
  return step.contains("output") ? std::string(step.at("output").as_string()) : std::string();
}

bool cached(const arun::test::arun_run& r) {
  const auto result = arun::test::result_json(r);
  const auto& step = result.at("step_results").as_array().at(0).as_object();
  return step.contains("cached") && step.at("cached").as_bool();
}

constexpr const char* whoami_recipe = "name: r\nsteps:\n  - id: a\n    command: echo \"made by uid $(id -u)\"\n"
                                      "    cache: true\n";

}  // namespace

TEST_CASE("shared dirs: a --session-dir another user owns is refused, naming the path, owner, mode and fix") {
  if (cannot_switch_users()) return;
  temp_dir t;
  make(t.root / "bobs", 0755, other);
  std::ofstream(t.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  for (const auto& dir : {t.root / "bobs", t.root / "bobs" / "sessions"}) {
    const auto r = arun::test::run_arun({"r.yaml", "--session-dir", dir.string()}, t.root.string());
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("refusing --session-dir " + dir.string()) && Catch::Contains("uid 4242") &&
                          Catch::Contains("mode 0755") && Catch::Contains("e.g. --session-dir"));
    CHECK_FALSE(fs::exists(t.root / "ran"));
  }
  CHECK(fs::is_empty(t.root / "bobs"));  // nothing made in it
  // The same for what arun reads there: a resume, the listings.
  const auto listed = arun::test::run_arun({"sessions", "list", "--session-dir", (t.root / "bobs").string()},
                                           t.root.string());
  CHECK(listed.exit_code == 2);
  CHECK_THAT(listed.err, Catch::Contains("uid 4242"));
  // ARUN_SESSION_DIR as well.
  const auto by_env = arun::test::run_arun({"r.yaml"}, t.root.string(), std::chrono::seconds(30),
                                           {"ARUN_SESSION_DIR=" + (t.root / "bobs").string()});
  CHECK(by_env.exit_code == 2);
}

TEST_CASE("shared dirs: a shared sticky --session-dir gives the user's own subdirectory, made 0700") {
  if (cannot_switch_users()) return;
  temp_dir t;
  make(t.root / "scratch", 01777);
  std::ofstream(t.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: echo hi\n";
  const auto r = arun::test::run_arun({"r.yaml", "-q", "--output-format", "json", "--session-dir",
                                       (t.root / "scratch").string()}, t.root.string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string id(arun::test::result_json(r).at("session_id").as_string());
  const auto mine = t.root / "scratch" / arun::io::per_user_name(::geteuid());
  CHECK(fs::is_directory(mine / id));
  struct stat st {};
  REQUIRE(::stat(mine.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  // Every command looks there too.
  const auto listed = arun::test::run_arun({"sessions", "list", "--session-dir", (t.root / "scratch").string()},
                                           t.root.string());
  CHECK_THAT(listed.out, Catch::Contains(id));
}

TEST_CASE("shared dirs: another user's outputs in a shared --cache-dir are never hits") {
  if (cannot_switch_users()) return;
  temp_dir t;
  make(t.root / "pub", 01777);
  make(t.root / "pub" / "work", 0755);
  std::ofstream(t.root / "pub" / "work" / "r.yaml") << whoami_recipe;
  const auto cache = (t.root / "pub" / "cache").string();
  // The other user runs the recipe first, in the same directory, into the same cache.
  const auto planted = run_as_other({"r.yaml", "-q", "--output-format", "json", "--cache-dir", cache},
                                    t.root / "pub" / "work", t.root / "pub" / "home");
  INFO(planted.err);
  REQUIRE(planted.exit_code == 0);
  REQUIRE(output_of(planted) == "made by uid 4242");
  const auto mine = arun::test::run_arun({"r.yaml", "-q", "--output-format", "json", "--cache-dir", cache,
                                          "--session-dir", (t.root / "s").string()},
                                         (t.root / "pub" / "work").string());
  INFO(mine.err);
  REQUIRE(mine.exit_code == 0);
  CHECK(output_of(mine) == "made by uid 0");
  CHECK_FALSE(cached(mine));
  CHECK_THAT(mine.err, Catch::Contains("refusing --cache-dir " + cache) && Catch::Contains("uid 4242") &&
                           Catch::Contains("the cache is not used"));
}

TEST_CASE("shared dirs: a cache entry another user owns is ignored, and said once") {
  if (cannot_switch_users()) return;
  temp_dir t;
  make(t.root / "pub", 01777);
  make(t.root / "pub" / "work", 0755);
  std::ofstream(t.root / "pub" / "work" / "r.yaml") << whoami_recipe;
  const auto theirs = t.root / "pub" / "theirs";
  const auto planted = run_as_other({"r.yaml", "-q", "--output-format", "json", "--cache-dir", theirs.string()},
                                    t.root / "pub" / "work", t.root / "pub" / "home");
  INFO(planted.err);
  REQUIRE(planted.exit_code == 0);
  // Their entry, still theirs, moved into this user's own cache (as `sudo` or a copy would).
  const auto mine = t.root / "mine";
  for (const auto& e : fs::recursive_directory_iterator(theirs / "results"))
    if (e.is_regular_file()) {
      const auto to = mine / "results" / e.path().parent_path().filename() / e.path().filename();
      fs::create_directories(to.parent_path());
      fs::rename(e.path(), to);
    }
  REQUIRE(fs::exists(mine / "results"));
  const auto r = arun::test::run_arun({"r.yaml", "-q", "--output-format", "json", "--cache-dir", mine.string(),
                                       "--session-dir", (t.root / "s").string()},
                                      (t.root / "pub" / "work").string());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(output_of(r) == "made by uid 0");
  CHECK_THAT(r.err, Catch::Contains("1 cache entry in " + mine.string() + " owned by another user ignored"));
}

TEST_CASE("shared dirs: the cache key covers the PATH a step runs with") {
  temp_dir t;
  for (const auto* which : {"one", "two"}) {
    fs::create_directories(t.root / which);
    std::ofstream(t.root / which / "mytool") << "#!/bin/sh\necho " << which << "\n";
    fs::permissions(t.root / which / "mytool", fs::perms::owner_all);
  }
  std::ofstream(t.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: mytool\n    cache: true\n";
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  std::vector<std::string> outputs;
  for (const auto* which : {"one", "two", "one"}) {
    const auto r = arun::test::run_arun({"r.yaml", "-q", "--output-format", "json", "--cache-dir",
                                         (t.root / "cache").string(), "--session-dir", (t.root / "s").string()},
                                        t.root.string(), std::chrono::seconds(30),
                                        {"PATH=" + (t.root / which).string() + ":" + path});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    outputs.push_back(output_of(r));
  }
  CHECK(outputs == std::vector<std::string>{"one", "two", "one"});
}

TEST_CASE("shared dirs: a Slurm jobs/ another user owns is refused before anything is submitted") {
  if (cannot_switch_users()) return;
  temp_dir t;
  // Slurm's clients as stand-ins that only say they ran: nothing may reach them.
  fs::create_directories(t.root / "bin");
  for (const auto* tool : {"sbatch", "squeue", "scancel", "sinfo", "scontrol"}) {
    std::ofstream(t.root / "bin" / tool) << "#!/bin/sh\ntouch " << (t.root / "called").string() << "\nexit 1\n";
    fs::permissions(t.root / "bin" / tool, fs::perms::owner_all);
  }
  make(t.root / "shared", 0755);
  make(t.root / "shared" / "jobs", 0755, other);
  std::ofstream(t.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  const auto r = arun::test::run_arun({"r.yaml", "--executor", "slurm", "--shared-dir", (t.root / "shared").string(),
                                       "--session-dir", (t.root / "s").string()},
                                      t.root.string(), std::chrono::seconds(30),
                                      {"PATH=" + (t.root / "bin").string() + ":" + path});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("refusing --shared-dir " + (t.root / "shared" / "jobs").string()) &&
                        Catch::Contains("uid 4242"));
  CHECK(fs::is_empty(t.root / "shared" / "jobs"));
  CHECK_FALSE(fs::exists(t.root / "called"));
  CHECK_FALSE(fs::exists(t.root / "ran"));
  // A shared directory writable by others (not sticky) is refused too.
  make(t.root / "open", 0777);
  const auto open = arun::test::run_arun({"r.yaml", "--executor", "slurm", "--shared-dir", (t.root / "open").string(),
                                          "--session-dir", (t.root / "s").string()},
                                         t.root.string(), std::chrono::seconds(30),
                                         {"PATH=" + (t.root / "bin").string() + ":" + path});
  CHECK(open.exit_code == 2);
  CHECK_THAT(open.err, Catch::Contains("writable by") && Catch::Contains("mode 0777"));
  CHECK_FALSE(fs::exists(t.root / "called"));
}

TEST_CASE("shared dirs: group write is no private group's when another user has that group as their primary one") {
  if (cannot_switch_users()) return;
  temp_dir t;
  // The passwd database as it would be with uid 4242 in our primary group (a member only the
  // passwd entry shows), in a mount namespace of the test's own.
  std::string users = arun::test::read_text("/etc/passwd");
  users += "arun-e2e-other:x:4242:" + std::to_string(::getegid()) + "::/nonexistent:/usr/sbin/nologin\n";
  std::ofstream(t.root / "passwd") << users;
  auto in_namespace = [&](const std::vector<std::string>& args) {
    arun::io::process_spec spec;
    spec.launch.argv = {"unshare", "-m", "sh", "-c", "mount --bind \"$0\" /etc/passwd && exec \"$@\"",
                        (t.root / "passwd").string(), ARUN_BINARY};
    spec.launch.argv.insert(spec.launch.argv.end(), args.begin(), args.end());
    spec.launch.env = arun::io::current_environment();
    spec.launch.working_dir = t.root.string();
    return run_spec(std::move(spec));
  };
  if (const auto probe = in_namespace({"--version"}); probe.exit_code != 0) {
    WARN("no mount namespace here (" << probe.err << "): skipped");
    return;
  }
  make(t.root / "team", 0770, ::geteuid());
  std::ofstream(t.root / "r.yaml") << "name: r\nsteps:\n  - id: a\n    command: touch ran\n";
  const auto r = in_namespace({"r.yaml", "--session-dir", (t.root / "team").string()});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("refusing --session-dir " + (t.root / "team").string()) &&
                        Catch::Contains("writable by its group") && Catch::Contains("mode 0770"));
  CHECK_FALSE(fs::exists(t.root / "ran"));
}
