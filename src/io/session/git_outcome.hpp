#pragma once
// What a finished git child says, in the words arun reports: its trimmed stdout, or why it
// failed (stderr's last line, the launch error, a timeout). Worktree isolation and its
// commits both judge git this way (docs/isolation.md).

#include "process/supervisor.hpp"

#include <string>
#include <utility>
#include <vector>

namespace arun::io {

struct git_outcome {
  bool ok = false;
  std::string out;  ///< stdout without its trailing newlines
  std::string why;  ///< when !ok: stderr's last line, the launch error, "timed out" or the exit code
};

git_outcome git_outcome_of(const process_result& r);

/// A git argv (or its tail) built outside the coroutines: g++ 12 mishandles braced lists of
/// strings in a coroutine's frame.
template <typename... T>
std::vector<std::string> words(T&&... w) {
  std::vector<std::string> v;
  (v.emplace_back(std::forward<T>(w)), ...);
  return v;
}

}  // namespace arun::io
