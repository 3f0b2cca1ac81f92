// The process supervisor against real children (tests/helpers/test_child.cpp).
#include <catch2/catch.hpp>

#include "process/process_table.hpp"
#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"
#include "test_paths.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdio>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <unistd.h>

using namespace std::chrono_literals;
using arun::io::process_result;
using arun::io::process_spec;
using arun::io::run_process;
using arun::io::stream_id;
using arun::test::leftover_processes;
using arun::test::run_sync;

namespace {

process_spec child(std::vector<std::string> actions) {
  process_spec spec;
  spec.launch.argv = {ARUN_TEST_CHILD};
  for (auto& a : actions) spec.launch.argv.push_back(std::move(a));
  spec.launch.env = arun::io::current_environment();
  return spec;
}

process_result run(process_spec spec) { return run_sync(run_process(std::move(spec))); }

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

pid_t grandchild_pid(const process_result& r) {
  std::istringstream in(r.out.text);
  std::string word;
  pid_t pid = 0;
  while (in >> word)
    if (word == "grandchild") in >> pid;
  return pid;
}

long vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

TEST_CASE("a child's exit code is reported") {
  const auto r = run(child({"exit", "3"}));
  CHECK(r.launched());
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.signal);
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.succeeded());
  CHECK(leftover_processes().empty());
}

TEST_CASE("a child killed by a signal reports the signal, not an exit code") {
  const auto r = run(child({"kill-self", "9"}));
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(r.exit_code);
  CHECK(leftover_processes().empty());
}

TEST_CASE("stdout and stderr are captured separately") {
  const auto r = run(child({"out", "to-stdout", "err", "to-stderr", "out", "again"}));
  CHECK(r.exit_code == 0);
  CHECK(r.out.text == "to-stdout\nagain\n");
  CHECK(r.err.text == "to-stderr\n");
  CHECK(r.err.tail == "to-stderr\n");
  CHECK(leftover_processes().empty());
}

TEST_CASE("output lines reach the callback while the child is still running") {
  auto spec = child({"out", "first", "sleep", "1500", "out", "second", "out-partial", "tail"});
  std::vector<std::pair<std::string, bool>> lines;
  bool child_alive_at_first_line = false;
  spec.on_line = [&](stream_id s, std::string_view line, bool) {
    CHECK(s == stream_id::out);
    if (lines.empty()) child_alive_at_first_line = !arun::test::live_descendants().empty();
    lines.emplace_back(std::string(line), false);
  };
  const auto r = run(std::move(spec));
  CHECK(r.exit_code == 0);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].first == "first");
  CHECK(lines[1].first == "second");
  CHECK(lines[2].first == "tail");  // the partial last line is delivered too
  CHECK(child_alive_at_first_line);
  CHECK(leftover_processes().empty());
}

TEST_CASE("the capture keeps the first max_bytes and flags truncation") {
  auto spec = child({"emit-bytes", "1000000"});
  spec.limits.max_bytes = 100000;
  const auto r = run(std::move(spec));
  CHECK(r.exit_code == 0);
  CHECK(r.out.text.size() == 100000);
  CHECK(r.out.truncated);
  CHECK(r.out.total_bytes == 1000000);
  CHECK(r.out.tail.size() <= 8 * 1024);
  CHECK_FALSE(r.out.tail.empty());
  CHECK(leftover_processes().empty());
}

TEST_CASE("a child writing 1 GiB finishes without memory growth beyond the capture bound") {
  const std::string amount = "1073741824";
  const long before = vm_hwm_kib();
  auto spec = child({"emit-bytes", amount, "err", "done"});
  std::uint64_t lines = 0;
  spec.on_line = [&](stream_id s, std::string_view, bool) { lines += s == stream_id::out; };
  const auto r = run(std::move(spec));
  const long grown_mib = (vm_hwm_kib() - before) / 1024;
  CHECK(r.exit_code == 0);
  CHECK(r.out.total_bytes == std::stoull(amount));
  CHECK(r.out.text.size() == 10u << 20);
  CHECK(r.out.truncated);
  const auto total = std::stoull(amount);
  CHECK(lines == total / 100 + (total % 100 != 0));  // 100-byte lines and a partial last one
  CHECK(r.err.text == "done\n");
  INFO("peak RSS grew by " << grown_mib << " MiB");
  CHECK(grown_mib < 64);  // 10 MiB bound + buffers, far below the 1 GiB written
  CHECK(leftover_processes().empty());
}

