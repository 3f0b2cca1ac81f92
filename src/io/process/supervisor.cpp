#include "process/supervisor.hpp"

#include "output/arun_log.hpp"

#include "process/process_group_guard.hpp"
#include "process/process_table.hpp"
#include "process/step_containment.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <exception>
#include <memory>
#include <utility>

namespace arun::io {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;
constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);

// Without a pidfd (very old kernels) exit is detected by polling at this interval.
constexpr auto poll_interval = std::chrono::milliseconds(10);
// After the group is dead, output still in the pipes is read until EOF; a process that left
// the group (setsid) could hold the pipes forever, so stop after this long without progress.
double ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

constexpr auto drain_idle_limit = std::chrono::seconds(2);
// ... and a process that keeps writing into them cannot hold the step for longer than this.
constexpr auto drain_total_limit = std::chrono::seconds(10);
// SIGKILL is asynchronous: members of the group may still be running right after it is sent.
// Wait this long at most for them to die (only an uninterruptible sleep takes longer).
constexpr auto group_exit_limit = std::chrono::seconds(5);

// Sets "K=V", replacing any K already there (an arun started by a step inherits the outer one's).
void set_env_entry(std::vector<std::string>& env, const std::string& entry) {
  const auto name_end = entry.find('=') + 1;
  std::erase_if(env, [&](const std::string& kv) { return kv.compare(0, name_end, entry, 0, name_end) == 0; });
  env.push_back(entry);
}

// Everything one supervised child needs, shared by its pump and watch coroutines.
// What contains the child's processes besides its group (process/step_containment.hpp).
struct containment {
  std::unique_ptr<step_cgroup> cgroup;     // cgroup mode
  std::unique_ptr<subreaper_step> reaped;  // subreaper mode
};

struct child_run {
  child_run(const asio::any_io_executor& ex, const launched_child& c, process_spec s, containment held)
      : spec(std::move(s)),
        pid(c.pid),
        contained(std::move(held)),
        guard(c.pid),
        out(ex, c.stdout_fd),
        err(ex, c.stderr_fd),
        pidfd(ex),
        stop_timer(ex, clock::time_point::max()),
        grace_timer(ex),
        drain_timer(ex),
        poll_timer(ex),
        out_capture(spec.limits, line_sink_for(stream_id::out)),
        err_capture(spec.limits, line_sink_for(stream_id::err)) {
    if (c.pidfd >= 0) pidfd.assign(c.pidfd);
    if (spec.timeout) {
      deadline = started + *spec.timeout;
      stop_timer.expires_at(*deadline);
    }
  }

  line_sink line_sink_for(stream_id id) {
    if (!spec.on_line) return {};
    return [this, id](std::string_view line, bool cut) { spec.on_line(id, line, cut); };
  }

  // Called from the awaiting coroutine's cancellation slot (and when arun itself fails).
  void request_cancel() {
    cancel_requested = true;
    // Completes a pending stop wait now, and makes a later one complete immediately.
    stop_timer.expires_at(clock::time_point::min());
    drain_timer.cancel();  // a cancelled step does not wait for pipes held outside its group
  }

  // Stops reading: closing the pipes fails any read in flight and every later one.
  void abandon_output() {
    output_abandoned = true;
    boost::system::error_code ignored;
    out.close(ignored);
    err.close(ignored);
  }

