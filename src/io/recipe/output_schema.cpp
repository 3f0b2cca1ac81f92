#include "recipe/output_schema.hpp"

#include "recipe/json_pointer.hpp"
#include "recipe/schema_messages.hpp"
#include "recipe/schema_violations.hpp"
#include "recipe/valijson_config.hpp"
#include "recipe/yaml_json.hpp"
#include "recipe/yaml_tree.hpp"

#include <boost/json/parse_options.hpp>
#include <boost/json/stream_parser.hpp>

#include <pthread.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace arun::io {
namespace json = boost::json;

struct output_schema::compiled {
  json::value checked;     // the document valijson compiled (formats guarded, see below)
  valijson::Schema schema;
  bool has_patterns = false;  // `pattern` or `patternProperties` somewhere: std::regex runs
};

namespace {

bool names_patterns(const json::value& v);  // below, with the long-text handling

constexpr std::size_t max_value_nesting = 64;        // as a recipe (docs/reference/recipe.md, "The file")
constexpr std::size_t max_reference_depth = 256;  // nesting with the $refs followed
// std::regex compiles (and matches) by recursion, a level per character or so: a longer
// pattern could overflow the stack of `validate` itself.
constexpr std::size_t max_pattern_length = 1000;

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: return "a mapping";
    case json::kind::array: return "a list";
    case json::kind::string: return "a string";
    case json::kind::bool_: return "a boolean";
    case json::kind::null: return "null";
    default: return "a number";
  }
}

// The JSON type of a value, as the schema's `type` names it.
std::string json_type_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::object: return "an object";
    case json::kind::array: return "an array";
    case json::kind::string: return "a string";
    case json::kind::bool_: return "a boolean";
    case json::kind::null: return "null";
    case json::kind::double_: return "a number";
    default: return "an integer";
  }
}

// A value from the schema in a message: quoted, and cut when long.
std::string shown(std::string_view text) {
  constexpr std::size_t most = 60;
  return "'" + std::string(text.substr(0, most)) + (text.size() > most ? "…'" : "'");
}

