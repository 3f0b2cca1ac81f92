// The user's token prices (--prices FILE): loading with positioned errors, the lookup order
// (exact model, globs in file order, provider), and pricing a call's usage.
#include <catch2/catch.hpp>

#include "agents/price_table.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <variant>

using namespace arun::io;

namespace {

const char* sample = R"(# US dollars per million tokens
models:
  claude-sonnet-4-5: {input: 3, output: 15, cache_read: 0.30, cache_write: 3.75}
  "gpt-5*": {input: 1.25, output: 10, cache_read: 0.125}
  "claude-*": {input: 1, output: 5}
  codex: {input: 2, output: 20}
)";

price_table table(const std::string& text) {
  auto r = parse_price_table(text, "prices.yaml");
  INFO((std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : ""));
  REQUIRE(std::holds_alternative<price_table>(r));
  return std::get<price_table>(r);
}

std::string error_of(const std::string& text) {
  auto r = parse_price_table(text, "prices.yaml");
  REQUIRE(std::holds_alternative<std::string>(r));
  return std::get<std::string>(r);
}

arun::agent_usage usage(std::string provider, std::string model, std::uint64_t in, std::uint64_t out,
                        std::uint64_t cache_read = 0, std::uint64_t cache_write = 0) {
  arun::agent_usage u;
  u.provider = std::move(provider);
  u.model = std::move(model);
  u.input = in;
  u.output = out;
  u.cache_read = cache_read;
  u.cache_write = cache_write;
  return u;
}

}  // namespace

TEST_CASE("price table: an exact name wins over globs and globs go in file order before the provider") {
  const auto t = table(sample);
  REQUIRE(t.entries.size() == 4);
  const auto* exact = find_prices(t, "claude-sonnet-4-5", "claude");
  REQUIRE(exact);
  CHECK(*exact->input == 3);
  const auto* glob = find_prices(t, "claude-haiku-4-5", "claude");
  REQUIRE(glob);
  CHECK(*glob->input == 1);
  CHECK(*find_prices(t, "gpt-5-codex", "codex")->input == 1.25);  // the glob before the provider
  CHECK(*find_prices(t, "o3", "codex")->input == 2);                // no model entry: the provider's
  CHECK(*find_prices(t, "", "codex")->input == 2);                  // no model: the provider's
  CHECK(find_prices(t, "o3", "copilot") == nullptr);
  CHECK(find_prices(t, "", "") == nullptr);
  // Globs in file order: the first match wins.
  const auto ordered = table("models:\n  'm-*': {input: 1, output: 1}\n  'm-?': {input: 2, output: 2}\n");
  CHECK(*find_prices(ordered, "m-a", "")->input == 1);
}

TEST_CASE("price table: a call is priced per million tokens of each kind") {
  const auto t = table(sample);
  auto u = usage("claude", "claude-sonnet-4-5", 1'000'000, 100'000, 2'000'000, 10'000);
  apply_prices(t, u);
  REQUIRE(u.cost_usd);
  CHECK(*u.cost_usd == Approx(3.0 + 1.5 + 0.6 + 0.0375));
}

TEST_CASE("price table: a token kind without a price makes the cost unknown") {
  const auto t = table(sample);
  auto u = usage("codex", "gpt-5", 1000, 100, 0, 50);  // cache writes, and gpt-5* prices none
  u.cost_usd = 0.42;
  apply_prices(t, u);
  CHECK_FALSE(u.cost_usd);
  auto no_cache = usage("codex", "gpt-5", 1'000'000, 0, 0, 0);  // a kind with no tokens needs no price
  apply_prices(t, no_cache);
  REQUIRE(no_cache.cost_usd);
  CHECK(*no_cache.cost_usd == Approx(1.25));
  auto cached = usage("claude", "claude-haiku", 10, 10, 10);  // claude-* has no cache_read price
  apply_prices(t, cached);
  CHECK_FALSE(cached.cost_usd);
}

