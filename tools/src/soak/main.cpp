// arun-soak: pushes N process specs through the supervisor at concurrency C, mixing children
// that obey SIGTERM, ignore it, spawn grandchildren, flood output or exit at once, and
// reports kill latencies and anything left behind. Exits 1 on any leaked process or fd.
#include "soak_report.hpp"

#include "process/process_table.hpp"
#include "process/supervisor.hpp"
#include "process_setup.hpp"
#include "step_environment.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <map>
#include <random>
#include <set>

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using arun::io::process_result;
using arun::io::process_spec;

struct settings {
  std::size_t count = 2000;
  std::size_t concurrency = 32;
  int timeout_ms = 100;
  int grace_ms = 200;
  std::size_t flood_bytes = 4u << 20;
  unsigned seed = 1;
};

// The kinds of child the soak mixes. Every one must end: by itself or by the escalation.
struct child_kind {
  const char* name;
  std::string script;
  bool expect_timeout;
};

std::vector<child_kind> kinds(const settings& s) {
  return {
      {"obeys-term", "exec sleep 30", true},
      {"ignores-term", "trap '' TERM; sleep 30 & sleep 30; wait", true},
      {"grandchildren", "sleep 30 & (trap '' TERM; sleep 30) & (sleep 30 & wait) & wait", true},
      {"flood", fmt::format("head -c {} /dev/zero | tr '\\0' x; echo >&2 flooded", s.flood_bytes), false},
      {"background-leaver", "sleep 30 & echo left a sleep behind", false},
      {"quick-exit", "echo hi; exit 3", false},
  };
}

struct soak_state {
  settings config;
  std::vector<child_kind> mix;
  std::mt19937 rng;
  std::size_t next = 0;
  std::set<pid_t> groups;
  std::vector<double> term_latency_ms, kill_latency_ms;
  std::map<std::string, std::size_t> per_kind, unexpected;
  std::size_t timed_out = 0, killed_hard = 0, launch_failures = 0, abandoned = 0, survivors = 0;
};

