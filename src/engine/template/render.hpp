#pragma once
// Rendering `{{ path }}` templates (docs/reference/templates.md) against the context.

#include "template/reference.hpp"

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <arun/run_services.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// How a value reads inside text: strings raw, null empty, booleans `true`/`false`, numbers in
/// shortest round-trip form, lists and objects as compact JSON.
std::string value_text(const boost::json::value& v);

/// `--lenient` / `--strict` (docs/reference/templates.md, "Undefined references").
enum class undefined_mode { normal, lenient, strict };

struct render_scope {
  const boost::json::object& context;
  /// Root names the recipe declares anywhere (docs/reference/templates.md, "Undefined references");
  /// null: every root counts as declared.
  const name_set* declared = nullptr;
  undefined_mode mode = undefined_mode::normal;
  /// Read-only built-ins (docs/reference/recipe.md, "Built-in variables": recipe, session, step,
  /// …); they win over the context.
  /// A loop variable of the same name wins over them inside its loop (the Python runner's
  /// `as: recipe`).
  const boost::json::object* builtins = nullptr;
  /// Loop-local names (the loop variable, `_loop_index`, a loop body's outputs): they hide
  /// the context's. Null: none.
  const boost::json::object* locals = nullptr;
  /// Where spilled outputs are loaded from (spilled_output.hpp). Null: references stay as
  /// they are.
  output_store* outputs = nullptr;
};

/// The object holding root `name` in `scope` (locals, then built-ins, then the context), or
/// null when none has it.
const boost::json::object* root_holder(const render_scope& scope, std::string_view name);

/// The context with the locals laid over it (a copy only when there are locals).
boost::json::object visible_context(const render_scope& scope);

/// The value a root name has in `scope`: a local first, then a built-in, then the context.
const boost::json::value* find_root(const render_scope& scope, std::string_view name);

/// One reference resolved under the undefined rules: a value, or null with a warning (it
/// renders empty), or an error (the step cannot run).
struct resolution {
  const boost::json::value* value = nullptr;
  std::string warning;
  std::string error;
  std::shared_ptr<const boost::json::value> loaded;  ///< owns `value` when it was loaded
};
resolution resolve(const reference& ref, const render_scope& scope);

struct rendered_text {
  std::string text;
  std::vector<std::string> warnings;
  std::string error;  ///< the first error; `text` is then incomplete
  bool ok() const noexcept { return error.empty(); }
};

/// Replaces every reference in `text` by its value's text.
rendered_text render_text(std::string_view text, const render_scope& scope);

struct rendered_value {
  boost::json::value value;
  std::vector<std::string> warnings;
  std::string error;
  bool ok() const noexcept { return error.empty(); }
};

/// Type-preserving rendering (sub-recipe `context`, `foreach`, `update_context`): a string
/// that is exactly one reference yields the referenced value itself (a list stays a list);
/// other strings render as text; lists and objects are rendered member by member.
rendered_value render_value(const boost::json::value& v, const render_scope& scope);

}  // namespace arun::engine