// JSON pointer text (RFC 6901) of a path of keys and indices.
std::string pointer_of(const std::vector<std::string>& path) {
  std::string out;
  for (const auto& token : path) {
    out += '/';
    for (char c : token) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return out;
}

// A place in the schema, as a $ref names it: "#/properties/name".
std::string place(const std::vector<std::string>& path) { return "#" + pointer_of(path); }

bool deeper_than(const json::value& v, std::size_t levels) {
  if (!v.is_object() && !v.is_array()) return false;
  if (levels == 0) return true;
  if (const auto* o = v.if_object())
    return std::any_of(o->begin(), o->end(), [&](const auto& kv) { return deeper_than(kv.value(), levels - 1); });
  const auto& a = v.get_array();
  return std::any_of(a.begin(), a.end(), [&](const json::value& item) { return deeper_than(item, levels - 1); });
}

// The schema's subschemas as valijson reads them (draft 7): the checks valijson cannot make
// safely are made here first.
class schema_walk {
public:
  explicit schema_walk(const json::value& root) : root_(root) {}

  /// Empty, or what makes the schema unsafe to compile or to check values with.
  std::string run() {
    visit(root_, 0);
    if (error_.empty()) find_loop();
    return error_;
  }

  /// Where the error is in the schema (keys and indices).
  const std::vector<std::string>& error_at() const noexcept { return error_at_; }

  /// The subschemas with a `format` string, by their path in the document.
  const std::vector<std::vector<std::string>>& format_places() const noexcept { return formats_; }

private:
  void visit(const json::value& node, std::size_t depth) {
    if (!error_.empty()) return;
    if (depth > max_reference_depth) {
      error_ = "the schema nests deeper than " + std::to_string(max_reference_depth) + " levels through its $refs";
      return;
    }
    if (!paths_.emplace(&node, path_).second) return;
    order_.push_back(&node);  // seen: a $ref's target, a recursive schema
    const auto* o = node.if_object();
    if (!o) return;
    if (const auto* ref = o->if_contains("$ref")) return follow(*ref, node, depth);  // valijson reads nothing beside it
    if (const auto* f = o->if_contains("format"); f && f->is_string()) formats_.push_back(path_);
    for (const auto& kv : *o) {
      const std::string key(kv.key());
      const auto& v = kv.value();
      path_.push_back(key);
      if (key == "allOf" || key == "anyOf" || key == "oneOf") {
        if (const auto* a = v.if_array())
          for (std::size_t i = 0; i < a->size(); ++i) same_value(node, (*a)[i], std::to_string(i), depth);
      } else if (key == "not" || key == "if" || key == "then" || key == "else") {
        same_value(node, v, {}, depth);
      } else if (key == "dependencies") {  // a schema there applies to the object itself
        if (const auto* deps = v.if_object())
          for (const auto& dep : *deps)
            if (dep.value().is_object() || dep.value().is_bool()) same_value(node, dep.value(), dep.key(), depth);
      } else if (key == "properties" || key == "patternProperties" || key == "definitions" || key == "$defs") {
        if (const auto* named = v.if_object())
          for (const auto& entry : *named) {
            path_.emplace_back(entry.key());
            if (key == "patternProperties") check_pattern(entry.key());
            visit(entry.value(), depth + 1);
            path_.pop_back();
          }
      } else if (key == "items" && v.is_array()) {
        for (std::size_t i = 0; i < v.get_array().size(); ++i) {
          path_.push_back(std::to_string(i));
          visit(v.get_array()[i], depth + 1);
          path_.pop_back();
        }
      } else if (key == "items" || key == "additionalItems" || key == "additionalProperties" || key == "contains" ||
                 key == "propertyNames") {
        visit(v, depth + 1);
      } else if (key == "pattern" && v.is_string()) {
        check_pattern(v.get_string());
      }
      path_.pop_back();
    }
  }

  // `child` applies to the very value `parent` does: a loop of such links never ends.
  void same_value(const json::value& parent, const json::value& child, std::string_view token, std::size_t depth) {
    if (!token.empty()) path_.emplace_back(token);
    links_[&parent].push_back(&child);
    visit(child, depth + 1);
    if (!token.empty()) path_.pop_back();
  }

  void follow(const json::value& ref, const json::value& node, std::size_t depth) {
    const auto at = place(path_);
    error_at_ = path_;
    error_at_.emplace_back("$ref");
    if (!ref.is_string()) {
      error_ = "the $ref at " + at + " must be a string";
      return;
    }
    const std::string_view text = ref.get_string();
    if (!text.starts_with('#')) {
      error_ = "$ref " + shown(text) + " at " + at + " points outside this schema: only local references ('#/...') are "
               "allowed, no other file and no network";
      return;
    }
    const auto tokens = pointer_tokens(text.substr(1));
    if (!tokens) {
      error_ = "$ref " + shown(text) + " at " + at + " is not a JSON pointer such as '#/definitions/NAME'";
      return;
    }
    const auto* target = value_at(root_, *tokens);
    if (!target) {
      error_ = "$ref " + shown(text) + " at " + at + " points at nothing in this schema";
      return;
    }
    error_at_.clear();
    links_[&node].push_back(target);
    auto saved = std::move(path_);
    path_ = *tokens;
    visit(*target, depth + 1);
    path_ = std::move(saved);
  }

  void check_pattern(std::string_view pattern) {
    if (!error_.empty()) return;
    const auto at = place(path_);
    error_at_ = path_;
    if (pattern.size() > max_pattern_length) {
      error_ = "the pattern at " + at + " is longer than " + std::to_string(max_pattern_length) + " characters";
      return;
    }
    try {
      const std::regex compiled(pattern.begin(), pattern.end());  // as valijson compiles it
    } catch (const std::regex_error& e) {
      error_ = "the pattern " + shown(pattern) + " at " + at + " is not a regular expression arun can use: " +
               violation_phrase(e.what());
    }
    if (error_.empty()) error_at_.clear();
  }

  // A loop of $refs, allOf, anyOf, oneOf, not, if/then/else and dependencies: checking a value
  // would go round it for ever (valijson overflows the stack). A walk with an explicit stack:
  // the links may be many.
  void find_loop() {
    enum class state { open, done };
    std::map<const json::value*, state> seen;
    for (const auto* start : order_) {  // in the order of the document: the same loop named each time
      if (seen.contains(start) || !links_.contains(start)) continue;
      std::vector<std::pair<const json::value*, std::size_t>> stack{{start, 0}};
      seen[start] = state::open;
      while (!stack.empty()) {
        const auto* node = stack.back().first;
        const auto it = links_.find(node);
        if (it == links_.end() || stack.back().second == it->second.size()) {
          seen[node] = state::done;
          stack.pop_back();
          continue;
        }
        const auto* next = it->second[stack.back().second++];
        const auto found = seen.find(next);
        if (found == seen.end()) {
          seen[next] = state::open;
          stack.emplace_back(next, 0);
        } else if (found->second == state::open) {
          std::string loop;
          const auto from = std::find_if(stack.begin(), stack.end(), [&](const auto& entry) { return entry.first == next; });
          for (auto i = from; i != stack.end(); ++i) loop += place(paths_.at(i->first)) + " -> ";
          error_ = "the schema refers back to itself without going into the value (" + loop + place(paths_.at(next)) +
                   "): checking a value would never end";
          error_at_ = paths_.at(next);
          return;
        }
      }
    }
  }

  const json::value& root_;
  std::string error_;
  std::vector<std::string> error_at_;
  std::vector<std::string> path_;                                   // of the node being visited
  std::map<const json::value*, std::vector<std::string>> paths_;  // visited subschemas, by where they are
  std::vector<const json::value*> order_;                          // the same, in the order visited
  std::map<const json::value*, std::vector<const json::value*>> links_;  // applies-to-the-same-value
  std::vector<std::vector<std::string>> formats_;
};

// valijson 1.0 reads a `format` of any value as a string, throwing for an object or an array,
// and checks only date, time and date-time: the others go, and those three apply to strings
// only, as the standard says (`if: {type: string}`).
void guard_formats(json::value& document, const std::vector<std::vector<std::string>>& places) {
  for (const auto& path : places) {
    auto* node = value_at(document, path);
    auto* o = node ? node->if_object() : nullptr;
    const auto* all_of = o ? o->if_contains("allOf") : nullptr;
    if (!o || (all_of && !all_of->is_array())) continue;  // valijson refuses that allOf itself
    const std::string format(o->at("format").get_string());
    o->erase("format");
    if (format != "date" && format != "time" && format != "date-time") continue;
    json::object guarded{{"if", {{"type", "string"}}}, {"then", {{"format", format}}}};
    auto& list = (*o)["allOf"];
    if (list.is_null()) list = json::array();
    list.get_array().push_back(std::move(guarded));
  }
}

// Line and column (1-based) of byte `pos` of `text`.
std::string line_and_column(std::string_view text, std::size_t pos) {
  pos = std::min(pos, text.size());
  const auto before = text.substr(0, pos);
  const auto line = std::count(before.begin(), before.end(), '\n') + 1;
  const auto start = before.rfind('\n');
  const auto column = start == std::string_view::npos ? pos + 1 : pos - start;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

output_schema::output_schema(json::value document, std::string origin, std::unique_ptr<compiled> c)
    : document_(std::move(document)), origin_(std::move(origin)), compiled_(std::move(c)) {}

output_schema::~output_schema() = default;

std::variant<std::shared_ptr<const output_schema>, output_schema::refusal> output_schema::compile(json::value document,
                                                                                               std::string origin) {
  if (!document.is_object() && !document.is_bool())
    return refusal{"a JSON Schema is a mapping (or true or false), not " + kind_of(document), {}};
  if (deeper_than(document, max_value_nesting))
    return refusal{"the schema nests deeper than " + std::to_string(max_value_nesting) + " levels", {}};
  auto c = std::make_unique<compiled>();
  c->checked = document;
  schema_walk walk(c->checked);
  if (auto error = walk.run(); !error.empty()) return refusal{std::move(error), walk.error_at()};
  guard_formats(c->checked, walk.format_places());
  c->has_patterns = names_patterns(c->checked);
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const valijson::adapters::BoostJsonAdapter adapter(c->checked);
    parser.populateSchema(adapter, c->schema);  // no fetchDoc: a remote reference throws
  } catch (const std::exception& e) {
    return refusal{"the schema is not valid: " + violation_phrase(e.what()), {}};
  }
  return std::shared_ptr<const output_schema>(new output_schema(std::move(document), std::move(origin), std::move(c)));
}

namespace {

// libstdc++'s std::regex recurses about once per character of the text it matches: a
// `pattern` against a 50 KB string overflows the event loop's 8 MB stack. Such values are
// checked on a thread with a stack that holds texts up to this size; longer ones are refused.
constexpr std::size_t long_text_bytes = 4 * 1024;
constexpr std::size_t longest_text_checked = 1024 * 1024;
constexpr std::size_t pattern_stack_bytes = 512u * 1024 * 1024;  // reserved, not committed
// Errors said again in jsonschema's words (schema_messages.hpp); later ones keep valijson's.
constexpr std::size_t most_errors_worded = 200;

bool names_patterns(const json::value& v) {
  if (const auto* o = v.if_object()) {
    for (const auto& kv : *o)
      if (kv.key() == "pattern" || kv.key() == "patternProperties" || names_patterns(kv.value())) return true;
  } else if (const auto* a = v.if_array()) {
    for (const auto& item : *a)
      if (names_patterns(item)) return true;
  }
  return false;
}

// The longest string (or object key) in `v`.
std::size_t longest_text(const json::value& v) {
  std::size_t most = 0;
  if (const auto* s = v.if_string()) return s->size();
  if (const auto* o = v.if_object()) {
    for (const auto& kv : *o) most = std::max({most, kv.key().size(), longest_text(kv.value())});
  } else if (const auto* a = v.if_array()) {
    for (const auto& item : *a) most = std::max(most, longest_text(item));
  }
  return most;
}

// Runs `work` on a thread of its own with a large stack, and waits for it; false when no
// such thread could be made.
bool run_with_large_stack(const std::function<void()>& work) {
  pthread_attr_t attr;
  if (::pthread_attr_init(&attr) != 0) return false;
  ::pthread_attr_setstacksize(&attr, pattern_stack_bytes);
  pthread_t thread;
  auto* job = const_cast<std::function<void()>*>(&work);
  const int made = ::pthread_create(
      &thread, &attr, [](void* p) -> void* { (*static_cast<std::function<void()>*>(p))(); return nullptr; }, job);
  ::pthread_attr_destroy(&attr);
  if (made != 0) return false;
  ::pthread_join(thread, nullptr);
  return true;
}

}  // namespace

std::vector<std::string> output_schema::violations(const json::value& value) const {
  if (compiled_->has_patterns) {
    const auto longest = longest_text(value);
    if (longest > longest_text_checked)
      return {"a text of " + std::to_string(longest) + " bytes is too long to check against the schema's patterns "
              "(at most " + std::to_string(longest_text_checked) + ")"};
    if (longest > long_text_bytes) {
      std::vector<std::string> out;
      const bool ran = run_with_large_stack([&] {
        try {
          out = check(value);
        } catch (...) {
          out = {"the value could not be checked against the schema"};
        }
      });
      if (ran) return out;
      return {"the value holds texts too long to check against the schema's patterns here"};
    }
  }
  return check(value);
}

std::vector<std::string> output_schema::check(const json::value& value) const {
  std::vector<schema_error> errors;
  try {
    valijson::Validator validator;  // strict types: 1 is no string, "1" no number
    valijson::ValidationResults results;
    const valijson::adapters::BoostJsonAdapter adapter(value);
    if (validator.validate(compiled_->schema, adapter, &results)) return {};
    // valijson names the keyword that failed, not the value nor what the schema allows: the
    // first errors are said again from the schema (a list of 100,000 bad items stays cheap).
    violation_wording wording(compiled_->checked, value);
    valijson::ValidationResults::Error e;
    while (results.popError(e)) {
      auto path = path_of(e.context);
      auto description = errors.size() < most_errors_worded ? wording(path, e.description) : e.description;
      errors.emplace_back(std::move(path), std::move(description));
    }
  } catch (const std::exception& e) {
    // A pattern std::regex gives up on (a long text), a value valijson cannot read.
    return {"the value could not be checked against the schema: " + violation_phrase(e.what())};
  }
  if (errors.empty()) return {"the schema accepts no value here"};  // a `false` schema says nothing more
  std::vector<std::string> out;
  for (auto& v : collect_violations(errors, violation_places::every)) {
    static const std::string type_error = "value type not permitted by 'type' constraint";
    if (const auto at = v.message.find(type_error); at != std::string::npos)
      if (const auto* found = value_at(value, v.path))
        v.message.insert(at + type_error.size(), " (it is " + json_type_of(*found) + ")");
    out.push_back(v.message + " at " + json_path(value, v.path));
  }
  return out;
}

std::variant<json::value, std::string> parse_schema_text(std::string_view text, std::string_view file_name) {
  json::parse_options options;
  options.max_depth = max_value_nesting + 1;
  json::stream_parser parser({}, options);
  boost::system::error_code ec;
  const auto used = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (!ec) return parser.release();
  if (file_name.ends_with(".json"))
    return "is not valid JSON: " + ec.message() + " at " + line_and_column(text, used);
  try {
    const auto parsed = yaml::parse(text);
    std::size_t budget = 1'000'000;
    return yaml_to_json(parsed.root, budget);
  } catch (const YAML::Exception& e) {
    if (e.msg == "bad file") return std::string("nests too deeply to be read");
    return "is neither JSON nor YAML: " + e.msg + " at line " + std::to_string(e.mark.line + 1) + ", column " +
           std::to_string(e.mark.column + 1);
  } catch (const yaml_too_large&) {
    return std::string("expands to more than 1,000,000 YAML nodes");
  }
}

}  // namespace arun::io
