#include "recipe/recipe_schema.hpp"

#include "recipe/yaml_json.hpp"

#include <boost/json/parse.hpp>
#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace arun::io {
namespace {

// Unknown keys are the reader's to judge (a warning, or an error with a suggestion when a
// known key is near): the check drops the schema's closed-world rule, which is for editors.
void open_objects(boost::json::value& v) {
  if (auto* o = v.if_object()) {
    if (const auto* extra = o->if_contains("additionalProperties"); extra && extra->is_bool() && !extra->get_bool())
      o->erase("additionalProperties");
    for (auto& kv : *o) open_objects(kv.value());
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) open_objects(item);
  }
}

// Parsed once per process: building the constraint tree costs more than checking a recipe.
const valijson::Schema& compiled_schema() {
  static const std::unique_ptr<valijson::Schema> schema = [] {
    auto document = boost::json::parse(recipe_schema_text());
    open_objects(document);
    auto s = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    const valijson::adapters::BoostJsonAdapter adapter(document);
    parser.populateSchema(adapter, *s);
    return s;
  }();
  return *schema;
}

// valijson's context: "<root>", then "[key]" or "[index]" per level.
std::vector<std::string> path_of(const std::vector<std::string>& context) {
  std::vector<std::string> path;
  for (const auto& part : context)
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') path.push_back(part.substr(1, part.size() - 2));
  return path;
}

// The lines valijson adds on the way out of a nested failure say nothing of their own.
bool wrapper(const std::string& description) {
  return description.starts_with("Failed to validate against schema associated with property") ||
         description.starts_with("Failed to validate item #") ||
         description.starts_with("Failed to validate against child schema #");
}

std::string sentence(std::string text) {
  while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) text.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(text.front())));
  return text;
}

bool strict_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return a.size() < b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// `key: null` (also `key:` and `key: ~`) is an absent key to the reader, as to the older
// runners: the schema sees the document the same way.
void drop_null_members(boost::json::value& v) {
  if (auto* o = v.if_object()) {
    for (auto it = o->begin(); it != o->end();)
      if (it->value().is_null()) it = o->erase(it);
      else drop_null_members((it++)->value());
  } else if (auto* a = v.if_array()) {
    for (auto& item : *a) drop_null_members(item);
  }
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Where the value at `path` below `node` starts (as far as the path exists). Recursive, not by
// assigning nodes: yaml-cpp's Node::operator= writes through to the node assigned to.
YAML::Mark mark_at_path(const yaml::node& node, const std::vector<std::string>& path, std::size_t i = 0) {
  if (i == path.size()) return node.Mark();
  if (node.IsMap()) {
    for (const auto& kv : node)
      if (kv.first.Scalar() == path[i]) return kv.second.IsNull() ? kv.first.Mark() : mark_at_path(kv.second, path, i + 1);
  } else if (node.IsSequence() && all_digits(path[i]) && std::stoul(path[i]) < node.size()) {
    return mark_at_path(node[std::stoul(path[i])], path, i + 1);
  }
  return node.Mark();
}

}  // namespace

std::vector<diagnostic> schema_diagnostics(std::string_view yaml_text, const std::string& file) {
  yaml::parsed parsed;
  try {
    parsed = yaml::parse(yaml_text);
  } catch (const YAML::Exception&) {
    return {};  // the loader reported it
  }
  const auto& root = parsed.root;
  std::size_t budget = 1'000'000;
  boost::json::value document;
  try {
    document = yaml_to_json(root, budget);
  } catch (const yaml_too_large&) {
    return {};  // the loader reported it
  }
  return schema_diagnostics(std::move(document), yaml_text, file);
}

std::vector<diagnostic> schema_diagnostics(boost::json::value document, std::string_view yaml_text,
                                           const std::string& file) {
  drop_null_members(document);
  const auto violations = check_recipe_schema(document);
  if (violations.empty()) return {};
  yaml::parsed parsed;  // where the refused values are written
  try {
    parsed = yaml::parse(yaml_text);
  } catch (const YAML::Exception&) {
  }
  const auto& root = parsed.root;
  std::vector<diagnostic> out;
  for (const auto& v : violations) {
    std::string where;
    for (const auto& part : v.path) where += all_digits(part) ? "[" + part + "]" : (where.empty() ? "" : ".") + part;
    const auto mark = root ? mark_at_path(root, v.path) : YAML::Mark::null_mark();
    diagnostic d;
    d.where = mark.is_null() ? source_location{file, 0, 0} : source_location{file, mark.line + 1, mark.column + 1};
    d.message = "the recipe schema refuses " + (where.empty() ? std::string("the recipe") : where) + ": " + v.message;
    d.key = v.path.empty() ? std::string() : v.path.back();
    d.hint = "arun itself accepts this: the schema (schema/recipe.schema.json) and arun disagree, which is a bug of "
             "arun's; please report it";
    d.code = "schema";
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<schema_violation> check_recipe_schema(const boost::json::value& document) {
  valijson::Validator validator;
  valijson::ValidationResults results;
  const valijson::adapters::BoostJsonAdapter adapter(document);
  if (validator.validate(compiled_schema(), adapter, &results)) return {};
  std::vector<std::pair<std::vector<std::string>, std::string>> errors;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) errors.emplace_back(path_of(e.context), e.description);
  // Only the innermost places: an error inside a value explains its enclosing ones.
  std::vector<schema_violation> out;
  for (const auto& error : errors) {
    const auto& path = error.first;
    const auto& description = error.second;
    // (Not a structured binding: clang 14 cannot capture one in a lambda.)
    const bool enclosing = std::any_of(errors.begin(), errors.end(), [&](const auto& other) { return strict_prefix(path, other.first); });
    if (enclosing) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const schema_violation& v) { return v.path == path; });
    if (it == out.end()) it = out.insert(out.end(), schema_violation{path, ""});
    if (wrapper(description)) continue;
    // Alternatives (anyOf, oneOf) each say why they failed: keep a few, in order.
    const auto text = sentence(description);
    if (it->message.find(text) != std::string::npos) continue;
    if (std::count(it->message.begin(), it->message.end(), ';') >= 3) continue;
    it->message += (it->message.empty() ? "" : "; or ") + text;
  }
  for (auto& v : out)
    if (v.message.empty()) v.message = "it matches none of the forms the schema allows";
  return out;
}

}  // namespace arun::io
