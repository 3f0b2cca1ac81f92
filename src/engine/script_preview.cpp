// The script a bash step will run, for static checks (`bash -n` at validate).
#include <arun/validation.hpp>

#include "shell/shell_lexer.hpp"
#include "shell/shell_render.hpp"
#include "template/reference.hpp"

namespace arun {

std::optional<std::string> bash_script_preview(const std::string& command) {
  // Stand-in values: "0" is an integer and a name, so every position but code accepts it (a
  // reference in code is refused by validate itself: check_references).
  boost::json::object context;
  for (const auto& span : engine::find_references(command)) context[span.ref.root] = 0;
  const engine::render_scope scope{context, nullptr, engine::undefined_mode::lenient};
  auto rendered = engine::render_shell(command, scope);
  if (!rendered.ok()) return std::nullopt;
  return std::move(rendered.script);
}

bool bash_script_closed(std::string_view script) { return engine::lex_shell(script, {}).complete; }

}  // namespace arun
