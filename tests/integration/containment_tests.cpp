// Step containment (process/step_containment.hpp) against the five ways a process leaves its
// step's process group: in cgroup and subreaper mode none may outlive the step.
#include <catch2/catch.hpp>

#include "process/step_containment.hpp"
#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

using namespace std::chrono_literals;
using arun::io::containment_mode;
using arun::io::containment_request;
using arun::io::process_result;
using arun::io::process_spec;
using arun::test::leftover_processes;
using arun::test::process_alive;

namespace {

// One escape technique: a bash script that starts processes outside the step's group and
// prints "escaped PID" for each.
struct escape {
  const char* name;
  std::string script;
  bool times_out;  // the escape happens in the TERM trap of a step that times out
};

std::vector<escape> escapes() {
  return {
      {"setsid", "setsid sleep 300 & echo escaped $!; sleep 0.2", false},
      {"setsid double fork", "setsid bash -c 'sleep 300 & echo escaped $!' & sleep 0.3", false},
      {"setpgid", R"(perl -e 'setpgrp(0, 0) or die; print "escaped $$\n"; exec "sleep", "300"' & sleep 0.3)", false},
      // $PPID of the step's bash is the supervising process: its group is "arun's own group".
      {"joining the supervisor's group",
       R"(perl -e 'setpgrp(0, $ARGV[0]) or die; print "escaped $$\n"; exec "sleep", "300"' )"
       R"x("$(cut -d' ' -f5 /proc/$PPID/stat)" & sleep 0.3)x",
       false},
      {"setsid in a TERM trap", "trap 'setsid sleep 300 & echo escaped $!; exit 0' TERM; sleep 300 & wait", true},
      {"setsid writer", "setsid bash -c 'echo escaped $$; while :; do echo tick; sleep 0.01; done' & sleep 0.3", false},
  };
}

std::vector<pid_t> escaped_pids(const std::string& out) {
  std::vector<pid_t> pids;
  std::istringstream in(out);
  for (std::string word; in >> word;)
    if (word == "escaped") {
      pid_t pid = 0;
      in >> pid;
      pids.push_back(pid);
    }
  return pids;
}

process_result run_escape(const escape& e) {
  process_spec spec;
  spec.launch.argv = {"/bin/bash", "-c", e.script};
  spec.launch.env = arun::io::current_environment();
  spec.timeout = e.times_out ? 500ms : 30s;
  spec.kill_grace = 5s;
  return arun::test::run_sync(arun::io::run_process(std::move(spec)));
}

// Switches the process-wide containment for one test and back to none at the end.
struct containment_for_test {
  explicit containment_for_test(containment_request request) {
    arun::io::enable_step_containment(request);
    state = arun::io::step_containment();
  }
  ~containment_for_test() { arun::io::end_step_containment(); }
  arun::io::containment_state state;
};

void check_nothing_escapes(containment_mode mode) {
  for (const auto& e : escapes()) {
    INFO(e.name);
    const auto r = run_escape(e);
    CHECK(r.timed_out == e.times_out);
    const auto pids = escaped_pids(r.out.text);
    REQUIRE(!pids.empty());
    for (const pid_t pid : pids) {
      REQUIRE(pid > 0);
      CHECK_FALSE(process_alive(pid));
    }
    // Nothing holds the pipes after the step: no 2 s idle wait, no 10 s chatty drain.
    CHECK_FALSE(r.output_abandoned);
    CHECK_FALSE(r.group_survivors);
    CHECK(leftover_processes(0ms).empty());
  }
  CHECK(arun::io::step_containment().mode == mode);
}

std::size_t entries_in(const std::string& dir) {
  std::size_t n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

}  // namespace

TEST_CASE("cgroup containment: no escape technique outlives the step, and the cgroups are removed") {
  containment_for_test contained(containment_request::cgroup);
  if (contained.state.mode != containment_mode::cgroup) {
    WARN("no cgroup containment here (" << contained.state.fallback_reason << "): covered by the subreaper test");
    return;
  }
  const auto base = contained.state.cgroup_dir;
  CHECK(std::filesystem::is_directory(base));
  check_nothing_escapes(containment_mode::cgroup);
  CHECK(entries_in(base) == 0);  // every step's cgroup is gone with its step
  arun::io::end_step_containment();
  CHECK_FALSE(std::filesystem::exists(base));
}

TEST_CASE("cgroup containment: SIGKILL on an emergency stop reaches processes outside the group") {
  containment_for_test contained(containment_request::cgroup);
  if (contained.state.mode != containment_mode::cgroup) return;  // reason warned above
  boost::asio::io_context ctx;
  std::optional<process_result> result;
  process_spec spec;
  spec.launch.argv = {"/bin/bash", "-c", "setsid sleep 300 & echo escaped $!; exec sleep 300"};
  spec.launch.env = arun::io::current_environment();
  spec.on_line = [](arun::io::stream_id, std::string_view line, bool) {
    if (line.rfind("escaped", 0) == 0) arun::io::kill_all_supervised_processes();
  };
  boost::asio::co_spawn(ctx, arun::io::run_process(std::move(spec)),
                        [&](std::exception_ptr, process_result r) { result = std::move(r); });
  ctx.run();
  REQUIRE(result);
  CHECK(result->signal == SIGKILL);
  for (const pid_t pid : escaped_pids(result->out.text)) CHECK_FALSE(process_alive(pid));
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("subreaper containment: no escape technique outlives the step") {
  containment_for_test contained(containment_request::subreaper);
  REQUIRE(contained.state.mode == containment_mode::subreaper);
  check_nothing_escapes(containment_mode::subreaper);
}

TEST_CASE("subreaper containment: a process that escaped a running step lives as long as that step") {
  containment_for_test contained(containment_request::subreaper);
  boost::asio::io_context ctx;
  std::optional<process_result> holder;
  pid_t escaped = 0;
  bool alive_when_other_step_ended = false;
  // The holder's sleep leaves the group by a double fork, so it re-parents to this process at
  // once; the other step ending meanwhile sweeps, and must not take the sleep for its own.
  process_spec holding;
  holding.launch.argv = {"/bin/bash", "-c", "setsid bash -c 'sleep 300 & echo escaped $!' & sleep 1.5"};
  holding.launch.env = arun::io::current_environment();
  holding.on_line = [&](arun::io::stream_id, std::string_view line, bool) {
    if (line.rfind("escaped ", 0) == 0) escaped = std::stoi(std::string(line.substr(8)));
  };
  boost::asio::co_spawn(ctx, arun::io::run_process(std::move(holding)),
                        [&](std::exception_ptr, process_result r) { holder = std::move(r); });
  process_spec other;
  other.launch.argv = {"/bin/bash", "-c", "sleep 0.8"};
  other.launch.env = arun::io::current_environment();
  boost::asio::co_spawn(ctx, arun::io::run_process(std::move(other)), [&](std::exception_ptr, process_result) {
    alive_when_other_step_ended = escaped > 0 && process_alive(escaped);
  });
  ctx.run();
  REQUIRE(holder);
  REQUIRE(escaped > 0);
  CHECK(alive_when_other_step_ended);
  CHECK_FALSE(process_alive(escaped));  // ... and it ended with its own step
  CHECK_FALSE(holder->output_abandoned);
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("subreaper containment: a process that cleared its environment ends once no step is left that could own it") {
  containment_for_test contained(containment_request::subreaper);
  const auto r = run_escape({"env -i", "setsid env -i sleep 300 & echo escaped $!; sleep 0.2", false});
  const auto pids = escaped_pids(r.out.text);
  REQUIRE(pids.size() == 1);
  CHECK_FALSE(process_alive(pids[0]));
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("group containment is what embedders get by default: it does not follow setsid") {
  CHECK(arun::io::step_containment().mode == containment_mode::process_group);
  const auto r = run_escape(escapes()[0]);
  const auto pids = escaped_pids(r.out.text);
  REQUIRE(pids.size() == 1);
  CHECK(process_alive(pids[0]));  // the documented limit of this mode
  CHECK(r.output_abandoned);
  ::kill(pids[0], SIGKILL);
  CHECK(leftover_processes().empty());
}

TEST_CASE("containment requests parse from their ARUN_CONTAINMENT names") {
  CHECK(arun::io::parse_containment_request("auto") == containment_request::automatic);
  CHECK(arun::io::parse_containment_request("cgroup") == containment_request::cgroup);
  CHECK(arun::io::parse_containment_request("subreaper") == containment_request::subreaper);
  CHECK(arun::io::parse_containment_request("group") == containment_request::process_group);
  CHECK_FALSE(arun::io::parse_containment_request("cgroups"));
  CHECK_FALSE(arun::io::parse_containment_request(""));
}
