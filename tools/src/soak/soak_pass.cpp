#include "soak_pass.hpp"

#include "process/process_table.hpp"
#include "process/supervisor.hpp"
#include "executor/step_environment.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>

namespace arun::soak {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The kinds of child the soak mixes. Every one must end: by itself or by the escalation.
struct child_kind {
  std::string name;
  std::string script;
  bool expect_timeout;
  bool escapes = false;  // leaves its process group on purpose
};

std::vector<child_kind> kinds(const settings& s) {
  // Escaped sleeps write nowhere, so that only the writer holds the step's pipes.
  const std::string quiet = " >/dev/null 2>&1";
  return {
      {"obeys-term", "exec sleep 30", true},
      {"ignores-term", "trap '' TERM; sleep 30 & sleep 30; wait", true},
      {"grandchildren", "sleep 30 & (trap '' TERM; sleep 30) & (sleep 30 & wait) & wait", true},
      {"flood", fmt::format("head -c {} /dev/zero | tr '\\0' x; echo >&2 flooded", s.flood_bytes), false},
      {"background-leaver", "sleep 30 & echo left a sleep behind", false},
      {"quick-exit", "echo hi; exit 3", false},
      {"escape-setsid", "setsid sleep 300" + quiet + " & sleep 0.05", false, true},
      {"escape-double-fork", "setsid bash -c 'sleep 300 & exit'" + quiet + " & sleep 0.05", false, true},
      {"escape-setpgid", "perl -e 'setpgrp(0, 0) or die; exec \"sleep\", \"300\"'" + quiet + " & sleep 0.05", false,
       true},
      {"escape-join-supervisor-group",
       "perl -e 'setpgrp(0, $ARGV[0]) or die; exec \"sleep\", \"300\"' \"$(cut -d' ' -f5 /proc/$PPID/stat)\"" +
           quiet + " & sleep 0.05",
       false, true},
      {"escape-in-term-trap", "trap 'setsid sleep 300" + quiet + " & exit 0' TERM; sleep 30 & wait", true, true},
      {"escape-writer", "setsid bash -c 'while :; do echo tick; sleep 0.01; done' & sleep 0.05", false, true},
  };
}

struct pass_state {
  const settings& config;
  std::vector<child_kind> mix;
  std::vector<std::string> env;
  std::mt19937 rng;
  std::size_t next = 0;
  std::set<pid_t> groups;
  std::vector<double> term_ms, kill_ms;
  pass_report& report;
};

asio::awaitable<void> worker(pass_state& st) {
  while (st.next < st.config.count) {
    ++st.next;
    const auto& kind = st.mix[std::uniform_int_distribution<std::size_t>(0, st.mix.size() - 1)(st.rng)];
    io::process_spec spec;
    spec.launch.argv = {"/bin/bash", "-c", kind.script};
    spec.launch.env = st.env;
    spec.launch.env.push_back("SOAK_KIND=" + kind.name);  // tells whose a survivor is
    spec.timeout = kind.expect_timeout ? std::chrono::milliseconds(st.config.timeout_ms) : 30s;
    spec.kill_grace = std::chrono::milliseconds(st.config.grace_ms);
    const auto limit = std::chrono::milliseconds(st.config.timeout_ms + st.config.grace_ms + st.config.stretch_slack_ms);
    const auto r = co_await io::run_process(std::move(spec));
    auto& rep = st.report;
    ++rep.per_kind[kind.name];
    if (!r.launched()) {
      ++rep.launch_failures;
      continue;
    }
    st.groups.insert(r.pid);
    if (r.timed_out != kind.expect_timeout) ++rep.unexpected[kind.name];
    if (r.timed_out) ++rep.timed_out;
    if (kind.expect_timeout && r.duration > limit) ++rep.stretched[kind.name];
    if (kind.escapes && !kind.expect_timeout && r.duration > 1s + limit) ++rep.stretched[kind.name];
    if (r.term_latency) st.term_ms.push_back(std::chrono::duration<double, std::milli>(*r.term_latency).count());
    if (r.kill_latency) {
      ++rep.killed_hard;
      st.kill_ms.push_back(std::chrono::duration<double, std::milli>(*r.kill_latency).count());
    }
    if (r.output_abandoned) ++rep.abandoned;
    if (r.group_survivors) ++rep.group_survivors;
  }
}

std::string soak_kind_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = env.find(std::string_view("SOAK_KIND=", 10));
  if (at == std::string::npos || (at > 0 && env[at - 1] != '\0')) return "unknown";
  return env.substr(at + 10, env.find('\0', at) - at - 10);
}