TEST_CASE("a timeout sends SIGTERM to the process group") {
  auto spec = child({"sleep", "30000"});
  spec.timeout = 200ms;
  const auto r = run(std::move(spec));
  CHECK(r.timed_out);
  CHECK(r.signal == SIGTERM);
  CHECK_FALSE(r.cancelled);
  REQUIRE(r.term_latency);
  CHECK(seconds(*r.term_latency) < 2.0);
  CHECK_FALSE(r.kill_latency);
  CHECK(seconds(r.duration) < 10.0);
  CHECK(leftover_processes().empty());
}

TEST_CASE("a child ignoring SIGTERM gets SIGKILL after the grace period, grandchildren included") {
  auto spec = child({"ignore-term", "spawn-grandchild", "sleep", "30000"});
  spec.timeout = 200ms;
  spec.kill_grace = 400ms;
  const auto r = run(std::move(spec));
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);
  REQUIRE(r.kill_latency);
  CHECK(seconds(r.duration) >= 0.55);  // deadline + grace, minus timer slack
  CHECK(seconds(r.duration) < 10.0);
  const pid_t grandchild = grandchild_pid(r);
  REQUIRE(grandchild > 0);
  CHECK_FALSE(arun::test::process_alive(grandchild));
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("cancellation through the cancellation slot escalates and reports cancelled") {
  boost::asio::io_context ctx;
  boost::asio::cancellation_signal cancel;
  std::optional<process_result> result;
  auto spec = child({"ignore-term", "sleep", "30000"});
  spec.kill_grace = 300ms;
  boost::asio::co_spawn(ctx, run_process(std::move(spec)),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, process_result r) {
                          CHECK_FALSE(e);
                          result = std::move(r);
                        }));
  boost::asio::steady_timer timer(ctx, 200ms);
  timer.async_wait([&](auto) { cancel.emit(boost::asio::cancellation_type::terminal); });
  ctx.run();
  REQUIRE(result);
  CHECK(result->cancelled);
  CHECK_FALSE(result->timed_out);
  CHECK(result->signal == SIGKILL);  // it ignored SIGTERM
  CHECK(seconds(result->duration) < 10.0);
  CHECK(leftover_processes().empty());
}

TEST_CASE("a background grandchild holding the pipes does not hang the child's completion") {
  auto spec = child({"spawn-grandchild", "out", "leader done", "exit", "0"});
  const auto r = run(std::move(spec));
  CHECK(r.exit_code == 0);
  CHECK(seconds(r.duration) < 10.0);  // the grandchild sleeps 600 s
  CHECK_FALSE(r.output_abandoned);
  const pid_t grandchild = grandchild_pid(r);
  REQUIRE(grandchild > 0);
  CHECK_FALSE(arun::test::process_alive(grandchild));
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("200 children run concurrently on one thread") {
  boost::asio::io_context ctx;
  constexpr int count = 200;
  std::vector<std::optional<process_result>> results(count);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    boost::asio::co_spawn(ctx, run_process(child({"sleep", "500", "out", std::to_string(i)})),
                          [&results, i](std::exception_ptr, process_result r) { results[i] = std::move(r); });
  }
  ctx.run();
  const double wall = seconds(std::chrono::steady_clock::now() - start);
  for (int i = 0; i < count; ++i) {
    REQUIRE(results[i]);
    CHECK(results[i]->exit_code == 0);
    CHECK(results[i]->out.text == std::to_string(i) + "\n");
  }
  // Run one after another they would take 100 s; concurrently about 1 s.
  INFO("wall " << wall << " s");
  CHECK(wall < 25.0);
  CHECK(leftover_processes().empty());
}

TEST_CASE("a missing program is a launch error, not an exception or a zombie") {
  process_spec spec;
  spec.launch.argv = {"arun-no-such-program"};
  spec.launch.env = {"PATH=/usr/bin:/bin"};
  const auto r = run(std::move(spec));
  CHECK_FALSE(r.launched());
  CHECK(r.launch_error == "'arun-no-such-program' is not installed or not on PATH");
  process_spec by_path;
  by_path.launch.argv = {"/nonexistent/tool"};
  CHECK(run(std::move(by_path)).launch_error == "cannot run '/nonexistent/tool': not an executable file");
  CHECK(leftover_processes().empty());
}

