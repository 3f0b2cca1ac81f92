#include "recipe/recipe_schema.hpp"

#include "recipe/valijson_config.hpp"
#include "recipe/yaml_json.hpp"

#include <boost/json/parse.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
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
  std::vector<schema_error> errors;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) errors.emplace_back(path_of(e.context), e.description);
  return collect_violations(errors, violation_places::innermost);
}

}  // namespace arun::io
