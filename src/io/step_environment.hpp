#pragma once
// The environment of a step's child (SPEC §3.3): inherited, then hardened, then overrides.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::io {

using env_overrides = std::vector<std::pair<std::string, std::string>>;

/// arun's own environment as "K=V" strings.
std::vector<std::string> current_environment();

/// `inherited`, then HOME=/root and PATH=/usr/local/bin:/usr/bin:/bin when unset, then
/// NONINTERACTIVE=1, DEBIAN_FRONTEND=noninteractive, CI=true, then each override in order
/// (a later one replaces an earlier one of the same name).
std::vector<std::string> build_step_environment(const std::vector<std::string>& inherited,
                                                const env_overrides& overrides);

/// The tool a bash child could not find, when it exited 127 with bash's
/// "NAME: command not found" on stderr; empty otherwise.
std::string missing_tool(int exit_code, std::string_view stderr_text);

}  // namespace arun::io