// Counts the live descendants (the soak is a subreaper: orphans are among them) per kind, then
// kills them so the next pass starts clean.
void count_and_clear_survivors(pass_report& rep) {
  for (const auto& e : io::running_descendants(::getpid())) {
    auto kind = soak_kind_of(e.pid);
    // An unreadable environment may just mean it died since the scan: then it is no survivor.
    const auto now = io::read_process(e.pid);
    if (kind == "unknown" && (!now || !now->running())) continue;
    ++rep.survivors[kind];
    ::kill(e.pid, SIGKILL);
  }
  for (int i = 0; i < 100 && !io::running_descendants(::getpid()).empty(); ++i) std::this_thread::sleep_for(10ms);
  rep.zombies = reap_zombies();
}

double cpu_seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

}  // namespace

bool is_escape_kind(const std::string& kind) { return kind.rfind("escape-", 0) == 0; }

pass_report run_pass(const settings& s, io::containment_request request) {
  pass_report rep;
  io::enable_step_containment(request);
  const auto state = io::step_containment();
  rep.mode = std::string(io::containment_mode_name(state.mode));
  if (request == io::containment_request::cgroup && state.mode != io::containment_mode::cgroup) {
    rep.unavailable = state.fallback_reason;
    rep.ok = true;
    io::end_step_containment();
    return rep;
  }
  rep.fds_before = io::open_fd_count();
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  pass_state st{s, kinds(s), io::build_step_environment(io::current_environment(), {}), std::mt19937(s.seed), 0, {}, {}, {}, rep};
  const auto started = std::chrono::steady_clock::now();
  {
    asio::io_context ctx;
    for (std::size_t i = 0; i < s.concurrency; ++i)
      asio::co_spawn(ctx, worker(st), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
    ctx.run();
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);  // the supervisor's own CPU, children excluded
  rep.cpu_user_s = cpu_seconds(after.ru_utime) - cpu_seconds(before.ru_utime);
  rep.cpu_sys_s = cpu_seconds(after.ru_stime) - cpu_seconds(before.ru_stime);
  rep.term_latency = summarize(st.term_ms);
  rep.kill_latency = summarize(st.kill_ms);
  // What the mode left behind, before ending it (its end would clean up for it). In group
  // mode, escaped processes outlive their steps by design, and one that made a group of its
  // own can have the pid, hence the group id, of an earlier step (pids wrap at pid_max).
  const bool contained = state.mode != io::containment_mode::process_group;
  rep.left_in_groups = survivors_in_groups(st.groups, [contained](pid_t pid) {
    return !contained && is_escape_kind(soak_kind_of(pid));
  });
  count_and_clear_survivors(rep);
  io::end_step_containment();
  rep.fds_after = io::open_fd_count();

  std::size_t unexpected = rep.launch_failures;
  for (const auto& [kind, n] : rep.unexpected) unexpected += n;
  for (const auto& [kind, n] : rep.survivors)
    if (contained || !is_escape_kind(kind)) unexpected += n;
  for (const auto& [kind, n] : rep.stretched)
    if (contained || !is_escape_kind(kind)) unexpected += n;
  rep.ok = unexpected == 0 && rep.left_in_groups.empty() && rep.fds_after == rep.fds_before;
  return rep;
}

}  // namespace arun::soak
