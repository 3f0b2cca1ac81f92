// The slurm executor against a private Slurm cluster (tests/support/slurm_cluster.hpp): the
// same results as the local executor for exit codes, output, environment and working
// directory; deadlines and cancels end with no job left; a job that vanishes is `lost`.
#include <catch2/catch.hpp>

#include "executor/slurm_executor.hpp"
#include "executor/step_environment.hpp"
#include "process_checks.hpp"
#include "slurm_cluster.hpp"
#include "temp_dir.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using arun::io::job_spec;
using arun::io::process_result;
using arun::io::slurm_executor;
using arun::io::slurm_options;
using arun::test::slurm_cluster;

namespace {

std::vector<std::string> client_env(const slurm_cluster& cluster) {
  auto env = arun::io::current_environment();
  for (const auto& kv : cluster.env()) env.push_back(kv);
  return env;
}

job_spec bash_job(const std::string& key, const std::string& script) {
  job_spec job;
  job.key = key;
  job.process.launch.argv = {"/bin/bash", "-c", script};
  job.process.launch.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "ONLY_THIS=yes"};
  job.process.kill_grace = 1s;
  return job;
}

struct ran {
  process_result result;
  std::vector<std::string> out_lines, err_lines;
  std::string job_id;
  std::uint64_t polls = 0;
};

// Runs `job` on a slurm executor; `cancel_after`: cancel the awaiting coroutine that long
// after the step's first output line (so the job surely runs, past its wrapper's start).
ran run_on_slurm(const slurm_cluster& cluster, job_spec job, const std::string& shared_dir,
                 std::optional<std::chrono::milliseconds> cancel_after = {}, std::chrono::milliseconds lost_after = 30s) {
  boost::asio::io_context ctx;
  slurm_options o;
  o.shared_dir = shared_dir;
  o.session_id = "test-" + std::to_string(::getpid());
  o.client_env = client_env(cluster);
  o.lost_after = lost_after;
  slurm_executor slurm(o);
  ran r;
  boost::asio::cancellation_signal cancel;
  boost::asio::steady_timer timer(ctx);
  job.process.on_line = [&](arun::io::stream_id s, std::string_view line, bool) {
    auto& lines = s == arun::io::stream_id::out ? r.out_lines : r.err_lines;
    if (cancel_after && r.out_lines.empty() && r.err_lines.empty()) {
      timer.expires_after(*cancel_after);
      timer.async_wait([&](auto) { cancel.emit(boost::asio::cancellation_type::terminal); });
    }
    lines.emplace_back(line);
  };
  job.submitted = [&r](const arun::io::job_handle& h) { r.job_id = h.id; };
  std::optional<process_result> result;
  boost::asio::co_spawn(ctx, slurm.run(std::move(job)),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, process_result pr) {
                          CHECK_FALSE(e);
                          result = std::move(pr);
                        }));
  ctx.run();
  REQUIRE(result);
  r.result = std::move(*result);
  r.polls = slurm.stats().queue_polls;
  return r;
}

#define SKIP_WITHOUT_SLURM()                                                          \
  if (const auto why = slurm_cluster::unavailable_reason(); !why.empty()) {          \
    WARN("no Slurm here: " << why);                                                  \
    return;                                                                          \
  }

}  // namespace

