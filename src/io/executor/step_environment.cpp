#include "executor/step_environment.hpp"

#include "process/spawn.hpp"

#include <unistd.h>

#include <unordered_map>

extern char** environ;

namespace arun::io {
std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

base_environment::base_environment(const std::vector<std::string>& inherited) {
  for (const auto& kv : inherited) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // not a variable: drop it
    set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (!index_.contains("HOME")) set("HOME", "/root");
  if (!index_.contains("PATH")) set("PATH", "/usr/local/bin:/usr/bin:/bin");
  set("NONINTERACTIVE", "1");
  set("DEBIAN_FRONTEND", "noninteractive");
  set("CI", "true");
  // The Python dialect's recipes run `$AMPLIFIER_PYTHON script.py`: the python3 on PATH,
  // unless the caller chose one.
  if (!index_.contains("AMPLIFIER_PYTHON"))
    if (const auto python = find_program("python3", entries_)) set("AMPLIFIER_PYTHON", *python);
}

void base_environment::set(const std::string& name, const std::string& value) {
  if (auto it = index_.find(name); it != index_.end()) {
    entries_[it->second] = name + "=" + value;
    return;
  }
  index_.emplace(name, entries_.size());
  entries_.push_back(name + "=" + value);
}

std::vector<std::string> base_environment::with(const env_overrides& overrides) const {
  // Only the step's own names are indexed here: the base's index is shared by every step.
  std::vector<std::string> env = entries_;
  std::unordered_map<std::string_view, std::size_t> added;
  for (const auto& [name, value] : overrides) {
    std::size_t at = env.size();
    if (auto it = index_.find(name); it != index_.end())
      at = it->second;
    else if (auto a = added.find(name); a != added.end())
      at = a->second;
    else
      added.emplace(name, at);
    if (at == env.size())
      env.push_back(name + "=" + value);
    else
      env[at] = name + "=" + value;
  }
  return env;
}

std::vector<std::string> build_step_environment(const std::vector<std::string>& inherited,
                                                const env_overrides& overrides) {
  return base_environment(inherited).with(overrides);
}

std::string missing_tool(int exit_code, std::string_view stderr_text) {
  if (exit_code != 127) return {};
  // bash prints "bash: line 1: jq: command not found" (or "FILE: line N: jq: ...").
  constexpr std::string_view marker = ": command not found";
  const auto at = stderr_text.rfind(marker);
  if (at == std::string_view::npos) return {};
  const auto before = stderr_text.substr(0, at);
  auto start = before.rfind(": ");
  const auto line_start = before.rfind('\n');
  if (start == std::string_view::npos ||
      (line_start != std::string_view::npos && start < line_start))
    return {};
  auto name = before.substr(start + 2);
  if (name.empty() || name.find_first_of(" \t") != std::string_view::npos) return {};
  return std::string(name);
}

}  // namespace arun::io
