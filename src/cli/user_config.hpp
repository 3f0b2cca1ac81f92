#pragma once
// Defaults a user sets once (issue 14 item 8): `$XDG_CONFIG_HOME/arun/config.yaml` (else
// `~/.config/arun/config.yaml`), then `./.arun.yaml`, then `ARUN_*` environment variables,
// later winning; command-line options win over all of them. `arun config` shows each value and
// where it came from. A project's `./.arun.yaml` is untrusted until the user trusts its content
// (`arun config trust`): until then it sets only harmless keys (docs/security.md).

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace arun::cli {

/// The largest config file arun reads.
inline constexpr std::size_t max_config_file_bytes = 1 << 20;

struct config_entry {
  std::string value;
  std::string source;  ///< "default", "FILE:LINE", "$ARUN_…"
};

/// The project's `./.arun.yaml` and whether its content is trusted.
struct project_file {
  std::string path = "./.arun.yaml";
  bool present = false;
  bool symlink = false;
  std::string real_path;
  bool trusted = false;
  std::string state;   ///< absent, trusted, not_trusted, changed, refused, unknown, unreadable
  std::string reason;  ///< a phrase after the path: "is not trusted", "changed since it was trusted", ...
  std::string fix;     ///< what the user can do about it; empty when trusted
  std::vector<std::string> ignored;  ///< keys it sets that were ignored, in file order
  std::string warning;               ///< the one line a run prints about it (also in warnings)
};

struct user_config {
  /// Every known key: max_concurrent, agent_cli, session_dir, color, log_level,
  /// retention_days, retention_sessions.
  std::map<std::string, config_entry> entries;
  /// Problems found (an unreadable file, an unknown key, a bad value), each a diagnostic with
  /// the file, line and column, the line and a caret; a bad value is an error.
  std::vector<std::string> warnings, errors;
  std::vector<std::string> files;  ///< the files read, in order
  project_file project;

  const std::string& value(const std::string& key) const { return entries.at(key).value; }
  bool from_default(const std::string& key) const { return entries.at(key).source == "default"; }
  int integer(const std::string& key) const { return std::stoi(value(key)); }
};

/// Reads the files and the environment (a missing file is no problem). Until trusted, the
/// project file's keys outside the harmless ones are ignored, with one warning naming them.
user_config load_user_config();

/// Whether an untrusted project file may set `key` (an allow-list: a key added later is
/// untrusted until it is listed here).
bool harmless_key(std::string_view key);

}  // namespace arun::cli
