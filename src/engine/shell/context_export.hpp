#pragma once
// The context as environment variables of a bash step (docs/reference/templates.md,
// "The context in the environment"), and the plan that joins it with the variables a rendered
// script needs (docs/reference/templates.md, "Templates in bash commands").

#include "shell/shell_render.hpp"

#include <boost/json/object.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// Size limits of what travels in the environment (docs/reference/templates.md, "Size limits").
struct export_limits {
  /// Per value; a step's `max_env_value_bytes`. A "NAME=VALUE" of 128 KiB or more (what
  /// Linux accepts in one environment string) always goes by file.
  std::size_t max_value_bytes = 96 * 1024;
  std::size_t max_total_bytes = 1'500'000;   ///< all additions, counted as NAME=VALUE plus NUL
};

struct exported_variable {
  std::string name;
  std::string value;
  bool by_file = false;  ///< too large for the environment: passed through a private temp file

  bool operator==(const exported_variable&) const = default;
};

struct context_export {
  std::vector<exported_variable> variables;
  std::vector<std::string> warnings;
};

/// One key as part of a variable name: `.` → `__`, `-` → `_`, other bytes outside
/// `[A-Za-z0-9_]` → `_`; case is kept.
std::string shell_name_part(std::string_view key);

/// The upper-case alias a context key is exported under (before alias_allowed decides):
/// shell_name_part in upper case, `repo-url` → `REPO_URL`.
std::string shell_alias(std::string_view key);

/// Whether an upper-case alias may take this name (protected_names.cpp): false for every
/// variable that configures a program (GIT_*, SSH_*, LD_*, PYTHON*, NODE_*, proxies, cloud and
/// agent-provider settings, ...), bash's own variables, and the hardened step environment
/// (ARUN_*, RECIPE_VAR_*, CI, ...). A recipe sets those only explicitly, in a step's `env:`.
bool alias_allowed(std::string_view name);

/// The context's half of the export, computed once per version of the context: every name
/// it offers with its key and value text, sorted. A foreach of 100,000 items over a large
/// context serialises that context once, not once per item. The texts of values that could
/// never be exported (spilled outputs, NUL bytes, 128 KiB or more) are not kept.
class context_export_table {
public:
  /// `keep_oversized_texts`: keep the texts of values too large for the environment too
  /// (export_context marks them by file).
  explicit context_export_table(const boost::json::object& context, bool keep_oversized_texts = false);
  ~context_export_table();
  context_export_table(const context_export_table&) = delete;
  context_export_table& operator=(const context_export_table&) = delete;

  struct entry;
  const std::vector<entry>& entries() const noexcept { return *entries_; }

private:
  std::unique_ptr<std::vector<entry>> entries_;
};

/// docs/reference/templates.md, "The context in the environment": every key as `RECIPE_VAR_<key>`,
/// nested objects flattened with `__`, upper-case aliases of top-level scalar keys; for a name
/// reached from several keys the lexicographically first key wins. Sorted by name. Values over the
/// limits (checked in name order) are marked `by_file`; values holding a NUL byte are left out with
/// a warning.
context_export export_context(const boost::json::object& context, const export_limits& limits = {});

/// The variables of one bash step: first `script_variables` (from render_shell), which always
/// arrive — by file when larger than the per-value limit or past the total; then the context
/// export, where a name the script already has is dropped and values over the limits are left
/// out of the environment with a warning (docs/reference/templates.md,
/// "The context in the environment"). `locals` (loop variables, a loop body's outputs) are exported
/// too and hide context keys of the same name.
/// `context_table`, when given, is `context`'s table (a cached one); else it is built here.
context_export plan_shell_exports(const boost::json::object& context,
                                  const std::vector<shell_variable>& script_variables,
                                  const export_limits& limits = {}, const boost::json::object* locals = nullptr,
                                  const context_export_table* context_table = nullptr);

}  // namespace arun::engine
