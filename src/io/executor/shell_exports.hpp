#pragma once
// The variables of a bash step made real (docs/reference/templates.md,
// "Templates in bash commands", "The context in the environment"): environment additions, and
// private temp files for values too large for the environment, read back by a bash preamble.

#include "executor/step_environment.hpp"
#include "files/temp_file.hpp"
#include "executor/value_files.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io {

/// One variable of a step (the engine's plan_shell_exports decides `by_file`).
struct shell_export {
  std::string name;   ///< a valid shell name
  std::string value;  ///< NUL-free
  bool by_file = false;
};

/// Owns a step's by-file values: the temp files live as long as this object, so keep it alive
/// until the child has exited; the files are removed on destruction.
class shell_exports {
public:
  /// Writes each by-file value to a private temp file (mode 0600) named `<prefix>XXXXXX` under
  /// $TMPDIR (or /tmp), or takes the file `shared` already has for an equal value. Throws
  /// std::system_error when a file cannot be written; the files already written are removed.
  explicit shell_exports(std::vector<shell_export> variables, std::string_view prefix = "arun-var-",
                         value_files* shared = nullptr);

  /// The variables that travel in the environment, in order: apply them after the hardened
  /// environment and before the step's own `env` (build_step_environment's overrides).
  const env_overrides& environment() const noexcept { return environment_; }

  /// environment(), moved out (it is empty afterwards): a context value can be large, and a
  /// fan-out step should not copy it once more per instance.
  env_overrides take_environment() noexcept { return std::move(environment_); }

  /// Bash text that reads every by-file value into a shell variable, byte-exact (trailing
  /// newlines kept; NUL-free data): `unset -v V; LC_ALL=C IFS= read -r -d '' V < 'FILE' || true; `
  /// per value, on one line without a newline so the script's line numbers do not move. The
  /// variables are not exported: a value this large would make every exec fail (E2BIG).
  /// Empty when no value travels by file.
  const std::string& preamble() const noexcept { return preamble_; }

  /// `preamble() + script`: the body to run.
  std::string wrap(std::string_view script) const;

  /// The temp files, in the order of the by-file variables (for tests and diagnostics).
  std::vector<std::string> file_paths() const;

private:
  env_overrides environment_;
  std::string preamble_;
  std::vector<std::shared_ptr<const private_temp_file>> files_;
};

/// `text` as one single-quoted bash word.
std::string single_quote(std::string_view text);

}  // namespace arun::io
