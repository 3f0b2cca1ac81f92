#pragma once
// The environment of a step's child (docs/reference/recipe.md, "The environment of a step"):
// inherited, then hardened, then overrides.

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace arun::io {

using env_overrides = std::vector<std::pair<std::string, std::string>>;

/// arun's own environment as "K=V" strings.
std::vector<std::string> current_environment();

/// The part of every step's environment that is the same for the whole run: `inherited`, then
/// HOME=/root and PATH=/usr/local/bin:/usr/bin:/bin when unset, then NONINTERACTIVE=1,
/// DEBIAN_FRONTEND=noninteractive, CI=true. Built once; each step adds its overrides.
class base_environment {
public:
  explicit base_environment(const std::vector<std::string>& inherited);

  /// The base, then each override in order (a later one replaces an earlier one of the same
  /// name; a name already in the base keeps its position).
  std::vector<std::string> with(const env_overrides& overrides) const;

private:
  void set(const std::string& name, const std::string& value);

  std::vector<std::string> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

/// `base_environment(inherited).with(overrides)`.
std::vector<std::string> build_step_environment(const std::vector<std::string>& inherited,
                                                const env_overrides& overrides);

/// The tool a bash child could not find, when it exited 127 with bash's
/// "NAME: command not found" on stderr; empty otherwise.
std::string missing_tool(int exit_code, std::string_view stderr_text);

}  // namespace arun::io
