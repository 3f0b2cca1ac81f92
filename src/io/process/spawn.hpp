#pragma once
// Launching a child (process/vfork_child.hpp: posix_spawn's technique, plus joining a cgroup
// before exec; Boost.Process 1.81's launchers are avoided, TOOLCHAIN.md §3). Synchronous:
// returns once the child has exec'd or failed.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace arun::io {

/// What to start. `env` is the complete environment ("K=V"); nothing is inherited implicitly.
struct launch_request {
  std::vector<std::string> argv;  ///< argv[0] without '/' is searched on the child's PATH
  std::vector<std::string> env;
  std::string working_dir;        ///< empty: arun's own working directory
  int stdin_fd = -1;              ///< -1: /dev/null
  int cgroup_dir_fd = -1;         ///< the cgroup to start the child in (O_PATH dir); -1: arun's
};

/// A started child: its own process group (pgid == pid), stdout/stderr pipe read ends
/// (close-on-exec, owned by the caller) and a pidfd (-1 when the kernel has none).
struct launched_child {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int pidfd = -1;
};

/// Either a child or the reason it could not be started (no zombie is left either way).
struct launch_result {
  std::optional<launched_child> child;
  std::string error;
};

/// Starts the child: own process group, stdin from /dev/null or `stdin_fd`, stdout and
/// stderr on pipes, every other fd closed, default signal dispositions, empty signal mask.
launch_result launch(const launch_request& request);

/// The value of `name` in a "K=V" environment, if present.
std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view name);

/// Finds `program` the way execvp would, on the PATH of `env` (default PATH when unset).
std::optional<std::string> find_program(const std::string& program,
                                        const std::vector<std::string>& env);

}  // namespace arun::io
