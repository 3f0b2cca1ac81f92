#include "agents/price_table.hpp"

#include "recipe/yaml_json.hpp"
#include "recipe/yaml_tree.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace arun::io {
namespace {

constexpr std::size_t max_price_file_bytes = 4u << 20;

std::string at(const std::string& source, const YAML::Mark& mark, std::string_view message) {
  if (mark.line < 0) return fmt::format("{}: {}", source, message);
  return fmt::format("{}:{}:{}: {}", source, mark.line + 1, mark.column + 1, message);
}

bool is_glob(std::string_view name) { return name.find_first_of("*?[") != std::string_view::npos; }

std::optional<double> token_price(const yaml::node& value, const std::string& source, const std::string& model,
                                  const std::string& kind, std::string& error) {
  const auto v = value.IsScalar() ? scalar_to_json(value) : boost::json::value();
  if (!v.is_number()) {
    error = at(source, value.Mark(), fmt::format("the {} price of '{}' is not a number: give US dollars per million "
                                                 "tokens, e.g. {}: 3", kind, model, kind));
    return std::nullopt;
  }
  const double d = v.to_number<double>();
  if (!std::isfinite(d) || d < 0) {
    error = at(source, value.Mark(), fmt::format("the {} price of '{}' must be a non-negative number", kind, model));
    return std::nullopt;
  }
  return d;
}

// One `models:` entry; an error text when it is not one.
std::optional<price_entry> read_entry(const yaml::node& key, const yaml::node& value, const std::string& source,
                                      std::string& error) {
  price_entry entry;
  entry.name = key.Scalar();
  if (!key.IsScalar() || entry.name.empty()) {
    error = at(source, key.Mark(), "a model name must be a non-empty string");
    return std::nullopt;
  }
  if (!value.IsMap()) {
    error = at(source, value.IsDefined() ? value.Mark() : key.Mark(),
               fmt::format("the prices of '{}' must be a mapping such as {{input: 3, output: 15, cache_read: 0.3, "
                           "cache_write: 3.75}}", entry.name));
    return std::nullopt;
  }
  for (const auto& kv : value) {
    const auto& kind = kv.first.Scalar();
    std::optional<double>* slot = kind == "input"        ? &entry.prices.input
                                  : kind == "output"     ? &entry.prices.output
                                  : kind == "cache_read" ? &entry.prices.cache_read
                                  : kind == "cache_write" ? &entry.prices.cache_write
                                                          : nullptr;
    if (!slot) {
      error = at(source, kv.first.Mark(), fmt::format("unknown key '{}' in the prices of '{}' (known: input, output, "
                                                      "cache_read, cache_write)", kind, entry.name));
      return std::nullopt;
    }
    *slot = token_price(kv.second, source, entry.name, kind, error);
    if (!*slot) return std::nullopt;
  }
  if (!entry.prices.input || !entry.prices.output) {
    error = at(source, key.Mark(), fmt::format("'{}' has no {} price: every entry gives input and output", entry.name,
                                               entry.prices.input ? "output" : "input"));
    return std::nullopt;
  }
  return entry;
}

}  // namespace

std::variant<price_table, std::string> parse_price_table(std::string_view text, const std::string& source) {
  yaml::parsed parsed;
  try {
    parsed = yaml::parse(text);
  } catch (const YAML::Exception& e) {
    return at(source, e.mark, "not valid YAML or JSON: " + e.msg);
  }
  const auto& root = parsed.root;
  constexpr std::string_view shape = "a price file is a mapping with one key, models: {MODEL: {input: N, output: N, "
                                     "cache_read: N, cache_write: N}, ...} (US dollars per million tokens)";
  if (!root.IsMap()) return at(source, root.Mark(), shape);
  yaml::node models;
  for (const auto& kv : root) {
    if (kv.first.Scalar() != "models")
      return at(source, kv.first.Mark(), fmt::format("unknown key '{}': {}", kv.first.Scalar(), shape));
    if (models.IsDefined()) return at(source, kv.first.Mark(), "'models' is given twice");
    models = kv.second;
  }
  if (!models.IsDefined()) return at(source, root.Mark(), shape);
  price_table table;
  if (models.IsNull()) return table;  // `models:` with no entries
  if (!models.IsMap()) return at(source, models.Mark(), shape);
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : models) {
    std::string error;
    auto entry = read_entry(kv.first, kv.second, source, error);
    if (!entry) return error;
    if (!seen.insert(entry->name).second)
      return at(source, kv.first.Mark(), fmt::format("'{}' has prices twice", entry->name));
    table.entries.push_back(std::move(*entry));
  }
  return table;
}

std::variant<price_table, std::string> load_price_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("cannot read the price file {}: {}", path, std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_price_file_bytes)
      return fmt::format("the price file {} is larger than {} MiB", path, max_price_file_bytes >> 20);
  }
  if (in.bad()) return fmt::format("cannot read the price file {}: {}", path, std::strerror(errno));
  return parse_price_table(text, path);
}

const token_prices* find_prices(const price_table& table, std::string_view model, std::string_view provider) {
  if (!model.empty()) {
    for (const auto& e : table.entries)
      if (e.name == model) return &e.prices;
    const std::string m(model);
    for (const auto& e : table.entries)
      if (is_glob(e.name) && ::fnmatch(e.name.c_str(), m.c_str(), 0) == 0) return &e.prices;
  }
  if (!provider.empty())
    for (const auto& e : table.entries)
      if (e.name == provider) return &e.prices;
  return nullptr;
}

std::optional<double> cost_of(const token_prices& prices, const agent_usage& usage) {
  double dollars = 0;
  const std::pair<std::uint64_t, const std::optional<double>*> kinds[] = {
      {usage.input, &prices.input},
      {usage.output, &prices.output},
      {usage.cache_read, &prices.cache_read},
      {usage.cache_write, &prices.cache_write}};
  for (const auto& [tokens, price] : kinds) {
    if (tokens == 0) continue;
    if (!*price) return std::nullopt;  // never guess a price
    dollars += static_cast<double>(tokens) * **price / 1e6;
  }
  return dollars;
}

void apply_prices(const price_table& table, agent_usage& usage) {
  if (const auto* prices = find_prices(table, usage.model, usage.provider)) usage.cost_usd = cost_of(*prices, usage);
}

}  // namespace arun::io