  bool leader_exited() const {
    siginfo_t si{};
    // WNOWAIT: look without reaping, so the pgid stays reserved until the group is killed.
    if (::waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // ECHILD
    return si.si_pid == pid;
  }

  void signal_group(int sig) {
    ::kill(-pid, sig);
    // And what left the group; an empty cgroup is left alone, so it can serve the next step.
    if (sig == SIGKILL && contained.cgroup && contained.cgroup->populated()) contained.cgroup->kill();
  }

  // Kills what is left of the group, then reaps the leader (it has exited: no blocking).
  void reap() {
    signal_group(SIGKILL);
    guard.release();  // from here on the group id may be reused: no emergency kill may hit it
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r == pid && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (r == pid && WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }

  process_spec spec;
  pid_t pid;
  containment contained;  // before the guard: the guard goes first
  process_group_guard guard;
  asio::readable_pipe out, err;
  asio::posix::stream_descriptor pidfd;
  asio::steady_timer stop_timer, grace_timer, drain_timer, poll_timer;
  output_capture out_capture, err_capture;
  clock::time_point started = clock::now();
  std::optional<clock::time_point> deadline;
  bool cancel_requested = false;
  bool output_abandoned = false;
  int open_pumps = 2;
  std::exception_ptr failure;  // arun's own fault inside a pump (a throwing line callback)
  process_result result;
};

// True when the leader has exited; false when the wait was cancelled (it lost a race).
asio::awaitable<bool> wait_leader_exit(child_run& c) {
  for (;;) {
    if (c.leader_exited()) co_return true;
    // Readiness can be spurious (TOOLCHAIN.md §3 bug 1): always re-check with waitid.
    if (c.pidfd.is_open()) {
      auto [ec] = co_await c.pidfd.async_wait(asio::posix::descriptor_base::wait_read, use_nothrow);
      if (ec == asio::error::operation_aborted) co_return false;
      if (ec) {
        boost::system::error_code ignored;
        c.pidfd.close(ignored);  // unexpected: fall back to polling rather than give up
      }
    } else {
      c.poll_timer.expires_after(poll_interval);
      auto [ec] = co_await c.poll_timer.async_wait(use_nothrow);
      if (ec) co_return false;
    }
  }
}

// Never throws: a failing line callback is arun's fault, so it is recorded, the child is
// stopped like a cancelled one, and the failure is rethrown once the child is gone.
void record_failure(child_run& c) {
  if (!c.failure) c.failure = std::current_exception();
  c.request_cancel();
}

asio::awaitable<void> pump(child_run& c, asio::readable_pipe& pipe, output_capture& capture) {
  std::array<char, 32 * 1024> buffer;
  for (;;) {
    auto [ec, n] = co_await pipe.async_read_some(asio::buffer(buffer), use_nothrow);
    if (c.output_abandoned) break;
    if (n > 0) {
      try {
        capture.append(std::string_view(buffer.data(), n));
      } catch (...) {
        record_failure(c);
        capture.drop_line_sink();
      }
    }
    if (ec) break;  // EOF, or the pipe was closed by abandon_output
  }
  try {
    capture.finish();
  } catch (...) {
    record_failure(c);
  }
  if (--c.open_pumps == 0) c.drain_timer.cancel();
}

// Stops the child: SIGTERM to the group, SIGKILL after the grace period.
asio::awaitable<void> escalate(child_run& c) {
  // In function scope: at file scope the directive would reach the files after this one in a
  // unity build.
  using namespace asio::experimental::awaitable_operators;
  const auto term_at = clock::now();
  if (c.deadline && !c.cancel_requested) c.result.term_latency = term_at - *c.deadline;
  c.signal_group(SIGTERM);
  c.signal_group(SIGCONT);  // a stopped member (SIGTTIN on a tty read) must be able to act on it
  arun_log().info("pid {}: SIGTERM to its group ({})", c.pid, c.cancel_requested ? "cancelled" : "timed out");
  c.grace_timer.expires_at(term_at + c.spec.kill_grace);
  auto graced = co_await (wait_leader_exit(c) || c.grace_timer.async_wait(use_nothrow));
  if (graced.index() == 0 && std::get<0>(graced)) {
    arun_log().debug("pid {}: exited {:.1f} ms after SIGTERM", c.pid, ms(clock::now() - term_at));
    co_return;
  }
  c.result.kill_latency = clock::now() - (term_at + c.spec.kill_grace);
  arun_log().warn("pid {}: still running {:.3f} s after SIGTERM: SIGKILL to its group ({:.1f} ms past the grace)", c.pid,
                  std::chrono::duration<double>(c.spec.kill_grace).count(), ms(*c.result.kill_latency));
  c.signal_group(SIGKILL);
  co_await wait_leader_exit(c);
}

// Polls `gone(round)` with a growing delay (1 ms, doubling to 50 ms) until it holds; false
// when group_exit_limit passed first (only an uninterruptible sleep outlasts SIGKILL so long).
template <typename Gone>
asio::awaitable<bool> poll_until(child_run& c, Gone gone) {
  const auto give_up = clock::now() + group_exit_limit;
  auto delay = std::chrono::milliseconds(1);
  for (int round = 0;; ++round) {
    if (gone(round)) co_return true;
    if (clock::now() >= give_up) co_return false;
    c.poll_timer.expires_after(delay);
    co_await c.poll_timer.async_wait(use_nothrow);
    delay = std::min(delay * 2, std::chrono::milliseconds(50));
  }
}

// When arun runs as a subreaper (tests, the soak tool, subreaper containment), the group's
// orphans are its children: reap them so zombies never pile up.
void reap_group_orphans(pid_t pgid) {
  siginfo_t si{};
  while (::waitid(P_PGID, static_cast<id_t>(pgid), &si, WEXITED | WNOHANG) == 0 && si.si_pid != 0) si = {};
}

// The step's processes end with the step (docs/supervisor.md,
// "Containment: no process outlives its step"). After the leader is reaped:
// - cgroup mode: cgroup.kill until the cgroup is empty; nothing can have left it.
// - otherwise: the group, re-sending SIGKILL against late forks. The common case (no other
//   member) costs one kill() returning ESRCH; members that are only zombies waiting for
//   another reaper (init) no longer run, and after a few rounds /proc tells. While members
//   remain they pin the group id; it could only be reused after they are all gone and the pid
//   allocator has wrapped around pid_max within one poll interval: not a practical hazard.
// - subreaper mode, then: the processes that left the group re-parent to arun as their
//   parents die; they are swept (killed) until none of this step's is left.
asio::awaitable<void> wait_step_processes_gone(child_run& c) {
  constexpr int rounds_before_scanning = 4;
  bool gone = false;
  if (auto* cgroup = c.contained.cgroup.get()) {
    gone = co_await poll_until(c, [&](int) {
      reap_group_orphans(c.pid);
      if (!cgroup->populated()) return true;
      cgroup->kill();  // only when needed: a killed cgroup cannot be reused
      return false;
    });
  } else {
    gone = co_await poll_until(c, [&](int round) {
      reap_group_orphans(c.pid);
      if (::kill(-c.pid, SIGKILL) != 0) return true;
      return round >= rounds_before_scanning && !group_has_running_member(c.pid);
    });
  }
  if (auto* reaped = c.contained.reaped.get()) {
    reaped->finish();
    gone = co_await poll_until(c, [](int) { return sweep_escaped_processes() == 0; }) && gone;
  }
  if (!gone) c.result.group_survivors = true;
}

// Reads what is left in the pipes. Normally EOF comes at once (the group is dead); a process
// that left the group but holds the pipes is given up on after drain_idle_limit without
// output, drain_total_limit in all, or at once when the step is cancelled.
asio::awaitable<void> drain(child_run& c) {
  const auto give_up = clock::now() + drain_total_limit;
  auto seen = c.out_capture.total_bytes() + c.err_capture.total_bytes();
  while (c.open_pumps > 0 && !c.cancel_requested) {
    c.drain_timer.expires_at(std::min(clock::now() + drain_idle_limit, give_up));
    co_await c.drain_timer.async_wait(use_nothrow);
    const auto now_seen = c.out_capture.total_bytes() + c.err_capture.total_bytes();
    if (now_seen == seen || clock::now() >= give_up) break;
    seen = now_seen;
  }
  if (c.open_pumps > 0) {
    arun_log().warn("pid {}: its output pipes are still held open after it exited (by a process outside its step); "
                    "output after this is not read", c.pid);
    c.abandon_output();
  }
}

asio::awaitable<void> watch(child_run& c) {
  using namespace asio::experimental::awaitable_operators;
  auto first = co_await (wait_leader_exit(c) || c.stop_timer.async_wait(use_nothrow));
  const bool exited = first.index() == 0 && std::get<0>(first);
  if (!exited) {
    if (c.cancel_requested)
      c.result.cancelled = true;
    else
      c.result.timed_out = true;
    co_await escalate(c);
  }
  c.reap();
  co_await wait_step_processes_gone(c);
  co_await drain(c);
}

asio::awaitable<void> supervise(std::shared_ptr<child_run> c) {
  using namespace asio::experimental::awaitable_operators;
  co_await (pump(*c, c->out, c->out_capture) && pump(*c, c->err, c->err_capture) && watch(*c));
  if (c->failure) std::rethrow_exception(c->failure);
}

process_result finish(child_run& c) {
  auto r = std::move(c.result);
  r.pid = c.pid;
  r.output_abandoned = c.output_abandoned;
  r.out = c.out_capture.take();
  r.err = c.err_capture.take();
  r.duration = clock::now() - c.started;
  arun_log().debug("pid {} ended: {} after {:.1f} ms ({} bytes out, {} err)", c.pid,
                   r.signal ? "signal " + std::to_string(*r.signal)
                            : "exit " + (r.exit_code ? std::to_string(*r.exit_code) : std::string("?")),
                   ms(r.duration), r.out.total_bytes, r.err.total_bytes);
  return r;
}

// The supervision runs in its own coroutine, detached from the caller's cancellation: the
// caller's cancellation becomes a stop request, so pipes keep draining and the escalation
// runs to the end instead of being torn down halfway.
struct run_initiation {
  template <typename Handler>
  void operator()(Handler&& handler, process_spec spec) const {
    auto ex = asio::get_associated_executor(handler);
    containment held;
    held.cgroup = make_step_cgroup();
    if (held.cgroup) {
      spec.launch.cgroup_dir_fd = held.cgroup->dir_fd();
    } else if (step_containment().mode == containment_mode::subreaper) {
      held.reaped = std::make_unique<subreaper_step>();
      set_env_entry(spec.launch.env, held.reaped->environment_entry());
    }
    launch_result launched;
    {
      const auto lock = launch_lock();  // a sweep must see the new leader as running
      launched = launch(spec.launch);
      if (held.reaped && launched.child) held.reaped->started(launched.child->pid);
    }
    if (!launched.child) {
      arun_log().warn("cannot start {}: {}", spec.launch.argv.empty() ? "" : spec.launch.argv.front(), launched.error);
      process_result r;
      r.launch_error = std::move(launched.error);
      asio::post(ex, [h = std::forward<Handler>(handler), r = std::move(r)]() mutable {
        std::move(h)(std::exception_ptr{}, std::move(r));
      });
      return;
    }
    arun_log().debug("spawned pid {} for {}: {} in {} ({})", launched.child->pid, spec.label, spec.launch.argv.front(),
                     spec.launch.working_dir.empty() ? "." : spec.launch.working_dir,
                     held.cgroup ? "cgroup" : held.reaped ? "subreaper" : "process group");
    auto run = std::make_shared<child_run>(ex, *launched.child, std::move(spec), std::move(held));
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) {
      slot.assign([weak = std::weak_ptr<child_run>(run)](asio::cancellation_type type) {
        if (type == asio::cancellation_type::none) return;
        if (auto r = weak.lock()) r->request_cancel();
      });
    }
    asio::co_spawn(ex, supervise(run),
                   [run, slot, h = std::forward<Handler>(handler)](std::exception_ptr e) mutable {
                     if (slot.is_connected()) slot.clear();
                     std::move(h)(e, finish(*run));
                   });
  }
};

}  // namespace

void kill_all_supervised_processes() noexcept {
  process_group_guard::signal_all(SIGKILL);
  kill_all_step_cgroups();
}

asio::awaitable<process_result> run_process(process_spec spec) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(std::exception_ptr, process_result)>(
      run_initiation{}, asio::use_awaitable, std::move(spec));
}

}  // namespace arun::io