asio::awaitable<void> worker(soak_state& st, const std::vector<std::string>& env) {
  while (st.next < st.config.count) {
    ++st.next;
    const auto& kind = st.mix[std::uniform_int_distribution<std::size_t>(0, st.mix.size() - 1)(st.rng)];
    process_spec spec;
    spec.launch.argv = {"/bin/bash", "-c", kind.script};
    spec.launch.env = env;
    spec.timeout = std::chrono::milliseconds(st.config.timeout_ms);
    if (!kind.expect_timeout) spec.timeout = 30s;  // these end by themselves
    spec.kill_grace = std::chrono::milliseconds(st.config.grace_ms);
    const auto r = co_await arun::io::run_process(std::move(spec));
    ++st.per_kind[kind.name];
    if (!r.launched()) {
      ++st.launch_failures;
      continue;
    }
    st.groups.insert(r.pid);
    if (r.timed_out != kind.expect_timeout) ++st.unexpected[kind.name];
    if (r.timed_out) ++st.timed_out;
    if (r.term_latency) st.term_latency_ms.push_back(std::chrono::duration<double, std::milli>(*r.term_latency).count());
    if (r.kill_latency) {
      ++st.killed_hard;
      st.kill_latency_ms.push_back(std::chrono::duration<double, std::milli>(*r.kill_latency).count());
    }
    if (r.output_abandoned) ++st.abandoned;
    if (r.group_survivors) ++st.survivors;
  }
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  bool json = false;
  CLI::App app{"arun-soak: process supervisor soak test (see docs/soak.md)", "soak"};
  app.add_option("--count", s.count, "Process specs to run")->check(CLI::PositiveNumber);
  app.add_option("--concurrency", s.concurrency, "Children at once")->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", s.timeout_ms, "Deadline of the children that must be stopped")->check(CLI::PositiveNumber);
  app.add_option("--grace-ms", s.grace_ms, "SIGTERM -> SIGKILL grace period")->check(CLI::NonNegativeNumber);
  app.add_option("--flood-bytes", s.flood_bytes, "Bytes each flooding child writes");
  app.add_option("--seed", s.seed, "Seed of the child mix");
  app.add_flag("--json", json, "Print the report as JSON");
  CLI11_PARSE(app, argc, argv);

  arun::io::prepare_supervisor_process();
  // Orphaned grandchildren re-parent to the soak, so none can escape the leak check.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int fds_before = arun::io::open_fd_count();

  soak_state st{.config = s, .mix = kinds(s), .rng = std::mt19937(s.seed)};
  const auto env = arun::io::build_step_environment(arun::io::current_environment(), {});
  const auto started = std::chrono::steady_clock::now();
  {
    asio::io_context ctx;
    for (std::size_t i = 0; i < s.concurrency; ++i)
      asio::co_spawn(ctx, worker(st, env), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
    ctx.run();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);  // the supervisor's own CPU, children excluded
  const double cpu_user = static_cast<double>(self.ru_utime.tv_sec) + static_cast<double>(self.ru_utime.tv_usec) / 1e6;
  const double cpu_sys = static_cast<double>(self.ru_stime.tv_sec) + static_cast<double>(self.ru_stime.tv_usec) / 1e6;

  const auto in_groups = arun::soak::survivors_in_groups(st.groups);
  const auto descendants = arun::soak::live_descendants();
  const int zombies = arun::soak::reap_zombies();
  const int fds_after = arun::io::open_fd_count();
  std::size_t unexpected = 0;
  for (const auto& [k, n] : st.unexpected) unexpected += n;
  const bool leaked = !in_groups.empty() || !descendants.empty() || fds_after != fds_before;
  const bool failed = leaked || st.launch_failures > 0 || unexpected > 0;

  const auto term = arun::soak::summarize(st.term_latency_ms);
  const auto kill = arun::soak::summarize(st.kill_latency_ms);
  if (json) {
    fmt::print(R"({{"count":{},"concurrency":{},"wall_s":{:.3f},"timed_out":{},"sigkilled":{},)"
               R"("term_latency_ms":{{"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"max":{:.3f}}},)"
               R"("kill_latency_ms":{{"p50":{:.3f},"p90":{:.3f},"p99":{:.3f},"max":{:.3f}}},)"
               R"("cpu_user_s":{:.3f},"cpu_sys_s":{:.3f},"peak_rss_mib":{},"leaked_processes":{},"fds_before":{},"fds_after":{},"unexpected":{},"launch_failures":{},"ok":{}}})"
               "\n",
               s.count, s.concurrency, wall, st.timed_out, st.killed_hard, term.p50, term.p90, term.p99, term.max,
               kill.p50, kill.p90, kill.p99, kill.max, cpu_user, cpu_sys, self.ru_maxrss / 1024, in_groups.size() + descendants.size(), fds_before,
               fds_after, unexpected, st.launch_failures, failed ? "false" : "true");
  } else {
    fmt::print("soak: {} children, concurrency {}, timeout {} ms, grace {} ms, seed {}: {:.2f} s ({:.0f}/s)\n",
               s.count, s.concurrency, s.timeout_ms, s.grace_ms, s.seed, wall, static_cast<double>(s.count) / wall);
    for (const auto& [k, n] : st.per_kind) fmt::print("  {:<18} {}\n", k, n);
    fmt::print("supervisor CPU: user {:.2f} s, sys {:.2f} s, peak RSS {} MiB\n", cpu_user, cpu_sys,
               self.ru_maxrss / 1024);
    fmt::print("timed out: {} (SIGKILL needed: {})\n", st.timed_out, st.killed_hard);
    fmt::print("deadline -> SIGTERM:       {}\n", arun::soak::format(term));
    fmt::print("SIGTERM+grace -> SIGKILL:  {}\n", arun::soak::format(kill));
    fmt::print("processes left in the soak's groups: {}\n", in_groups.size());
    fmt::print("live descendants left: {}\n", descendants.size());
    fmt::print("orphan zombies reaped at the end: {}\n", zombies);
    fmt::print("open fds before/after: {}/{}\n", fds_before, fds_after);
    fmt::print("pipes abandoned (held outside the group): {}, groups with survivors: {}\n", st.abandoned, st.survivors);
    fmt::print("unexpected outcomes: {}, launch failures: {}\n", unexpected, st.launch_failures);
    for (const auto& p : in_groups) fmt::print("  LEAK (group): {}\n", p);
    for (const auto& p : descendants) fmt::print("  LEAK (descendant): {}\n", p);
    fmt::print("{}\n", failed ? "soak: FAILED" : "soak: ok");
  }
  return failed ? 1 : 0;
}
