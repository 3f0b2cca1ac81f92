// Evaluation of a parsed condition. The tree is at most as deep as the bracket nesting the
// parser allows, so the recursion here is bounded.
#include "condition/condition.hpp"

#include "condition/ast.hpp"
#include "condition/builtins.hpp"
#include "condition/values.hpp"
#include "spilled_output.hpp"

#include <charconv>
#include <cstdint>
#include <system_error>

namespace arun::engine {
namespace {

namespace json = boost::json;
using detail::binary_op;
using detail::node;
using detail::node_kind;
using evaluated = std::optional<json::value>;

// resolve() words its warnings for templates; in a condition the value is null, not text.
std::string condition_warning(std::string warning) {
  constexpr std::string_view suffix = ": rendered empty";
  if (warning.ends_with(suffix))
    warning.replace(warning.size() - suffix.size(), suffix.size(), ": null in the condition");
  return warning;
}

class evaluator {
 public:
  explicit evaluator(const render_scope& scope) : scope_(scope), references_(for_references(scope)) {}

  condition_outcome run(const node& root) {
    condition_outcome out;
    const auto v = eval(root);
    out.warnings = std::move(warnings_);
    if (v)
      out.value = detail::truthy(*v);
    else
      out.error = std::move(error_);
    return out;
  }

 private:
  const render_scope& scope_;
  const render_scope references_;  // how `{{ref}}`s resolve here
  std::vector<std::string> warnings_;

  // A name nothing declares is null in a condition, `{{name}}` as a bare `name` (with a
  // warning): sub-recipe fragments of the older runners test what only their callers set, and
  // `validate` warns, or refuses a likely typo, before the run (docs/reference/conditions.md).
  // Only --strict keeps it an error.
  static render_scope for_references(const render_scope& scope) {
    render_scope s = scope;
    if (s.mode == undefined_mode::normal) s.mode = undefined_mode::lenient;
    return s;
  }
  condition_error error_;

  evaluated fail(std::string message, std::size_t column) {
    error_ = condition_error{std::move(message), column};
    return std::nullopt;
  }

  template <typename T>
  std::optional<T> check(detail::value_or_error<T> r, std::size_t column) {
    if (auto* message = std::get_if<std::string>(&r)) {
      fail(std::move(*message), column);
      return std::nullopt;
    }
    return std::get<T>(std::move(r));
  }

  evaluated eval(const node& n) {
    switch (n.kind) {
      case node_kind::literal: return n.value;
      case node_kind::text_template: return interpolate(n);
      case node_kind::ref: return reference_value(n);
      case node_kind::identifier: return loaded(raw_identifier(n), n);
      case node_kind::list: {
        json::array items;
        for (const auto& child : n.children) {
          auto v = eval(child);
          if (!v) return std::nullopt;
          items.push_back(std::move(*v));
        }
        return json::value(std::move(items));
      }
      case node_kind::call: return call(n);
      case node_kind::negate: {
        const auto v = eval(n.children[0]);
        if (!v) return std::nullopt;
        return check(detail::negate(*v, n.repeat), n.column);
      }
      case node_kind::logical_not: {
        const auto v = eval(n.children[0]);
        if (!v) return std::nullopt;
        return json::value(detail::truthy(*v) == (n.repeat % 2 == 0));
      }
      case node_kind::arithmetic: return arithmetic(n);
      case node_kind::comparison: return comparison(n);
      case node_kind::logical_and:
      case node_kind::logical_or: return logical(n);
      case node_kind::postfix: return postfix(n);
      default: return fail("internal: unexpected syntax node", n.column);
    }
  }

  evaluated interpolate(const node& n) {
    auto r = render_text(n.name, references_);
    if (!r.ok()) return fail(std::move(r.error), n.column);
    for (auto& w : r.warnings) warnings_.push_back(condition_warning(std::move(w)));
    return json::value(json::string(r.text));
  }

  evaluated reference_value(const node& n) {
    auto r = resolve(*n.ref, references_);
    if (!r.error.empty()) return fail(std::move(r.error), n.column);
    if (!r.warning.empty()) warnings_.push_back(condition_warning(std::move(r.warning)));
    return r.value ? *r.value : json::value(nullptr);
  }

  evaluated call(const node& n) {
    std::vector<json::value> args;
    for (const auto& child : n.children) {
      auto v = eval(child);
      if (!v) return std::nullopt;
      args.push_back(std::move(*v));
    }
    return check(detail::call_function(n.name, args, n.type_mask), n.column);
  }

  evaluated arithmetic(const node& n) {
    auto acc = eval(n.children[0]);
    for (std::size_t i = 1; acc && i < n.children.size(); ++i) {
      const auto right = eval(n.children[i]);
      if (!right) return std::nullopt;
      acc = check(detail::arithmetic(n.ops[i - 1].op, *acc, *right), n.ops[i - 1].column);
    }
    return acc;
  }

