#pragma once
// The session a command is given (`resume ID`, `logs ID`, `approve ID`, `sessions show ID`,
// ...): one resolution for all of them, so every command takes the same forms of an id and
// says the same thing when it names no session.

#include <optional>
#include <string>

namespace arun::cli {

/// A session named on the command line: the checked session root and the session's full id.
struct named_session {
  std::string root;
  std::string id;
  bool newest = false;  ///< named by `last` or `-`
  std::string dir() const { return root + "/" + id; }
};

/// The session `given` names (its id, `last` or `-`, or a unique prefix or suffix of an id:
/// io::find_session) under the root `session_dir` (--session-dir; empty: the default) names,
/// checked as every session command checks it. None after saying why on stderr: the command
/// then exits with exit_usage.
std::optional<named_session> find_named_session(const std::string& session_dir, const std::string& given);

}  // namespace arun::cli
