#pragma once
// What `--agent-cli amplihack[:claude|copilot|codex]` adds to every agent call, as amplihack's
// own recipe runner does, and the AMPLIHACK_* settings it honours (docs/agents.md lists them).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// Appended to every agent's system prompt under the amplihack preset (amplihack's text): a
/// nested agent must do its step, not start another workflow of its own.
inline constexpr std::string_view amplihack_no_reentry_guard =
    "You are already inside an active recipe-managed workflow step. This is not a new top-level user request. "
    "Do not invoke /dev, dev-orchestrator, ultrathink, smart-orchestrator, or any other workflow or recipe runner. "
    "Execute the requested step directly and return only the output requested by this step.";

struct amplihack_settings {
  std::string max_depth = "6";      ///< AMPLIHACK_MAX_DEPTH for the agents (an inherited value wins)
  std::string max_sessions = "10";  ///< AMPLIHACK_MAX_SESSIONS likewise
  bool allow_all_tools = true;      ///< false when AMPLIHACK_NO_ALLOW_ALL_TOOLS is non-empty (copilot)
  std::optional<int> rate_limit_retries;       ///< AMPLIHACK_RATELIMIT_MAX_RETRIES (0-100)
  std::optional<double> rate_limit_delay;      ///< AMPLIHACK_RATELIMIT_BASE_DELAY_SECS
  std::optional<double> rate_limit_max_delay;  ///< AMPLIHACK_RATELIMIT_MAX_DELAY_SECS
  std::string fallback_model;       ///< "auto" when AMPLIHACK_RATELIMIT_FALLBACK_AUTO_MODEL is non-empty
  std::vector<std::string> warnings;  ///< values that are not numbers, ignored
};

/// Reads the settings through `lookup` (the environment in arun; a map in tests).
amplihack_settings read_amplihack_settings(const std::function<const char*(const char*)>& lookup);

}  // namespace arun::io
