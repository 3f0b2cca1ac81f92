#include "recipe/fleet_fields.hpp"

#include "recipe/output_schema.hpp"
#include "recipe/recipe_loader.hpp"
#include "recipe/yaml_json.hpp"

#include <arun/value_format.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

namespace arun::io {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t max_schema_file_bytes = 1u << 20;
constexpr long long max_limit = 100000;
constexpr long long max_schema_retries = 100;

const char* const limit_name_rule = "letters, digits, '_', '.', ':' and '-'";

// The text of the schema file at `path`, or why there is none (a phrase after its name).
std::optional<std::string> read_schema_file(const std::string& path, recipe_sources* sources, std::string& error) {
  if (sources)
    if (auto text = sources->saved(path)) return text;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    error = "does not exist (looked for " + fs::absolute(path, ec).lexically_normal().string() + ")";
    return std::nullopt;
  }
  if (!fs::is_regular_file(status)) {  // a FIFO or a device would block or never end
    error = "is not a regular file";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(max_schema_file_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad() || (!in && !in.eof())) {
    error = "cannot be read";
    return std::nullopt;
  }
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_schema_file_bytes) {
    error = "is larger than 1 MiB";
    return std::nullopt;
  }
  if (sources) sources->read(path, text);
  return text;
}

// The schema document written as `output_schema`, with its origin ("inline" or the path as
// written); nullopt after an error.
std::optional<std::pair<boost::json::value, std::string>> schema_document(const field_reader& f, recipe_sources* sources) {
  const char* key = "output_schema";
  const auto n = f.node(key);
  if (n.IsMap()) {
    auto o = f.object(key);  // duplicate keys are errors
    if (!o) return std::nullopt;
    return std::pair{boost::json::value(std::move(*o)), std::string("inline")};
  }
  const auto v = n.IsScalar() ? scalar_to_json(n) : boost::json::value();
  if (v.is_bool()) return std::pair{v, std::string("inline")};  // true: any value, false: none
  if (!v.is_string() || v.get_string().empty()) {
    f.error(key, "'output_schema' must be a JSON Schema (a mapping, true or false) or the path of a schema file");
    return std::nullopt;
  }
  const std::string written(v.get_string());
  if (written.find("{{") != std::string::npos) {
    f.error(key, "output_schema is read when the recipe loads: templates are not rendered in its path");
    return std::nullopt;
  }
  // Relative to the recipe file's directory, as `extends` and sub-recipe paths.
  const auto path = (fs::path(f.sink().file()).parent_path() / written).string();
  std::string error;
  const auto text = read_schema_file(path, sources, error);
  if (!text) {
    f.error(key, "output_schema '" + written + "' " + error);
    return std::nullopt;
  }
  auto parsed = parse_schema_text(*text, written);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    f.error(key, "output_schema '" + written + "' " + *why);
    return std::nullopt;
  }
  return std::pair{std::move(std::get<boost::json::value>(parsed)), written};
}

// Where the value at `path` (keys and indices) below `node` is written, as far as it exists.
YAML::Mark mark_at(const yaml::node& node, const std::vector<std::string>& path, std::size_t i = 0) {
  if (i == path.size()) return node.Mark();
  if (node.IsMap()) {
    for (const auto& kv : node)
      if (kv.first.Scalar() == path[i]) return kv.second.IsNull() ? kv.first.Mark() : mark_at(kv.second, path, i + 1);
  } else if (node.IsSequence()) {
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(path[i].data(), path[i].data() + path[i].size(), index);
    if (ec == std::errc() && end == path[i].data() + path[i].size() && index < node.size())
      return mark_at(node[index], path, i + 1);
  }
  return node.Mark();
}

}  // namespace

bool valid_limit_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':' || c == '-';
  });
}

