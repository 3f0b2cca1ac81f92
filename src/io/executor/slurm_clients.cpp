#include "executor/slurm_clients.hpp"

#include "output/arun_log.hpp"
#include "process/spawn.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace arun::io {
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto client_timeout = std::chrono::seconds(30);

// Not in a coroutine: g++ 12 cannot keep a braced list of strings in a coroutine frame.
std::vector<std::string> scancel_command(const std::string& signal) {
  std::vector<std::string> argv = {"scancel"};
  if (!signal.empty()) {
    argv.push_back("--signal=" + signal);
    argv.push_back("--full");  // the batch script and every step of the job
  }
  return argv;
}

}  // namespace

asio::awaitable<process_result> slurm_client(std::vector<std::string> argv, const std::vector<std::string>& env) {
  process_spec spec;
  spec.launch.argv = std::move(argv);
  spec.launch.env = env;
  spec.timeout = client_timeout;
  spec.kill_grace = std::chrono::seconds(1);
  spec.label = spec.launch.argv.front();
  co_return co_await run_process(std::move(spec));
}

asio::awaitable<void> scancel_batches::cancel(std::string id, const char* signal) {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  asked me;
  me.id = std::move(id);
  me.signal = signal ? signal : "";
  me.done = &done;
  queue_.push_back(std::move(me));
  if (!send_pending_) {
    send_pending_ = true;
    asio::co_spawn(ex, send_after_window(), asio::detached);
  }
  co_await done.async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<void> scancel_batches::send_after_window() {
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer wait(ex, window);
  co_await wait.async_wait(asio::as_tuple(asio::use_awaitable));
  send_pending_ = false;
  auto batch = std::move(queue_);
  queue_.clear();
  std::map<std::string, std::vector<std::string>> ids_by_signal;
  for (const auto& a : batch) ids_by_signal[a.signal].push_back(a.id);
  for (auto& [signal, ids] : ids_by_signal)
    for (std::size_t from = 0; from < ids.size(); from += ids_per_call) {
      std::vector<std::string> argv = scancel_command(signal);
      const auto to = std::min(ids.size(), from + ids_per_call);
      argv.insert(argv.end(), ids.begin() + static_cast<std::ptrdiff_t>(from),
                  ids.begin() + static_cast<std::ptrdiff_t>(to));
      ++calls_;
      // A job that ended meanwhile makes scancel complain and exit 0; the others are cancelled.
      const auto r = co_await slurm_client(std::move(argv), env_);
      if (!r.succeeded()) arun_log().debug("scancel of {} jobs: {}", to - from, client_failure(r));
    }
  for (const auto& a : batch) a.done->cancel();
}

asio::awaitable<process_result> squeue(const std::string& session_id, const std::vector<std::string>& env) {
  // --all: jobs in hidden partitions too; --array: each task of an array job on a line of
  // its own, pending ones too, as ARRAY_TASK.
  std::vector<std::string> argv = {"squeue", "--all", "--array", "--noheader", "--name=arun-" + session_id,
                                   "--format=%i %T %r"};
  return slurm_client(std::move(argv), env);
}

void run_blocking(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  std::chrono::milliseconds limit) noexcept {
  try {
    launch_request request;
    request.argv = argv;
    request.env = env;
    const auto started = launch(request);
    if (!started.child) return;
    const auto until = clock_type::now() + limit;
    int status = 0;
    while (::waitpid(started.child->pid, &status, WNOHANG) == 0) {
      if (clock_type::now() >= until) {
        ::kill(-started.child->pid, SIGKILL);
        ::waitpid(started.child->pid, &status, 0);
        break;
      }
      ::usleep(10'000);
    }
    for (const int fd : {started.child->stdout_fd, started.child->stderr_fd, started.child->pidfd})
      if (fd >= 0) ::close(fd);
  } catch (...) {
    // Out of memory while arun stops anyway: nothing more to do.
  }
}

std::string client_failure(const process_result& r) {
  if (!r.launched()) return r.launch_error;
  if (r.timed_out) return "timed out";
  std::string why = r.err.tail.empty() ? r.out.tail : r.err.tail;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return (r.exit_code ? "exit code " + std::to_string(*r.exit_code) : std::string("killed")) +
         (why.empty() ? "" : ": " + why);
}

}  // namespace arun::io
