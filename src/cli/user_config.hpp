#pragma once
// Defaults a user sets once (issue 14 item 8): `$XDG_CONFIG_HOME/arun/config.yaml` (else
// `~/.config/arun/config.yaml`), then `./.arun.yaml`, then `ARUN_*` environment variables,
// later winning; command-line options win over all of them. `arun config` shows each value and
// where it came from.

#include <map>
#include <string>
#include <vector>

namespace arun::cli {

struct config_entry {
  std::string value;
  std::string source;  ///< "default", "FILE:LINE", "$ARUN_…"
};

struct user_config {
  /// Every known key: max_concurrent, agent_cli, session_dir, color, log_level,
  /// retention_days, retention_sessions.
  std::map<std::string, config_entry> entries;
  /// Problems found (an unreadable file, an unknown key, a bad value), each a diagnostic with
  /// the file, line and column, the line and a caret; a bad value is an error.
  std::vector<std::string> warnings, errors;
  std::vector<std::string> files;  ///< the files read, in order

  const std::string& value(const std::string& key) const { return entries.at(key).value; }
  bool from_default(const std::string& key) const { return entries.at(key).source == "default"; }
  int integer(const std::string& key) const { return std::stoi(value(key)); }
};

/// Reads the files and the environment (a missing file is no problem).
user_config load_user_config();

}  // namespace arun::cli
