#pragma once
// Templates in bash commands (docs/reference/templates.md, "Templates in bash commands"): each
// `{{ reference }}` becomes the expansion of an environment variable, quoted for its lexical
// position, so values never become shell syntax.

#include "template/reference.hpp"
#include "template/render.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// A variable a rendered script expands.
struct shell_variable {
  std::string name;   ///< `RECIPE_VAR_…`, a valid shell name
  std::string value;  ///< the value's text (docs/reference/templates.md, "How values render"); never holds a NUL byte

  bool operator==(const shell_variable&) const = default;
};

struct rendered_shell {
  std::string script;
  std::vector<shell_variable> variables;  ///< what `script` expands, in order of first use
  std::vector<std::string> warnings;
  std::string error;  ///< the first error: the step must not run (`script` is then incomplete)

  bool ok() const noexcept { return error.empty(); }
};

/// `RECIPE_VAR_` + the root and each path segment through shell_name_part, joined by `__`:
/// `{{a.b[0]}}` → `RECIPE_VAR_a__b__0`, `{{repo-path}}` → `RECIPE_VAR_repo_path`.
std::string shell_variable_name(const reference& ref);

/// The refusal of a reference in a code position (shell_position::code, run by `runner`), and
/// how to pass the value as data instead: shared by the renderer and `validate`.
std::string code_position_error(std::string_view runner, const reference& ref);
std::string code_position_hint(const reference& ref);

/// Rewrites every reference in `command` for its position (docs/reference/templates.md,
/// "Templates in bash commands"), resolving it under the undefined rules of
/// docs/reference/templates.md, "Undefined references" (`scope`):
///   unquoted → `"${V}"`; in "…" and unquoted heredoc bodies → `${V}`; in '…' → `'"${V}"'`;
///   in $'…' → `'"${V}"$'`; in backticks and `$( )` → by their own quoting; in a quoted
///   heredoc body → the value itself; in a comment → left as written, not resolved.
/// Each distinct reference gets one variable (shell_variable_name, suffixed `_2`, `_3`, … when
/// two references flatten to the same name). Errors: a value in an arithmetic position (see
/// shell_position::arithmetic) that is not an integer literal (`[+-]?[0-9]+`); a value in a
/// variable-name position (shell_position::name) holding anything but `[A-Za-z0-9_]`; any
/// reference in code (shell_position::code), whatever its value; a value holding a NUL byte;
/// a value that puts its heredoc's delimiter line into a quoted heredoc body, or a line starting with a tab into a quoted `<<-` body; a reference in a heredoc
/// delimiter, right after an escaping backslash or a `$`, in a quoted heredoc inside
/// backticks, or after the point where the lexer stopped (shell_lex_result::stopped).
rendered_shell render_shell(std::string_view command, const render_scope& scope);

}  // namespace arun::engine
