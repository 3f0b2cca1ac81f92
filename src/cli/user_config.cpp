#include "user_config.hpp"

#include "trust/inspected_file.hpp"
#include "trust/trust_store.hpp"

#include <arun/diagnostics.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>

namespace arun::cli {
namespace {

constexpr const char* project_file_name = ".arun.yaml";

struct known_key {
  const char* name;
  const char* env;
  const char* fallback;
  const char* expected;  ///< what a valid value looks like, for errors
};

constexpr known_key known_keys[] = {
    {"max_concurrent", "ARUN_MAX_CONCURRENT", "8", "a whole number from 1 to 4096"},
    {"agent_cli", "ARUN_AGENT_CLI", "claude", "claude, copilot, codex, amplihack[:cli] or fake"},
    {"session_dir", "ARUN_SESSION_DIR", "", "a directory"},
    {"color", "ARUN_COLOR", "auto", "auto, always or never"},
    {"log_level", "ARUN_LOG", "info", "off, error, warn, info, debug or trace"},
    {"retention_days", "ARUN_RETENTION_DAYS", "30", "a whole number of days (0: keep sessions forever)"},
    {"retention_sessions", "ARUN_RETENTION_SESSIONS", "200", "a whole number of sessions (0: no limit)"},
};

std::optional<long> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (const char c : text)
    if (c < '0' || c > '9') return std::nullopt;
  return std::stol(text);
}

bool valid(const known_key& key, const std::string& value) {
  const std::string_view name = key.name;
  if (name == "max_concurrent") {
    const auto n = whole_number(value);
    return n && *n >= 1 && *n <= 4096;
  }
  if (name == "retention_days" || name == "retention_sessions") return whole_number(value).has_value();
  if (name == "color") return value == "auto" || value == "always" || value == "never";
  if (name == "log_level")
    return value == "off" || value == "error" || value == "warn" || value == "info" || value == "debug" ||
           value == "trace";
  if (name == "agent_cli")
    return value == "claude" || value == "copilot" || value == "codex" || value == "fake" || value.starts_with("amplihack");
  return !value.empty();
}

// `FILE:LINE:COL: LEVEL: MESSAGE`, the line and a caret under the column.
std::string located(const std::string& file, const std::vector<std::string>& lines, const YAML::Mark& mark,
                    const std::string& level, const std::string& message, const std::string& help = {}) {
  const int line = mark.line + 1, column = mark.column + 1;
  std::string out = fmt::format("{}:{}:{}: {}: {}", file, line, column, level, message);
  if (mark.line >= 0 && static_cast<std::size_t>(mark.line) < lines.size()) {
    const auto number = std::to_string(line);
    const std::string pad(number.size(), ' ');
    out += fmt::format("\n{} |\n{} | {}\n{} | {}^", pad, number, lines[static_cast<std::size_t>(mark.line)], pad,
                       std::string(static_cast<std::size_t>(mark.column), ' '));
  }
  if (!help.empty()) out += fmt::format("\n{} = help: {}", std::string(std::to_string(line).size(), ' '), help);
  return out;
}

// Parses one file's text; a key `allowed` refuses is not read, only named in `ignored`.
void read_text(const std::string& path, const std::string& text, user_config& config,
               const std::function<bool(std::string_view)>& allowed, std::vector<std::string>& ignored) {
  std::vector<std::string> lines;
  std::istringstream split(text);
  for (std::string line; std::getline(split, line);) lines.push_back(line);
  config.files.push_back(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    config.errors.push_back(located(path, lines, e.mark, "error", "not valid YAML: " + e.msg));
    return;
  }
  if (root.IsNull()) return;  // an empty file
  if (!root.IsMap()) {
    config.errors.push_back(located(path, lines, root.Mark(), "error", "a config file is a mapping of keys to values",
                                    "for example: max_concurrent: 4"));
    return;
  }
  std::vector<std::string_view> names;
  for (const auto& key : known_keys) names.emplace_back(key.name);
  for (const auto& kv : root) {
    const auto name = kv.first.Scalar();
    const auto* key = std::find_if(std::begin(known_keys), std::end(known_keys),
                                   [&](const known_key& k) { return name == k.name; });
    if (key == std::end(known_keys)) {
      auto hint = did_you_mean(name, names);
      config.warnings.push_back(located(path, lines, kv.first.Mark(), "warning", "unknown key '" + name + "' (ignored)",
                                        hint.empty() ? "known keys: max_concurrent, agent_cli, session_dir, color, "
                                                       "log_level, retention_days, retention_sessions"
                                                     : hint));
      continue;
    }
    // An untrusted key is neither applied nor checked: its value is not the user's word.
    if (!allowed(name)) {
      if (std::find(ignored.begin(), ignored.end(), name) == ignored.end()) ignored.push_back(name);
      continue;
    }
    const std::string value = kv.second.IsScalar() ? kv.second.Scalar() : std::string();
    if (!valid(*key, value)) {
      config.errors.push_back(located(path, lines, kv.second.Mark(), "error",
                                      fmt::format("'{}' must be {}", name, key->expected)));
      continue;
    }
    config.entries[name] = {value, fmt::format("{}:{}", path, kv.first.Mark().line + 1)};
  }
}

// The user's own file is the user's word; one that others could change is still read, with a
// warning (ssh's StrictModes refuses such a file; arun only says so).
void read_user_file(const std::string& path, user_config& config) {
  const auto file = io::inspect_file(path, max_config_file_bytes);
  if (!file.present) return;
  if (!file.error.empty()) {
    config.warnings.push_back("arun: " + file.error + " (ignored)");
    return;
  }
  if (!file.refusal.empty())
    config.warnings.push_back(fmt::format("arun: warning: your config file {} could be changed by another user: {} "
                                          "(chown it and its directory to you, chmod go-w)",
                                          path, file.refusal));
  std::vector<std::string> none;
  read_text(path, file.content, config, [](std::string_view) { return true; }, none);
}

void judge_project_file(const io::inspected_file& file, project_file& project) {
  const auto verdict = io::judge_trust(file, io::read_trust_store());
  project.trusted = verdict.state == io::trust_state::trusted;
  project.reason = verdict.reason;
  switch (verdict.state) {
    case io::trust_state::trusted: project.state = "trusted"; break;
    case io::trust_state::never_trusted: project.state = "not_trusted"; break;
    case io::trust_state::changed: project.state = "changed"; break;
    case io::trust_state::refused: project.state = "refused"; break;
    case io::trust_state::unknown: project.state = "unknown"; break;
  }
  if (verdict.state == io::trust_state::refused)
    project.fix = "chown it and its directory to you, chmod go-w, review it, then run 'arun config trust'";
  else if (verdict.state == io::trust_state::unknown)
    project.fix = "fix or remove the trust record, then run 'arun config trust'";
  else if (!project.trusted)
    project.fix = "review it, then run 'arun config trust'";
}

// `./.arun.yaml` came with the directory, maybe from a clone: its content is trusted only as
// the user trusted it (its hash), else it sets only harmless keys.
void read_project_file(user_config& config) {
  auto& project = config.project;
  const auto file = io::inspect_file(project_file_name, max_config_file_bytes);
  project.present = file.present;
  project.symlink = file.symlink;
  project.real_path = file.real_path;
  if (!file.present) {
    project.state = "absent";
    return;
  }
  const std::string shown = file.symlink ? project.path + " (a link to " + file.real_path + ")" : project.path;
  if (!file.error.empty()) {
    project.state = "unreadable";
    project.reason = "cannot be read: " + file.error;
    project.warning = fmt::format("arun: {} {} (ignored)", shown, project.reason);
    config.warnings.push_back(project.warning);
    return;
  }
  judge_project_file(file, project);
  const bool trusted = project.trusted;
  read_text(project_file_name, file.content, config,
            [trusted](std::string_view key) { return trusted || harmless_key(key); }, project.ignored);
  if (project.ignored.empty()) return;
  project.warning =
      fmt::format("arun: {} {}: ignored {} ({})", shown, project.reason, fmt::join(project.ignored, ", "), project.fix);
  config.warnings.push_back(project.warning);
}

}  // namespace

bool harmless_key(std::string_view key) {
  // Display and concurrency only: nothing here names a program or a path, or deletes.
  return key == "color" || key == "max_concurrent" || key == "log_level";
}

user_config load_user_config() {
  user_config config;
  for (const auto& key : known_keys) config.entries[key.name] = {key.fallback, "default"};
  if (const auto dir = io::user_config_dir(); !dir.empty()) read_user_file(dir + "/config.yaml", config);
  read_project_file(config);
  for (const auto& key : known_keys) {
    const char* env = std::getenv(key.env);
    if (!env || !*env) continue;
    // The agent CLI is checked where it is used, with its own message.
    if (std::string_view(key.name) != "agent_cli" && !valid(key, env)) {
      config.warnings.push_back(fmt::format("{}={} is not a valid value: it must be {}; ignored", key.env, env, key.expected));
      continue;
    }
    config.entries[key.name] = {env, std::string("$") + key.env};
  }
  return config;
}

}  // namespace arun::cli