  evaluated comparison(const node& n) {
    const auto left = eval(n.children[0]);
    if (!left) return std::nullopt;
    const auto right = eval(n.children[1]);
    if (!right) return std::nullopt;
    const auto [op, column] = n.ops[0];
    switch (op) {
      case binary_op::eq: return json::value(detail::loose_equal(*left, *right));
      case binary_op::ne: return json::value(!detail::loose_equal(*left, *right));
      case binary_op::is: return json::value(detail::strict_equal(*left, *right));
      case binary_op::is_not: return json::value(!detail::strict_equal(*left, *right));
      case binary_op::in:
      case binary_op::not_in: {
        const auto found = check(detail::contains(*left, *right), column);
        if (!found) return std::nullopt;
        return json::value(*found == (op == binary_op::in));
      }
      default: break;
    }
    const auto c = detail::order(*left, *right);
    if (!c)
      return fail("'" + std::string(detail::op_text(op)) + "' cannot compare " + detail::describe_value(*left) +
                      " with " + detail::describe_value(*right), column);
    switch (op) {
      case binary_op::lt: return json::value(*c < 0);
      case binary_op::le: return json::value(*c <= 0);
      case binary_op::gt: return json::value(*c > 0);
      default: return json::value(*c >= 0);
    }
  }

  // Python's `and`/`or`: the first operand that decides, or the last; the rest is not evaluated.
  evaluated logical(const node& n) {
    const bool stop_when = n.kind == node_kind::logical_or;
    evaluated v;
    for (const auto& child : n.children) {
      v = eval(child);
      if (!v || detail::truthy(*v) == stop_when) return v;
    }
    return v;
  }

  // A name's value as the context holds it: stored outputs (spilled_output.hpp) not loaded.
  evaluated raw_identifier(const node& n) {
    const auto* root = find_root(scope_, n.name);
    return root ? *root : json::value(nullptr);
  }

  // `v` with the stored outputs in it loaded.
  evaluated loaded(evaluated v, const node& n) {
    if (!v || !scope_.outputs || !holds_spilled(*v)) return v;
    auto l = load_spilled(*v, *scope_.outputs);
    if (auto* why = std::get_if<std::string>(&l)) return fail(std::move(*why), n.column);
    return std::move(std::get<json::value>(l));
  }

  // `all[7]` loads only the seventh stored output, not the whole list: the path is followed
  // on the stored form, loading an output only where the path enters it.
  evaluated postfix(const node& n) {
    const auto& head = n.children[0];
    auto v = head.kind == node_kind::identifier ? raw_identifier(head) : eval(head);
    for (std::size_t i = 1; v && i < n.children.size(); ++i) {
      const auto& step = n.children[i];
      if (step.kind != node_kind::step_attribute && step.kind != node_kind::step_subscript) v = loaded(std::move(v), step);
      else if (scope_.outputs && is_spilled(*v)) v = loaded(std::move(v), step);
      if (!v) return std::nullopt;
      if (step.kind == node_kind::step_attribute) {
        v = attribute(*v, step.name);
      } else if (step.kind == node_kind::step_subscript) {
        const auto index = eval(step.children[0]);
        if (!index) return std::nullopt;
        v = subscript(*v, *index);
      } else {
        v = method(*v, step);
      }
    }
    return loaded(std::move(v), n);
  }

  static json::value attribute(const json::value& v, const std::string& name) {
    if (const auto* obj = v.if_object()) {
      const auto it = obj->find(name);
      return it == obj->end() ? json::value(nullptr) : it->value();
    }
    // `.0` indexes a list, as in templates (the lexer makes such names all digits).
    if (const auto* list = v.if_array(); list && !name.empty() && name[0] >= '0' && name[0] <= '9') {
      std::size_t i = 0;
      const auto r = std::from_chars(name.data(), name.data() + name.size(), i);
      if (r.ec != std::errc() || i >= list->size()) return nullptr;
      return (*list)[i];
    }
    return nullptr;
  }

  static json::value subscript(const json::value& v, const json::value& index) {
    if (const auto* obj = v.if_object()) {
      if (!index.is_string()) return nullptr;
      const auto it = obj->find(index.get_string());
      return it == obj->end() ? json::value(nullptr) : it->value();
    }
    const auto n = detail::as_number(index);
    if (!n || !n->integral) return nullptr;
    const auto size = static_cast<std::int64_t>(v.is_array() ? v.get_array().size()
                                                : v.is_string() ? v.get_string().size() : 0);
    const auto i = n->i < 0 ? n->i + size : n->i;  // negative counts from the end, as in Python
    if (i < 0 || i >= size) return nullptr;
    if (v.is_array()) return v.get_array()[static_cast<std::size_t>(i)];
    return json::string(std::string_view(v.get_string()).substr(static_cast<std::size_t>(i), 1));
  }

  evaluated method(const json::value& receiver, const node& step) {
    std::vector<json::value> args;
    for (const auto& child : step.children) {
      auto v = eval(child);
      if (!v) return std::nullopt;
      args.push_back(std::move(*v));
    }
    return check(detail::call_method(step.name, receiver, args), step.column);
  }
};

}  // namespace

condition_outcome evaluate_condition(const condition& c, const render_scope& scope) {
  try {
    return evaluator(scope).run(c.root());
  } catch (const std::exception& e) {  // only allocation failure can get here
    condition_outcome out;
    out.error = condition_error{std::string("cannot evaluate the condition: ") + e.what(), 1};
    return out;
  }
}

}  // namespace arun::engine
