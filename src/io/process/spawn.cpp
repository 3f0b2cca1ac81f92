#include "process/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

struct spawn_attributes {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  spawn_attributes() {
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attr);
  }
  ~spawn_attributes() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
  }
  spawn_attributes(const spawn_attributes&) = delete;
  spawn_attributes& operator=(const spawn_attributes&) = delete;
};

std::string errno_text(int err) { return std::strerror(err); }

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

  spawn_attributes sa;
  auto* fa = &sa.actions;
  if (request.stdin_fd >= 0)
    ::posix_spawn_file_actions_adddup2(fa, request.stdin_fd, 0);
  else
    ::posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(fa, out.fd[1], 1);
  ::posix_spawn_file_actions_adddup2(fa, err.fd[1], 2);
  ::posix_spawn_file_actions_addclosefrom_np(fa, 3);
  if (!request.working_dir.empty())
    ::posix_spawn_file_actions_addchdir_np(fa, request.working_dir.c_str());

  sigset_t none, all;
  ::sigemptyset(&none);
  ::sigfillset(&all);
  ::posix_spawnattr_setpgroup(&sa.attr, 0);  // own process group, led by the child
  ::posix_spawnattr_setsigmask(&sa.attr, &none);
  ::posix_spawnattr_setsigdefault(&sa.attr, &all);  // arun ignores SIGPIPE; children must not
  ::posix_spawnattr_setflags(&sa.attr,
                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv, envp;
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : request.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program->c_str(), fa, &sa.attr, argv.data(), envp.data());
  if (rc != 0) {
    // glibc reports exec (and chdir) failures here and reaps the failed child itself.
    return {std::nullopt, "cannot run '" + *program + "': " + errno_text(rc)};
  }

  launched_child child;
  child.pid = pid;
  child.stdout_fd = out.release_read();
  child.stderr_fd = err.release_read();
  // The child may already have exited: a pidfd on an unreaped zombie is still valid.
  child.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return {child, {}};
}

}  // namespace arun::io
