// A session directory that fills up during a run (a 200 KiB tmpfs): the run stops with exit 74
// naming the store, the session says `failed`, not `running`, and once there is room a resume
// finishes the work without repeating what the journal kept. Needs root (it mounts a tmpfs);
// elsewhere it says so and checks nothing.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"

#include <boost/json/parse.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::run_arun;

namespace {

// A tmpfs of `size` mounted for the test's lifetime.
struct small_disk {
  fs::path at;
  bool mounted = false;
  small_disk(fs::path where, const char* size) : at(std::move(where)) {
    fs::create_directories(at);
    // mode=0700: the user's own directory, as arun wants a session directory (a tmpfs is 1777
    // by default, a shared one, whose per-user subdirectory arun would use).
    mounted = ::mount("tmpfs", at.c_str(), "tmpfs", 0, (std::string("mode=0700,size=") + size).c_str()) == 0;
    if (!mounted) WARN("cannot mount a tmpfs (" << std::strerror(errno) << "): run as root to test a full disk");
  }
  bool grow(const char* size) const {
    return ::mount("tmpfs", at.c_str(), "tmpfs", MS_REMOUNT, (std::string("size=") + size).c_str()) == 0;
  }
  ~small_disk() {
    if (mounted) ::umount2(at.c_str(), MNT_DETACH);
  }
};

std::set<std::string> journaled_instances(const fs::path& journal) {
  std::set<std::string> out;
  std::ifstream in(journal);
  const std::string key = "\"instance\":\"";
  for (std::string line; std::getline(in, line);) {
    if (in.eof()) break;  // a torn last line is not a record
    const auto at = line.find(key);
    if (at != std::string::npos) out.insert(line.substr(at + key.size(), line.find('"', at + key.size()) - at - key.size()));
  }
  return out;
}

}  // namespace

TEST_CASE("a session directory that fills up stops the run with exit 74 and loses nothing journaled") {
  arun::test::temp_dir dir{"arun-e2e-full"};
  const small_disk disk(dir.root / "sessions", "200k");
  if (!disk.mounted) return;
  const auto ran = dir.root / "ran.txt";
  const auto file = dir.write("fan.yaml",
                              "name: fan\nsteps:\n"
                              "  - id: items\n    command: python3 -c 'print(list(range(300)))'\n    output: items\n"
                              "  - id: fan\n    foreach: \"{{items}}\"\n    parallel: 4\n"
                              "    command: \"echo {{item}} >> " + ran.string() + "; head -c 900 /dev/zero | tr '\\\\0' x\"\n"
                              "    collect: got\n");
  const auto sessions = disk.at.string();
  const auto r = run_arun({file, "--session-dir", sessions, "-q"}, dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code == 74);
  CHECK_THAT(r.err, Catch::Contains("cannot write " + sessions) && Catch::Contains("No space left on device") &&
                        Catch::Contains("arun resume "));
  std::vector<fs::path> found(fs::directory_iterator(disk.at), fs::directory_iterator());
  REQUIRE(found.size() == 1);
  const auto session = found[0];
  const auto state = boost::json::parse(read_text(session / "state.json")).as_object();
  CHECK(state.at("status") == "failed");
  CHECK_THAT(std::string(state.at("error").as_string()), Catch::Contains("No space left on device"));
  const auto kept = journaled_instances(session / "journal.jsonl");
  CHECK(kept.size() > 10);
  CHECK(kept.size() < 301);
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(5000)).empty());

  REQUIRE(disk.grow("20m"));
  const auto resumed = run_arun({"resume", session.filename().string(), "--session-dir", sessions, "-q"}, dir.root.string());
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(boost::json::parse(read_text(session / "state.json")).at("status") == "completed");
  std::map<std::string, int> runs;
  std::ifstream in(ran);
  for (std::string item; in >> item;) ++runs[item];
  CHECK(runs.size() == 300);
  for (const auto& instance : kept) {
    if (!instance.starts_with("fan[")) continue;
    const auto item = instance.substr(4, instance.size() - 5);
    INFO("journaled iteration " << instance);
    CHECK(runs[item] == 1);  // journaled before the disk filled: never run again
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a stored output that does not fit stops the run with exit 74, and resume runs its step again") {
  arun::test::temp_dir dir{"arun-e2e-full-output"};
  const small_disk disk(dir.root / "sessions", "200k");
  if (!disk.mounted) return;
  const auto file = dir.write("big.yaml",
                              "name: big\nsteps:\n"
                              "  - id: big\n    command: head -c 300000 /dev/zero | tr '\\0' x\n    output: blob\n"
                              "  - id: use\n    command: printf '%s' \"{{blob}}\" | wc -c\n");
  const auto sessions = disk.at.string();
  const auto r = run_arun({file, "--session-dir", sessions, "-q"}, dir.root.string());
  INFO(r.err);
  CHECK(r.exit_code == 74);
  CHECK_THAT(r.err, Catch::Contains("/outputs/1-big.txt") && Catch::Contains("No space left on device"));
  std::vector<fs::path> found(fs::directory_iterator(disk.at), fs::directory_iterator());
  REQUIRE(found.size() == 1);
  const auto session = found[0];
  CHECK(journaled_instances(session / "journal.jsonl").empty());  // never a record of an output not kept

  REQUIRE(disk.grow("20m"));
  const auto resumed = run_arun({"resume", session.filename().string(), "--session-dir", sessions, "-q",
                                 "--output-format", "json"},
                                dir.root.string());
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  const auto result = boost::json::parse(resumed.out).as_object();
  const auto& steps = result.at("step_results").as_array();
  REQUIRE(steps.size() == 2);
  CHECK(steps[1].at("output") == 300000);
  // The failed write left nothing behind (outputs are written atomically): the resumed run's
  // output is the only file, and whole.
  std::vector<fs::path> outputs(fs::directory_iterator(session / "outputs"), fs::directory_iterator());
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].filename() == "1-big.txt");
  CHECK(fs::file_size(outputs[0]) == 300000);
}