TEST_CASE("slurm executor: exit code and stdout and stderr come back separately") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared;
    const auto r = run_on_slurm(c, bash_job("exit/three", "echo out; echo err >&2; exit 3"), shared.root.string());
    INFO(c.log_tail());
    INFO(r.result.launch_error);
    REQUIRE(r.result.launch_error.empty());
    CHECK(r.result.exit_code == 3);
    CHECK_FALSE(r.result.signal);
    CHECK(r.result.out.text == "out\n");
    CHECK(r.result.err.text == "err\n");
    CHECK(r.out_lines == std::vector<std::string>{"out"});
    CHECK(r.err_lines == std::vector<std::string>{"err"});
    CHECK_FALSE(r.job_id.empty());
    CHECK(r.polls >= 1);
    CHECK(c.wait_queue_empty(10s));
  }  // the cluster is gone: nothing of it, or of the jobs, may be left
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: the step gets its own environment and working directory") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared, work;
    auto job = bash_job("env", "pwd; echo \"$ONLY_THIS\"; echo \"${HOME:-no home}\"; test -n \"$SLURM_JOB_ID\" && echo job");
    job.process.launch.working_dir = work.root.string();
    const auto r = run_on_slurm(c, std::move(job), shared.root.string());
    INFO(c.log_tail());
    REQUIRE(r.result.exit_code == 0);
    CHECK(r.out_lines == std::vector<std::string>{work.root.string(), "yes", "no home", "job"});
  }  // the cluster is gone: nothing of it, or of the jobs, may be left
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: a step past its deadline that ignores SIGTERM is killed and no job is left") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared;
    auto job = bash_job("slow", "trap '' TERM; echo started; sleep 120; echo never");
    job.process.timeout = 1s;
    const auto r = run_on_slurm(c, std::move(job), shared.root.string());
    INFO(c.log_tail());
    CHECK(r.result.timed_out);
    CHECK_FALSE(r.result.cancelled);
    CHECK_FALSE(r.result.exit_code);
    CHECK(r.result.signal == SIGKILL);  // it ignored the TERM
    CHECK(r.out_lines == std::vector<std::string>{"started"});
    CHECK(c.wait_queue_empty(15s));
  }  // the cluster is gone: nothing of it, or of the jobs, may be left
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: cancelling the run cancels the job") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared;
    const auto r = run_on_slurm(c, bash_job("cancelled", "echo started; sleep 120"), shared.root.string(), 500ms);
    INFO(c.log_tail());
    INFO("launch error: " << r.result.launch_error << "; exit " << r.result.exit_code.value_or(-1) << "; signal " << r.result.signal.value_or(-1) << "; out: " << r.result.out.text << "; err: " << r.result.err.text);
    CHECK(r.result.cancelled);
    CHECK_FALSE(r.result.timed_out);
    CHECK_FALSE(r.result.exit_code);
    CHECK(r.result.signal == SIGTERM);  // the step ended on the TERM, and the wrapper said so
    CHECK(c.wait_queue_empty(15s));
  }  // the cluster is gone: nothing of it, or of the jobs, may be left
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: a job that ends without an exit status is lost") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared;
    // The step kills the wrapper that would write the exit status.
    const auto r = run_on_slurm(c, bash_job("lost", "kill -KILL $PPID; sleep 1"), shared.root.string(), {}, 1500ms);
    INFO(c.log_tail());
    CHECK(r.result.launch_error.find("left the queue without an exit status (lost") != std::string::npos);
    CHECK(c.wait_queue_empty(15s));
  }  // the cluster is gone: nothing of it, or of the jobs, may be left
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: the emergency stop cancels every job of the run at once") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared;
    boost::asio::io_context ctx;
    slurm_options o;
    o.shared_dir = shared.root.string();
    o.session_id = "stop-" + std::to_string(::getpid());
    o.client_env = client_env(c);
    slurm_executor slurm(o);
    int submitted = 0;
    for (int i = 0; i < 3; ++i) {
      auto job = bash_job("sleeper" + std::to_string(i), "sleep 120");
      job.submitted = [&](const arun::io::job_handle&) {
        // Like a second Ctrl-C: once every job is in, stop them all and leave the loop.
        if (++submitted == 3) {
          CHECK(c.queue().size() == 3);
          slurm.emergency_stop();
          ctx.stop();
        }
      };
      boost::asio::co_spawn(ctx, slurm.run(std::move(job)), [](std::exception_ptr, process_result) {});
    }
    ctx.run_for(60s);
    CHECK(submitted == 3);
    CHECK(c.wait_queue_empty(10s));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("slurm executor: a step's stdin (an agent's prompt) reaches it, and no copy of it stays behind") {
  SKIP_WITHOUT_SLURM();
  {
    slurm_cluster c;
    arun::test::temp_dir shared, input;
    const auto prompt = input.write("prompt", "line one\nline two\n");
    const int fd = ::open(prompt.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    auto job = bash_job("reads-stdin", "cat");
    job.process.launch.stdin_fd = fd;
    const auto r = run_on_slurm(c, std::move(job), shared.root.string());
    ::close(fd);
    INFO(r.result.launch_error);
    REQUIRE(r.result.exit_code == 0);
    CHECK(r.out_lines == std::vector<std::string>{"line one", "line two"});
    // The input, the environment and the command line may hold secrets: removed after the job.
    for (const auto& e : std::filesystem::recursive_directory_iterator(shared.root)) {
      const auto name = e.path().filename().string();
      CHECK((name != "stdin" && name != "env" && name != "argv"));
    }
  }
  CHECK(arun::test::leftover_processes().empty());
}
