#include "process/spawn.hpp"

#include "files/fd_write.hpp"
#include "process/vfork_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

namespace arun::io {
namespace {

constexpr std::string_view default_path = "/usr/local/bin:/usr/bin:/bin";

// Closes the fds it holds unless released: keeps every early return leak-free.
struct fd_pair {
  int fd[2] = {-1, -1};
  ~fd_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  bool open() {
    if (::pipe2(fd, O_CLOEXEC) != 0) return false;
    // Keep pipe ends above 0-2 so that dup2 onto stdio never clobbers a pipe end.
    for (int& f : fd) {
      if (f > 2) continue;
      const int moved = ::fcntl(f, F_DUPFD_CLOEXEC, 3);
      ::close(f);
      f = moved;
      if (moved < 0) return false;
    }
    return true;
  }
  int release_read() { return std::exchange(fd[0], -1); }
};

std::string check_working_dir(const std::string& dir) {
  if (dir.empty()) return {};
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return "working directory '" + dir + "' does not exist (" + errno_text(errno) + ")";
  if (!S_ISDIR(st.st_mode)) return "working directory '" + dir + "' is not a directory";
  return {};
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& kv : env) {
    if (kv.size() > name.size() && kv[name.size()] == '=' && kv.compare(0, name.size(), name) == 0)
      return kv.substr(name.size() + 1);
  }
  return std::nullopt;
}

std::optional<std::string> find_program(const std::string& program,
                                        const std::vector<std::string>& env) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    return std::nullopt;
  }
  const std::string path = env_value(env, "PATH").value_or(std::string(default_path));
  std::string_view rest = path;
  while (true) {
    const auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty()) dir = ".";  // POSIX: an empty PATH entry means the current directory
    std::string candidate = dir + "/" + program;
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

launch_result launch(const launch_request& request) {
  if (request.argv.empty()) return {std::nullopt, "nothing to run: empty command line"};
  if (auto problem = check_working_dir(request.working_dir); !problem.empty())
    return {std::nullopt, problem};
  const auto program = find_program(request.argv[0], request.env);
  if (!program) {
    const bool has_slash = request.argv[0].find('/') != std::string::npos;
    return {std::nullopt, has_slash ? "cannot run '" + request.argv[0] + "': not an executable file"
                                    : "'" + request.argv[0] + "' is not installed or not on PATH"};
  }

  fd_pair out, err;
  if (!out.open() || !err.open()) return {std::nullopt, "cannot create pipes: " + errno_text(errno)};

  std::vector<char*> argv, envp;
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : request.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  child_plan plan;
  plan.program = program->c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.working_dir = request.working_dir.empty() ? nullptr : request.working_dir.c_str();
  plan.stdin_fd = request.stdin_fd;
  plan.stdout_fd = out.fd[1];
  plan.stderr_fd = err.fd[1];
  plan.cgroup_dir_fd = request.cgroup_dir_fd;

  const auto started = start_child(plan);
  if (!started.error.empty()) return {std::nullopt, started.error};
  if (plan.failed_stage != child_stage::none) {
    // The child reported why it could not exec and has exited: reap it, report the reason.
    while (::waitpid(started.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (started.pidfd >= 0) ::close(started.pidfd);
    if (plan.failed_stage == child_stage::cgroup)
      return {std::nullopt, "cannot move into the step's cgroup: " + errno_text(plan.error)};
    return {std::nullopt, "cannot run '" + *program + "': " + errno_text(plan.error)};
  }

  launched_child child;
  child.pid = started.pid;
  child.stdout_fd = out.release_read();
  child.stderr_fd = err.release_read();
  child.pidfd = started.pidfd;
  return {child, {}};
}

}  // namespace arun::io
