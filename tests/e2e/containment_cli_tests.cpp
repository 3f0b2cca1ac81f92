// `arun` keeps a step's processes to the step whichever way they leave its process group
// (docs/supervisor.md, "Containment"), and cleans up its cgroups.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process/step_containment.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using arun::test::run_arun;

namespace {

// Each step starts a process outside its group and appends its pid to `pids`; the last one
// does it from its TERM trap when its timeout fires.
constexpr const char* escaping_recipe = R"(name: escapes
steps:
  - id: setsid
    command: setsid sleep 300 >/dev/null 2>&1 & echo $! >> pids
  - id: double-fork
    command: setsid bash -c 'sleep 300 >/dev/null 2>&1 & echo $! >> pids' & wait
  - id: setpgid
    command: perl -e 'setpgrp(0, 0) or die; exec "sleep", "300"' >/dev/null 2>&1 & echo $! >> pids
  - id: writer
    command: setsid bash -c 'echo $$ >> pids; while :; do echo tick; sleep 0.01; done' & sleep 0.3
  - id: trap
    timeout: 0.5
    on_error: continue
    command: trap 'setsid sleep 300 >/dev/null 2>&1 & echo $! >> pids; exit 0' TERM; sleep 300 & wait
)";

std::vector<pid_t> read_pids(const fs::path& file) {
  std::vector<pid_t> pids;
  std::ifstream in(file);
  for (pid_t pid; in >> pid;) pids.push_back(pid);
  return pids;
}

void check_contained(const std::string& mode) {
  arun::test::temp_dir dir{"arun-e2e-contain"};
  const auto file = dir.write("escapes.yaml", escaping_recipe);
  const auto r = run_arun({file, "-q"}, dir.root.string(), std::chrono::seconds(90), {"ARUN_CONTAINMENT=" + mode});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.elapsed < std::chrono::seconds(8));  // no 2 s pipe waits, no 10 s chatty drain
  const auto pids = read_pids(dir.root / "pids");
  CHECK(pids.size() == 5);
  for (const pid_t pid : pids) CHECK_FALSE(arun::test::process_alive(pid));
  CHECK(arun::test::leftover_processes(std::chrono::milliseconds(0)).empty());
}

}  // namespace

TEST_CASE("arun in subreaper containment ends every process that left a step's group") {
  check_contained("subreaper");
}

TEST_CASE("arun in cgroup containment ends every process that left a step's group and removes its cgroups") {
  std::string why;
  const auto own = arun::io::current_cgroup_dir(why);
  REQUIRE(own);
  // A stale cgroup of a dead arun (pid 4194000 is beyond any pid in use here) is removed.
  const auto stale = *own + "/arun-4194000";
  if (::mkdir(stale.c_str(), 0755) != 0 || ::mkdir((stale + "/s1").c_str(), 0755) != 0) {
    WARN("cannot create cgroups in " << *own << ": covered by the subreaper test");
    return;
  }
  check_contained("cgroup");
  CHECK_FALSE(fs::exists(stale));
  for (const auto& entry : fs::directory_iterator(*own)) {
    // Only live arun processes (other tests running now) may have a cgroup here.
    int pid = 0;
    if (std::sscanf(entry.path().filename().c_str(), "arun-%d", &pid) == 1) CHECK(::kill(pid, 0) == 0);
  }
}

TEST_CASE("ARUN_CONTAINMENT must name a mode") {
  const auto r = run_arun({"list"}, ARUN_SOURCE_DIR, std::chrono::seconds(30), {"ARUN_CONTAINMENT=cgroups"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("ARUN_CONTAINMENT=cgroups is not one of: auto, cgroup, subreaper, group"));
}
