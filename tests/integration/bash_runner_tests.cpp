// Bash steps through the real runner: bodies, environment, working directories, failures.
#include <catch2/catch.hpp>

#include "process_checks.hpp"
#include "executor/process_step_runner.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"

#include <filesystem>
#include <signal.h>
#include <sys/stat.h>

using namespace std::chrono_literals;
using arun::bash_invocation;
using arun::leaf_outcome;
using arun::test::leftover_processes;

namespace {

leaf_outcome run_bash(std::string command, arun::io::runner_options options = {},
                      std::optional<std::chrono::nanoseconds> timeout = {}) {
  if (options.inherited_env.empty()) options.inherited_env = arun::io::current_environment();
  arun::io::process_step_runner runner(std::move(options));
  bash_invocation inv;
  inv.instance_id = "test";
  inv.command = std::move(command);
  inv.timeout = timeout;
  return arun::test::run_sync(runner.run_bash(std::move(inv)));
}

}  // namespace

TEST_CASE("a bash step's stdout is captured and exit 0 succeeds") {
  const auto o = run_bash("echo hello; echo to-stderr >&2");
  CHECK(o.succeeded());
  CHECK(o.stdout_text == "hello\n");
  CHECK(o.error.empty());
  CHECK(leftover_processes().empty());
}

TEST_CASE("a non-zero exit fails with the exit code and a snippet of stderr") {
  const auto o = run_bash("echo working; echo 'it broke' >&2; exit 4");
  CHECK_FALSE(o.succeeded());
  CHECK(o.exit_code == 4);
  CHECK(o.error == "exit code 4");
  CHECK_THAT(o.snippet, Catch::StartsWith("it broke\n"));
  CHECK_THAT(o.snippet, Catch::Contains("working"));
  CHECK(leftover_processes().empty());
}

TEST_CASE("a missing tool is named in the error") {
  const auto o = run_bash("arun-missing-tool --version");
  CHECK(o.exit_code == 127);
  CHECK(o.error == "'arun-missing-tool' is not installed or not on PATH");
  CHECK(leftover_processes().empty());
}

TEST_CASE("bodies over 64 KiB run from a private temp file that is removed afterwards") {
  const auto dir = std::filesystem::temp_directory_path() / ("arun-body-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("TMPDIR", dir.c_str(), 1);
  std::string body = "# " + std::string(70 * 1024, 'x') + "\n";
  body += "echo \"$0\"; stat -c %a \"$0\"; printf '%s' 'the end'";
  const auto o = run_bash(body);
  ::unsetenv("TMPDIR");
  CHECK(o.succeeded());
  const auto path = o.stdout_text.substr(0, o.stdout_text.find('\n'));
  CHECK_THAT(path, Catch::StartsWith(dir.string() + "/arun-body-"));
  CHECK_THAT(o.stdout_text, Catch::EndsWith("\n600\nthe end"));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
  CHECK(leftover_processes().empty());
}

TEST_CASE("the step environment is hardened and step env is applied last") {
  arun::io::runner_options options;
  options.inherited_env = {"CI=false", "KEEP=kept", "NONINTERACTIVE=0"};
  arun::io::process_step_runner runner(options);
  bash_invocation inv;
  inv.command = "echo \"$HOME|$PATH|$NONINTERACTIVE|$DEBIAN_FRONTEND|$CI|$KEEP|$STEP_VAR\"";
  inv.env = {{"STEP_VAR", "from step"}, {"KEEP", "overridden"}};
  const auto o = arun::test::run_sync(runner.run_bash(std::move(inv)));
  CHECK(o.stdout_text == "/root|/usr/local/bin:/usr/bin:/bin|1|noninteractive|true|overridden|from step\n");
  CHECK(leftover_processes().empty());
}

TEST_CASE("relative working directories resolve under the run's base directory") {
  const auto base = std::filesystem::temp_directory_path() / ("arun-wd-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(base / "sub");
  arun::io::runner_options options;
  options.base_dir = base.string();
  options.inherited_env = arun::io::current_environment();
  arun::io::process_step_runner runner(options);
  bash_invocation inv;
  inv.command = "pwd";
  inv.working_dir = "sub";
  CHECK(arun::test::run_sync(runner.run_bash(inv)).stdout_text == (base / "sub").string() + "\n");
  inv.working_dir = "missing";
  const auto o = arun::test::run_sync(runner.run_bash(inv));
  CHECK_FALSE(o.started);
  CHECK_THAT(o.error, Catch::Contains("working directory '" + (base / "missing").string() + "' does not exist"));
  std::filesystem::remove_all(base);
  CHECK(leftover_processes().empty());
}

TEST_CASE("a step timeout stops bash and its children and says so") {
  arun::io::runner_options options;
  options.kill_grace = 1s;
  const auto o = run_bash("sleep 30 & sleep 30; echo never", options, 300ms);
  CHECK(o.timed_out);
  CHECK(o.signal == SIGTERM);
  CHECK(o.error == "timed out after 0.3s (stopped with SIGTERM)");
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("a background process does not outlive its step") {
  const auto start = std::chrono::steady_clock::now();
  const auto o = run_bash("nohup sleep 300 >/dev/null 2>&1 & echo started");
  CHECK(o.succeeded());
  CHECK(o.stdout_text == "started\n");
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK(leftover_processes(0ms).empty());
}

TEST_CASE("bash gets SIGPIPE back: a pipeline ending early is quiet") {
  ::signal(SIGPIPE, SIG_IGN);  // as arun does
  const auto o = run_bash("yes | head -n 2");
  ::signal(SIGPIPE, SIG_DFL);
  CHECK(o.succeeded());
  CHECK(o.stdout_text == "y\ny\n");
  CHECK(o.snippet.empty());
  CHECK(leftover_processes().empty());
}

TEST_CASE("a temp file that cannot be written fails the step instead of throwing") {
  ::setenv("TMPDIR", "/nonexistent/arun-tmp", 1);
  const auto o = run_bash("# " + std::string(70 * 1024, 'x') + "\necho never");
  ::unsetenv("TMPDIR");
  CHECK_FALSE(o.started);
  CHECK_THAT(o.error, Catch::StartsWith("cannot write the step body or a variable to a temporary file"));
  CHECK(leftover_processes().empty());
}

TEST_CASE("truncation is reported for stderr as well as stdout") {
  arun::io::runner_options options;
  options.limits.max_bytes = 1000;
  const auto o = run_bash("head -c 100000 /dev/zero | tr '\\0' e >&2; echo fine", options);
  CHECK(o.succeeded());
  CHECK(o.truncated);
  CHECK(o.stdout_text == "fine\n");
  CHECK(leftover_processes().empty());
}
