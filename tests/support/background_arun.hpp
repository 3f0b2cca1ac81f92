#pragma once
// arun started in the background (e2e tests that signal or kill it), stdout and stderr into
// files in a directory.

#include "test_paths.hpp"
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace arun::test {

struct background_arun {
  pid_t pid = -1;
  std::filesystem::path out, err;

  /// `input`: the file arun reads as its stdin.
  background_arun(const std::vector<std::string>& args, const std::filesystem::path& dir,
                  const std::vector<std::string>& extra_env = {}, const std::filesystem::path& input = "/dev/null")
      : out(dir / "stdout"), err(dir / "stderr") {
    posix_spawn_file_actions_t files;
    ::posix_spawn_file_actions_init(&files);
    ::posix_spawn_file_actions_addopen(&files, 0, input.c_str(), O_RDONLY, 0);
    ::posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawnattr_t attr;
    ::posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setsigdefault(&attr, &defaults);
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<std::string> argv_text = {ARUN_BINARY};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    // This process's environment plus `extra_env` ("K=V" replaces K).
    std::vector<std::string> env_text;
    for (char** e = environ; e && *e; ++e) {
      const std::string kv(*e);
      const auto name = kv.substr(0, kv.find('=') + 1);
      if (std::none_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) { return x.starts_with(name); }))
        env_text.push_back(kv);
    }
    env_text.insert(env_text.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pid, ARUN_BINARY, &files, &attr, argv.data(), envp.data());
    ::posix_spawnattr_destroy(&attr);
    ::posix_spawn_file_actions_destroy(&files);
    REQUIRE(rc == 0);
  }

  // The exit status once arun exits, or nothing after `patience` (then arun is killed).
  std::optional<int> wait_exit(std::chrono::seconds patience) {
    const auto until = std::chrono::steady_clock::now() + patience;
    for (;;) {
      int status = 0;
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) {
        pid = -1;
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        return 128 + WTERMSIG(status) + 1000;  // killed by a signal: never a valid exit code
      }
      if (std::chrono::steady_clock::now() >= until) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        pid = -1;
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  ~background_arun() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace arun::test
