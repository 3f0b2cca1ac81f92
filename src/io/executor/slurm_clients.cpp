#include "executor/slurm_clients.hpp"

#include "process/spawn.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace arun::io {
namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto client_timeout = std::chrono::seconds(30);

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

// Not a coroutine: g++ 12 cannot keep a braced list of strings in a coroutine frame.
asio::awaitable<process_result> scancel(std::string id, const char* signal, const std::vector<std::string>& env) {
  std::vector<std::string> argv = {"scancel"};
  if (signal) {
    argv.push_back(std::string("--signal=") + signal);
    argv.push_back("--full");  // the batch script and every step of the job
  }
  argv.push_back(std::move(id));
  return slurm_client(std::move(argv), env);
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
