// Recursive descent over the grammar of docs/reference/conditions.md, "Grammar". Recursion happens
// only at brackets and is bounded by max_condition_nesting, so no input can exhaust the stack.
#include "condition/condition.hpp"

#include <algorithm>

#include "condition/ast.hpp"
#include "condition/builtins.hpp"
#include "condition/lexer.hpp"
#include "condition/values.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace arun::engine {

using detail::binary_op;
using detail::node;
using detail::node_kind;
using detail::token;
using detail::token_kind;

condition::condition(std::shared_ptr<const detail::node> root, std::vector<reference> references)
    : root_(std::move(root)), references_(std::move(references)) {}

namespace {

using parsed = std::optional<node>;

bool is_keyword(std::string_view w) {
  for (std::string_view k : {"and", "or", "not", "in", "is"})
    if (w == k) return true;
  return false;
}

std::optional<unsigned> type_named(std::string_view n) {
  static constexpr std::array<std::pair<std::string_view, unsigned>, 10> types = {{
      {"str", detail::type_string}, {"int", detail::type_int}, {"float", detail::type_float},
      {"bool", detail::type_bool}, {"list", detail::type_list}, {"dict", detail::type_object},
      {"None", detail::type_null}, {"none", detail::type_null}, {"null", detail::type_null},
      {"NoneType", detail::type_null},
  }};
  for (const auto& [name, bit] : types)
    if (n == name) return bit;
  return std::nullopt;
}

class parser {
 public:
  explicit parser(std::vector<token> tokens) : t_(std::move(tokens)) {}

  std::variant<condition, condition_error> run() {
    auto root = or_expr();
    if (root && peek().kind != token_kind::end) {
      if (is_symbol(")") || is_symbol("]"))
        fail("unbalanced '" + peek().text + "': nothing to close");
      else
        fail("unexpected " + describe(peek()) + " after a complete expression");
    }
    if (error_) return std::move(*error_);
    return condition(std::make_shared<const node>(std::move(*root)), std::move(references_));
  }

 private:
  std::vector<token> t_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  std::vector<reference> references_;
  std::optional<condition_error> error_;

