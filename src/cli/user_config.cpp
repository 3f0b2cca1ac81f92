#include "user_config.hpp"

#include <arun/diagnostics.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

namespace arun::cli {
namespace {

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

void read_file(const std::string& path, user_config& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // no such file: nothing to read
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
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
    const std::string value = kv.second.IsScalar() ? kv.second.Scalar() : std::string();
    if (!valid(*key, value)) {
      config.errors.push_back(located(path, lines, kv.second.Mark(), "error",
                                      fmt::format("'{}' must be {}", name, key->expected)));
      continue;
    }
    config.entries[name] = {value, fmt::format("{}:{}", path, kv.first.Mark().line + 1)};
  }
}

std::string user_config_file() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) return std::string(xdg) + "/arun/config.yaml";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.config/arun/config.yaml";
  return {};
}

}  // namespace

user_config load_user_config() {
  user_config config;
  for (const auto& key : known_keys) config.entries[key.name] = {key.fallback, "default"};
  if (const auto file = user_config_file(); !file.empty()) read_file(file, config);
  read_file(".arun.yaml", config);
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