TEST_CASE("price table: the table beats the reported cost and without an entry the reported cost stays") {
  const auto t = table(sample);
  auto priced = usage("claude", "claude-sonnet-4-5", 1'000'000, 0);
  priced.cost_usd = 99.0;
  apply_prices(t, priced);
  CHECK(*priced.cost_usd == Approx(3.0));
  auto unpriced = usage("copilot", "x", 10, 10);
  unpriced.cost_usd = 0.5;
  apply_prices(t, unpriced);
  CHECK(*unpriced.cost_usd == 0.5);
  auto unknown = usage("copilot", "x", 10, 10);
  apply_prices(t, unknown);
  CHECK_FALSE(unknown.cost_usd);
}

TEST_CASE("price table: JSON files load too and an empty models list is a table") {
  const auto t = table(R"({"models": {"gpt-5": {"input": 1.25, "output": 10}}})");
  REQUIRE(t.entries.size() == 1);
  CHECK(t.entries[0].name == "gpt-5");
  CHECK(*t.entries[0].prices.output == 10);
  CHECK_FALSE(t.entries[0].prices.cache_read);
  CHECK(table("models:\n").entries.empty());
  CHECK(table("models: {}\n").entries.empty());
}

TEST_CASE("price table: load errors say where and what") {
  CHECK(error_of("models:\n  m: {input: 1, output: 2, cache: 3}\n") ==
        "prices.yaml:2:28: unknown key 'cache' in the prices of 'm' (known: input, output, cache_read, cache_write)");
  CHECK(error_of("models:\n  m: {input: -1, output: 2}\n") ==
        "prices.yaml:2:14: the input price of 'm' must be a non-negative number");
  CHECK(error_of("models:\n  m: {input: '1', output: 2}\n") ==
        "prices.yaml:2:14: the input price of 'm' is not a number: give US dollars per million tokens, e.g. input: 3");
  CHECK(error_of("models:\n  m: {input: 1}\n") ==
        "prices.yaml:2:3: 'm' has no output price: every entry gives input and output");
  CHECK(error_of("models:\n  m: {cache_read: 1}\n") ==
        "prices.yaml:2:3: 'm' has no input price: every entry gives input and output");
  CHECK(error_of("models:\n  m: {input: 1, output: 1}\n  m: {input: 2, output: 2}\n") ==
        "prices.yaml:3:3: 'm' has prices twice");
  CHECK(error_of("models:\n  m: 3\n").starts_with("prices.yaml:2:6: the prices of 'm' must be a mapping"));
  CHECK(error_of("model:\n  m: {input: 1, output: 1}\n").starts_with("prices.yaml:1:1: unknown key 'model': a price "
                                                                      "file is a mapping with one key, models:"));
  CHECK(error_of("- a\n").starts_with("prices.yaml:1:1: a price file is a mapping"));
  CHECK(error_of("models: [\n").starts_with("prices.yaml:"));
  CHECK(error_of("models: {m: {input: 1, output: 1}\n").find("not valid YAML or JSON") != std::string::npos);
  CHECK(error_of(R"({"models": {"m": {"input": 1, "output": true}}})") ==
        "prices.yaml:1:41: the output price of 'm' is not a number: give US dollars per million tokens, e.g. output: 3");
}

TEST_CASE("price table: a file is read from disk and a missing one is a clear error") {
  const auto dir = std::filesystem::temp_directory_path() / ("arun-prices-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "prices.yaml").string();
  std::ofstream(path) << sample;
  auto loaded = load_price_table(path);
  REQUIRE(std::holds_alternative<price_table>(loaded));
  CHECK(std::get<price_table>(loaded).entries.size() == 4);
  std::ofstream(path) << "models:\n  m: {input: x, output: 1}\n";
  loaded = load_price_table(path);
  REQUIRE(std::holds_alternative<std::string>(loaded));
  CHECK(std::get<std::string>(loaded).starts_with(path + ":2:14: the input price of 'm' is not a number"));
  const auto missing = load_price_table((dir / "nope.yaml").string());
  REQUIRE(std::holds_alternative<std::string>(missing));
  CHECK(std::get<std::string>(missing) ==
        "cannot read the price file " + (dir / "nope.yaml").string() + ": No such file or directory");
  std::filesystem::remove_all(dir);
}