  const token& peek(std::size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  const token& take() { return t_[pos_ < t_.size() - 1 ? pos_++ : pos_]; }
  bool is_symbol(std::string_view s, std::size_t ahead = 0) const {
    return peek(ahead).kind == token_kind::symbol && peek(ahead).text == s;
  }
  bool is_word(std::string_view w, std::size_t ahead = 0) const {
    return peek(ahead).kind == token_kind::identifier && peek(ahead).text == w;
  }

  parsed fail(std::string message, std::size_t column = 0) {
    if (!error_) error_ = condition_error{std::move(message), column ? column : peek().column};
    return std::nullopt;
  }

  bool open(const token& bracket) {
    if (++depth_ <= max_condition_nesting) return true;
    fail("nesting deeper than " + std::to_string(max_condition_nesting) + " levels", bracket.column);
    return false;
  }

  bool expect_close(std::string_view close, const token& opener) {
    if (is_symbol(close)) {
      take();
      --depth_;
      return true;
    }
    fail("expected '" + std::string(close) + "' to close '" + opener.text + "' at column " +
         std::to_string(opener.column) + ", found " + describe(peek()));
    return false;
  }

  bool check_name(const token& t) {
    if (t.text.find("__") == std::string::npos) return true;
    fail("names containing '__' are not allowed: '" + t.text + "'", t.column);
    return false;
  }

  // A chain of one logical operator: `a or b or c`.
  template <typename Next>
  parsed logical_chain(node_kind kind, std::string_view word, std::string_view symbol, Next next) {
    auto first = (this->*next)();
    if (!first || !(is_word(word) || is_symbol(symbol))) return first;
    node chain{kind, first->column};
    chain.children.push_back(std::move(*first));
    while (is_word(word) || is_symbol(symbol)) {
      take();
      auto operand = (this->*next)();
      if (!operand) return std::nullopt;
      chain.children.push_back(std::move(*operand));
    }
    return chain;
  }

  parsed or_expr() { return logical_chain(node_kind::logical_or, "or", "||", &parser::and_expr); }
  parsed and_expr() { return logical_chain(node_kind::logical_and, "and", "&&", &parser::not_expr); }

  parsed not_expr() {
    const auto column = peek().column;
    std::size_t count = 0;
    for (; is_word("not"); ++count) take();
    auto operand = comparison();
    if (!operand || count == 0) return operand;
    node n{node_kind::logical_not, column};
    n.repeat = count;
    n.children.push_back(std::move(*operand));
    return n;
  }

  // The comparison operator at the cursor, without consuming it.
  std::optional<std::pair<binary_op, std::size_t>> comparison_op() const {
    static constexpr std::array<std::pair<std::string_view, binary_op>, 6> symbols = {{
        {"==", binary_op::eq}, {"!=", binary_op::ne}, {"<", binary_op::lt},
        {"<=", binary_op::le}, {">", binary_op::gt}, {">=", binary_op::ge},
    }};
    for (const auto& [text, op] : symbols)
      if (is_symbol(text)) return std::pair{op, std::size_t{1}};
    if (is_word("in")) return std::pair{binary_op::in, std::size_t{1}};
    if (is_word("not") && is_word("in", 1)) return std::pair{binary_op::not_in, std::size_t{2}};
    if (is_word("is") && is_word("not", 1)) return std::pair{binary_op::is_not, std::size_t{2}};
    if (is_word("is")) return std::pair{binary_op::is, std::size_t{1}};
    return std::nullopt;
  }

  parsed comparison() {
    auto left = additive();
    if (!left) return left;
    const auto op = comparison_op();
    if (!op) return left;
    const auto column = peek().column;
    for (std::size_t i = 0; i < op->second; ++i) take();
    auto right = additive();
    if (!right) return std::nullopt;
    if (comparison_op()) return fail("comparisons cannot be chained: use 'and'");
    node n{node_kind::comparison, left->column};
    n.ops.push_back({op->first, column});
    n.children.push_back(std::move(*left));
    n.children.push_back(std::move(*right));
    return n;
  }

  // A left-to-right chain of `+ -` or `* / %`.
  parsed arithmetic_chain(std::string_view symbols, parsed (parser::*next)()) {
    auto first = (this->*next)();
    const auto at_op = [&] {
      return peek().kind == token_kind::symbol && peek().text.size() == 1 &&
             symbols.find(peek().text[0]) != std::string_view::npos;
    };
    if (!first || !at_op()) return first;
    node chain{node_kind::arithmetic, first->column};
    chain.children.push_back(std::move(*first));
    while (at_op()) {
      const auto& op = take();
      const char c = op.text[0];
      const auto kind = c == '+' ? binary_op::add : c == '-' ? binary_op::sub : c == '*' ? binary_op::mul
                        : c == '/' ? binary_op::div : binary_op::mod;
      chain.ops.push_back({kind, op.column});
      auto operand = (this->*next)();
      if (!operand) return std::nullopt;
      chain.children.push_back(std::move(*operand));
    }
    return chain;
  }

  parsed additive() { return arithmetic_chain("+-", &parser::multiplicative); }
  parsed multiplicative() { return arithmetic_chain("*/%", &parser::unary); }

  parsed unary() {
    const auto column = peek().column;
    std::size_t count = 0;
    for (; is_symbol("-"); ++count) take();
    auto operand = postfix();
    if (!operand || count == 0) return operand;
    node n{node_kind::negate, column};
    n.repeat = count;
    n.children.push_back(std::move(*operand));
    return n;
  }

  parsed postfix() {
    auto base = atom();
    if (!base || !(peek().kind == token_kind::dot_name || is_symbol("["))) return base;
    node chain{node_kind::postfix, base->column};
    chain.children.push_back(std::move(*base));
    while (peek().kind == token_kind::dot_name || is_symbol("[")) {
      auto step = peek().kind == token_kind::dot_name ? dotted() : subscript();
      if (!step) return std::nullopt;
      chain.children.push_back(std::move(*step));
    }
    return chain;
  }

  parsed dotted() {
    const auto& name = take();
    if (!check_name(name)) return std::nullopt;
    if (!is_symbol("(")) {
      node n{node_kind::step_attribute, name.column};
      n.name = name.text;
      return n;
    }
    const auto* method = detail::find_method(name.text);
    if (!method) {
      return fail("unknown method '" + name.text + "' (methods: strip lstrip rstrip lower upper title "
                  "startswith endswith replace split join count find contains)", name.column);
    }
    node n{node_kind::step_method, name.column};
    n.name = name.text;
    if (!arguments(n, *method)) return std::nullopt;
    return n;
  }

  parsed subscript() {
    const auto& bracket = take();
    if (!open(bracket)) return std::nullopt;
    auto index = or_expr();
    if (!index || !expect_close("]", bracket)) return std::nullopt;
    node n{node_kind::step_subscript, bracket.column};
    n.children.push_back(std::move(*index));
    return n;
  }

  // `(a, b)` after a function or method name; checks the count against `fn`.
  bool arguments(node& call, const detail::builtin& fn) {
    const auto& paren = take();
    if (!open(paren)) return false;
    while (!is_symbol(")")) {
      auto arg = (fn.name == "isinstance" && call.children.size() == 1) ? type_spec(call) : or_expr();
      if (!arg) return false;
      call.children.push_back(std::move(*arg));
      if (!is_symbol(",")) break;
      take();
    }
    if (!expect_close(")", paren)) return false;
    const auto n = call.children.size();
    if (n >= fn.min_args && n <= fn.max_args) return true;
    std::string want = std::to_string(fn.min_args);
    if (fn.max_args != fn.min_args)
      want = fn.max_args == SIZE_MAX ? "at least " + want : want + " to " + std::to_string(fn.max_args);
    const bool one = (fn.max_args == SIZE_MAX ? fn.min_args : fn.max_args) == 1;
    fail(std::string(fn.name) + "() takes " + want + " argument" + (one ? "" : "s") + ", got " +
             std::to_string(n), call.column);
    return false;
  }

  // isinstance's second argument: a type name, a quoted type name, or a list of them. The
  // node is a placeholder: the types go into the call's type_mask.
  parsed type_spec(node& call) {
    const token opener = peek();
    if (!is_symbol("[")) {
      if (!type_name(call)) return std::nullopt;
      return node{node_kind::literal, opener.column};
    }
    take();
    if (!open(opener)) return std::nullopt;
    while (!is_symbol("]")) {
      if (!type_name(call)) return std::nullopt;
      if (!is_symbol(",")) break;
      take();
    }
    if (!expect_close("]", opener)) return std::nullopt;
    return node{node_kind::literal, opener.column};
  }

  bool type_name(node& call) {
    const auto& t = take();
    const bool named = t.kind == token_kind::identifier || t.kind == token_kind::string;
    const auto bit = named ? type_named(t.text) : std::nullopt;
    if (!bit) {
      fail("isinstance() expects a type: str, int, float, bool, list, dict or None; found " + describe(t), t.column);
      return false;
    }
    call.type_mask |= *bit;
    return true;
  }

  parsed atom() {
    const auto& t = peek();
    switch (t.kind) {
      case token_kind::number: {
        node n{node_kind::literal, t.column, take().value};
        return n;
      }
      case token_kind::string: return string_literal(take());
      case token_kind::ref: {
        node n{node_kind::ref, t.column};
        n.ref = t.ref;
        references_.push_back(*take().ref);
        return n;
      }
      case token_kind::identifier: return name_atom();
      case token_kind::symbol:
        if (t.text == "(") return group();
        if (t.text == "[") return list();
        break;
      default: break;
    }
    return fail("expected a value, found " + describe(t));
  }

  parsed string_literal(const token& t) {
    auto spans = find_references(t.text);
    node n{spans.empty() ? node_kind::literal : node_kind::text_template, t.column};
    for (auto& span : spans) references_.push_back(std::move(span.ref));
    if (spans.empty())
      n.value = boost::json::string(t.text);
    else
      n.name = t.text;
    return n;
  }

  parsed name_atom() {
    const auto& t = take();
    // Booleans in any case (`TRUE`, `False`), as the Python dialect reads them: an unknown
    // name `TRUE` would be null, and `flag == TRUE` silently false.
    if (const auto b = detail::bool_string(t.text)) return node{node_kind::literal, t.column, *b};
    if (t.text == "null" || t.text == "None") return node{node_kind::literal, t.column, nullptr};
    if (is_keyword(t.text)) return fail("expected a value, found '" + t.text + "'", t.column);
    if (!check_name(t)) return std::nullopt;
    if (!is_symbol("(")) {
      node n{node_kind::identifier, t.column};
      n.name = t.text;
      return n;
    }
    const auto* fn = detail::find_function(t.text);
    if (!fn)
      return fail("unknown function '" + t.text + "' (functions: int str float bool len min max isinstance)",
                  t.column);
    node n{node_kind::call, t.column};
    n.name = t.text;
    if (!arguments(n, *fn)) return std::nullopt;
    return n;
  }

  parsed group() {
    const auto& paren = take();
    if (!open(paren)) return std::nullopt;
    auto inner = or_expr();
    if (!inner || !expect_close(")", paren)) return std::nullopt;
    return inner;
  }

  parsed list() {
    const auto& bracket = take();
    if (!open(bracket)) return std::nullopt;
    node n{node_kind::list, bracket.column};
    while (!is_symbol("]")) {
      auto item = or_expr();
      if (!item) return std::nullopt;
      n.children.push_back(std::move(*item));
      if (!is_symbol(",")) break;
      take();
    }
    if (!expect_close("]", bracket)) return std::nullopt;
    return n;
  }
};

}  // namespace

std::variant<condition, condition_error> parse_condition(std::string_view text) {
  if (text.size() > max_condition_bytes)
    return condition_error{"condition is longer than " + std::to_string(max_condition_bytes) + " bytes",
                           max_condition_bytes + 1};
  auto tokens = detail::tokenize(text);
  if (auto* error = std::get_if<condition_error>(&tokens)) return std::move(*error);
  auto& list = std::get<std::vector<token>>(tokens);
  if (list.size() == 1) return condition_error{"empty condition", 1};
  try {
    return parser(std::move(list)).run();
  } catch (const std::exception& e) {  // only allocation failure can get here
    return condition_error{std::string("cannot parse the condition: ") + e.what(), 1};
  }
}

std::vector<reference> condition_references(const condition& c) { return c.references(); }

namespace {

// The tree is as deep as the bracket nesting, which the parser bounds: recursion is safe.
void collect_names(const detail::node& n, bool compared, std::vector<bare_name>& out) {
  if (n.kind == detail::node_kind::identifier) {
    out.push_back({n.name, n.column, compared});
    return;
  }
  // `a == b`: either side may be a word meant as text; `a in b`: only `a` (b is a container).
  // Compared with a quoted string (`modee == 'quick'`), a word is a name, not text.
  const bool comparison = n.kind == detail::node_kind::comparison && !n.ops.empty();
  const auto op = comparison ? n.ops[0].op : detail::binary_op::add;
  const bool equality = op == detail::binary_op::eq || op == detail::binary_op::ne;
  const bool membership = op == detail::binary_op::in || op == detail::binary_op::not_in;
  const auto is_text = [](const detail::node& side) {
    return side.kind == detail::node_kind::text_template ||
           (side.kind == detail::node_kind::literal && side.value.is_string());
  };
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    const bool against_text = equality && n.children.size() == 2 && is_text(n.children[1 - i]);
    collect_names(n.children[i], comparison && !against_text && (equality || (membership && i == 0)), out);
  }
}

}  // namespace

std::vector<bare_name> condition_names(const condition& c) {
  std::vector<bare_name> out;
  collect_names(c.root(), false, out);
  std::sort(out.begin(), out.end(), [](const bare_name& a, const bare_name& b) { return a.column < b.column; });
  return out;
}

}  // namespace arun::engine