TEST_CASE("a missing working directory is a launch error") {
  auto spec = child({"print-cwd"});
  spec.launch.working_dir = "/nonexistent/arun-dir";
  const auto r = run(std::move(spec));
  CHECK_FALSE(r.launched());
  CHECK_THAT(r.launch_error, Catch::Contains("working directory '/nonexistent/arun-dir' does not exist"));
  CHECK(leftover_processes().empty());
}

TEST_CASE("the child runs in the given working directory with the given environment only") {
  auto spec = child({"print-cwd", "print-env", "ARUN_PROBE", "print-env", "HOME"});
  spec.launch.working_dir = "/tmp";
  spec.launch.env = {"ARUN_PROBE=value with spaces"};
  const auto r = run(std::move(spec));
  CHECK(r.out.text == "/tmp\nvalue with spaces\n<unset>\n");
  CHECK(leftover_processes().empty());
}

TEST_CASE("stdin is /dev/null unless a descriptor is given") {
  CHECK(run(child({"read-stdin"})).out.text == "0\n");
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "12345", 5) == 5);
  ::close(fds[1]);
  auto spec = child({"read-stdin"});
  spec.launch.stdin_fd = fds[0];
  CHECK(run(std::move(spec)).out.text == "5\n");
  ::close(fds[0]);
  CHECK(leftover_processes().empty());
}

TEST_CASE("only stdin, stdout and stderr are open in the child") {
  // An fd the parent opened without close-on-exec must not leak into the child.
  const int leaked = ::dup(1);
  const auto r = run(child({"print-fds"}));
  ::close(leaked);
  CHECK(r.out.text == "0 1 2 \n");
  CHECK(leftover_processes().empty());
}

