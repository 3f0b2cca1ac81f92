#pragma once
// The user's token prices (--prices FILE), which turn agent calls' token counts into dollars.
// The file is YAML or JSON, US dollars per million tokens:
//
//   models:
//     claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.30, cache_write: 3.75}
//     "gpt-5*": {input: 1.25, output: 10, cache_read: 0.125}
//     codex: {input: 1.25, output: 10}   # a provider: its calls whose model has no entry

#include <arun/results.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

/// US dollars per million tokens of each kind; none: the entry gives no price for that kind.
struct token_prices {
  std::optional<double> input, output, cache_read, cache_write;
};

struct price_entry {
  std::string name;  ///< a model, a glob of models (`*`, `?`, `[...]`), or a provider
  token_prices prices;
};

struct price_table {
  std::vector<price_entry> entries;  ///< in file order
};

/// Reads a price file (YAML or JSON). Errors, as one message: the file cannot be read, is not
/// YAML/JSON, has keys other than `models` at the top or other than input, output,
/// cache_read, cache_write in an entry, a price that is not a non-negative number, an entry
/// without input and output, or the same name twice; "FILE:LINE:COL: …" where the place is
/// known.
std::variant<price_table, std::string> load_price_table(const std::string& path);

/// load_price_table on a text already read; `source` names it in messages.
std::variant<price_table, std::string> parse_price_table(std::string_view text, const std::string& source);

/// The prices of a call: the entry named `model` exactly, else the first glob entry (in file
/// order) matching it, else the entry named `provider`; null when none applies. An empty
/// model matches only the provider's entry.
const token_prices* find_prices(const price_table& table, std::string_view model, std::string_view provider);

/// What `usage` costs at `prices`; none when a kind of token it counts has no price there.
std::optional<double> cost_of(const token_prices& prices, const agent_usage& usage);

/// Prices `usage` by its model and provider: a matching entry's figure replaces the CLI's
/// reported cost (the user's prices win), unknown when the entry lacks a price for a kind the
/// call used; without an entry the reported cost stays.
void apply_prices(const price_table& table, agent_usage& usage);

}  // namespace arun::io