void read_output_schema(const field_reader& f, step& s, recipe_sources* sources) {
  if (!f.has("output_schema")) return;
  auto document = schema_document(f, sources);
  if (!document) return;
  auto& [value, origin] = *document;
  const bool from_file = origin != "inline";
  // The file's schema is part of the step as written: an edit of it is an edit of the step.
  const auto text = from_file ? to_compact_json(value) : std::string();
  auto compiled = output_schema::compile(std::move(value), origin);
  if (auto* why = std::get_if<output_schema::refusal>(&compiled)) {
    if (from_file)
      f.error("output_schema", "output_schema '" + origin + "': " + why->message);
    else  // at the place in the schema written inline
      f.sink().error(mark_at(f.node("output_schema"), why->at), "output_schema: " + why->message, "output_schema");
    return;
  }
  s.output_schema = std::move(std::get<std::shared_ptr<const output_schema>>(compiled));
  if (from_file && !s.definition_hash.empty()) s.definition_hash = content_hash(s.definition_hash + "\noutput_schema " + text);
}

void read_schema_retries(const field_reader& f, step& s) {
  if (auto n = f.integer("schema_retries", 0, max_schema_retries)) s.schema_retries = static_cast<int>(*n);
  if (f.has("schema_retries") && !f.has("output_schema"))
    f.warning("schema_retries", "'schema_retries' has no effect without output_schema");
}

void read_limit_group(const field_reader& f, step& s) {
  const auto name = f.text("limit_group");
  if (!name) return;
  if (!valid_limit_name(*name)) {
    f.error("limit_group", "'limit_group' must be a name of " + std::string(limit_name_rule),
            name->find("{{") != std::string::npos ? "limit groups are read when the recipe loads: templates are not rendered" : "");
    return;
  }
  s.limit_group = *name;
}

void read_limits(const field_reader& f, recipe& r) {
  const auto n = f.node("limits");
  if (!n) return;
  if (!n.IsMap()) {
    f.error("limits", "'limits' must be a mapping of provider or limit_group names to counts",
            "limits: {anthropic: 4, github-api: 2}");
    return;
  }
  r.limits_where = f.sink().at(n.Mark());
  for (const auto& kv : n) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const auto count = kv.second.IsScalar() ? scalar_to_json(kv.second) : boost::json::value();
    if (!valid_limit_name(name))
      f.sink().error(kv.first.Mark(), "limit name '" + name + "' must use " + limit_name_rule, "limits");
    else if (r.limits.contains(name))
      f.sink().error(kv.first.Mark(), "duplicate key '" + name + "' in 'limits'", "limits");
    else if (!count.is_int64() || count.get_int64() < 1 || count.get_int64() > max_limit)
      f.sink().error(kv.second.Mark(), "the limit of '" + name + "' must be a whole number from 1 to " + std::to_string(max_limit),
                     "limits");
    else
      r.limits.emplace(name, static_cast<int>(count.get_int64()));
  }
}

void read_budget(const field_reader& f, recipe& r) {
  const auto n = f.node("budget");
  if (!n) return;
  if (!n.IsMap()) {
    f.error("budget", "'budget' must be a mapping (cost_usd, tokens)", "budget: {cost_usd: 20, tokens: 5000000}");
    return;
  }
  r.budget_where = f.sink().at(n.Mark());
  const field_reader b(n, f.sink(), "the budget");
  // A key arun ignored would be a limit that never stops the run: unknown keys are errors.
  b.check_keys({"cost_usd", "tokens"}, {}, true);
  if (b.has("cost_usd")) {
    const auto v = b.node("cost_usd").IsScalar() ? scalar_to_json(b.node("cost_usd")) : boost::json::value();
    if (v.is_number() && std::isfinite(v.to_number<double>()) && v.to_number<double>() > 0)
      r.budget.cost_usd = v.to_number<double>();
    else
      b.error("cost_usd", "'cost_usd' must be a number of US dollars above 0");
  }
  if (b.has("tokens")) {
    const auto v = b.node("tokens").IsScalar() ? scalar_to_json(b.node("tokens")) : boost::json::value();
    if (v.is_int64() && v.get_int64() > 0)
      r.budget.tokens = static_cast<std::uint64_t>(v.get_int64());
    else if (v.is_uint64())
      r.budget.tokens = v.get_uint64();
    else
      b.error("tokens", "'tokens' must be a whole number above 0");
  }
  bool only_known = true;
  for (const auto& kv : n) only_known = only_known && (kv.first.Scalar() == "cost_usd" || kv.first.Scalar() == "tokens");
  if (!b.has("cost_usd") && !b.has("tokens") && only_known)
    f.error("budget", "'budget' needs cost_usd, tokens or both", "budget: {cost_usd: 20}");
}

}  // namespace arun::io
