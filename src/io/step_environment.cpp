#include "step_environment.hpp"

#include <unistd.h>

#include <unordered_map>

extern char** environ;

namespace arun::io {
namespace {

// An environment that keeps its first-seen order and replaces values by name.
class environment_builder {
public:
  explicit environment_builder(const std::vector<std::string>& base) {
    for (const auto& kv : base) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) continue;  // not a variable: drop it
      set(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  void set(const std::string& name, const std::string& value) {
    if (auto it = index_.find(name); it != index_.end()) {
      entries_[it->second] = name + "=" + value;
      return;
    }
    index_.emplace(name, entries_.size());
    entries_.push_back(name + "=" + value);
  }
  void set_default(const std::string& name, const std::string& value) {
    if (!index_.contains(name)) set(name, value);
  }
  std::vector<std::string> take() { return std::move(entries_); }

private:
  std::vector<std::string> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::vector<std::string> build_step_environment(const std::vector<std::string>& inherited,
                                                const env_overrides& overrides) {
  environment_builder env(inherited);
  env.set_default("HOME", "/root");
  env.set_default("PATH", "/usr/local/bin:/usr/bin:/bin");
  env.set("NONINTERACTIVE", "1");
  env.set("DEBIAN_FRONTEND", "noninteractive");
  env.set("CI", "true");
  for (const auto& [name, value] : overrides) env.set(name, value);
  return env.take();
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