TEST_CASE("the child starts with an empty signal mask and default dispositions") {
  ::signal(SIGPIPE, SIG_IGN);  // as arun does
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ::sigprocmask(SIG_BLOCK, &block, nullptr);
  const auto r = run(child({"print-sigstate"}));
  ::sigprocmask(SIG_UNBLOCK, &block, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  // Signals 32 and 33 belong to glibc's threading internals and cannot be reset by
  // posix_spawn (sigfillset leaves them out); every standard signal must be default.
  unsigned long long blocked = 0, ignored = 0;
  REQUIRE(std::sscanf(r.out.text.c_str(), "blocked=%llx ignored=%llx", &blocked, &ignored) == 2);
  CHECK(blocked == 0);
  CHECK((ignored & 0x7fffffffULL) == 0);
  CHECK(leftover_processes().empty());
}

TEST_CASE("the child leads its own process group") {
  const auto r = run(child({"print-pgid"}));
  CHECK(r.out.text == std::to_string(r.pid) + "\n");
  CHECK(leftover_processes().empty());
}

TEST_CASE("no descriptor is leaked by many runs") {
  const int before = arun::io::open_fd_count();
  for (int i = 0; i < 20; ++i) run(child({"out", "x"}));
  auto spec = child({"sleep", "5000"});
  spec.timeout = 50ms;
  spec.kill_grace = 50ms;
  run(std::move(spec));
  process_spec missing;
  missing.launch.argv = {"arun-no-such-program"};
  run(std::move(missing));
  CHECK(arun::io::open_fd_count() == before);
  CHECK(leftover_processes().empty());
}

TEST_CASE("destroying the io_context mid-run kills the child's whole group") {
  pid_t grandchild = 0;
  {
    boost::asio::io_context ctx;
    auto spec = child({"spawn-grandchild", "ignore-term", "sleep", "30000"});
    spec.on_line = [&](stream_id, std::string_view line, bool) {
      if (line.rfind("grandchild ", 0) == 0) grandchild = std::stoi(std::string(line.substr(11)));
    };
    bool completed = false;
    boost::asio::co_spawn(ctx, run_process(std::move(spec)), [&](std::exception_ptr, process_result) { completed = true; });
    for (int i = 0; i < 200 && grandchild == 0; ++i) ctx.run_for(20ms);
    REQUIRE(grandchild > 0);
    CHECK_FALSE(completed);
  }  // the pending supervision is destroyed here: the guard must SIGKILL the group
  // SIGKILL is delivered asynchronously: give the grandchild a moment to die (leftover_processes
  // waits up to 2 s and would kill and report it if it were still running then).
  CHECK(leftover_processes().empty());
  CHECK_FALSE(arun::test::process_alive(grandchild));
}

namespace {

// Pid printed by a child as "daemon PID" (a process that left the group with setsid).
pid_t daemon_pid(const std::string& out) {
  const auto at = out.find("daemon ");
  return at == std::string::npos ? 0 : std::stoi(out.substr(at + 7));
}

process_spec bash(const std::string& script) {
  process_spec spec;
  spec.launch.argv = {"/bin/bash", "-c", script};
  spec.launch.env = arun::io::current_environment();
  return spec;
}

}  // namespace

TEST_CASE("a silent process outside the group holding the pipes is given up on after 2 s") {
  const auto r = run(bash("setsid sh -c 'echo daemon $$; exec sleep 60' & sleep 0.2; echo leader done"));
  CHECK(r.exit_code == 0);
  CHECK(r.output_abandoned);
  CHECK(seconds(r.duration) >= 1.5);
  CHECK(seconds(r.duration) < 15.0);
  const pid_t d = daemon_pid(r.out.text);
  REQUIRE(d > 0);
  ::kill(d, SIGKILL);  // setsid took it out of the step's supervision: clean up by hand
  CHECK(leftover_processes().empty());
}

TEST_CASE("a chatty process outside the group cannot hold the step beyond the drain limit") {
  const auto r = run(bash("setsid sh -c 'echo daemon $$; while sleep 0.1; do echo tick; done' & sleep 0.2"));
  CHECK(r.output_abandoned);
  CHECK(seconds(r.duration) >= 8.0);   // it is never idle: the 10 s total limit ends it
  CHECK(seconds(r.duration) < 40.0);
  const pid_t d = daemon_pid(r.out.text);
  REQUIRE(d > 0);
  ::kill(d, SIGKILL);
  CHECK(leftover_processes().empty());
}

TEST_CASE("cancelling while pipes are held outside the group ends the wait at once") {
  boost::asio::io_context ctx;
  boost::asio::cancellation_signal cancel;
  std::optional<process_result> result;
  auto spec = bash("setsid sh -c 'echo daemon $$; while sleep 0.1; do echo tick; done' & sleep 0.2");
  boost::asio::co_spawn(ctx, run_process(std::move(spec)),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr, process_result r) {
                          result = std::move(r);
                        }));
  boost::asio::steady_timer timer(ctx, 1s);
  timer.async_wait([&](auto) { cancel.emit(boost::asio::cancellation_type::terminal); });
  ctx.run();
  REQUIRE(result);
  CHECK(result->output_abandoned);
  CHECK(seconds(result->duration) < 6.0);
  const pid_t d = daemon_pid(result->out.text);
  REQUIRE(d > 0);
  ::kill(d, SIGKILL);
  CHECK(leftover_processes().empty());
}

TEST_CASE("a stopped child gets SIGCONT with SIGTERM so its TERM handler can run") {
  auto spec = bash("trap 'echo cleaned up; exit 0' TERM; kill -STOP $$; sleep 30");
  spec.timeout = 300ms;
  spec.kill_grace = 20s;
  const auto r = run(std::move(spec));
  CHECK(r.timed_out);
  CHECK(r.out.text == "cleaned up\n");
  CHECK_FALSE(r.kill_latency);       // no SIGKILL was needed
  CHECK(seconds(r.duration) < 10.0);  // well before the 20 s grace
  CHECK(leftover_processes().empty());
}

TEST_CASE("a throwing line callback stops the child and the error reaches the caller") {
  auto spec = child({"out", "first", "sleep", "30000"});
  spec.on_line = [](stream_id, std::string_view, bool) { throw std::runtime_error("listener broke"); };
  spec.kill_grace = 1s;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(run(std::move(spec)), "listener broke");
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(leftover_processes().empty());
}
