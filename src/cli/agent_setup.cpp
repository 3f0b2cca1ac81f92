#include "agent_setup.hpp"
#include "recipe_input.hpp"

#include "usage_hints.hpp"

#include "agents/agent_cli.hpp"
#include "agents/agent_resolution.hpp"
#include "agents/amplihack_preset.hpp"
#include "agents/price_table.hpp"
#include "files/install_layout.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <variant>

namespace arun::cli {

std::variant<io::agent_cli, std::string> choose_agent_cli(const agent_settings& a) {
  std::variant<io::agent_cli, std::string> chosen;
  if (!a.command.empty()) {
    chosen = io::parse_agent_command(a.command);
  } else {
    std::string name = a.cli;
    const char* from_env = std::getenv("ARUN_AGENT_CLI");
    if (name.empty()) name = from_env && *from_env ? from_env : "claude";
    // Found or not, a recipe without agent steps runs; one with them gets check_agent_cli's
    // warning, which names the places looked in, and its agent steps fail.
    const auto fake = name == "fake" ? io::locate_fake_agent(io::running_binary()) : io::shipped_file{};
    // Not found: $ARUN_FAKE_AGENT as given when set (so the error names it), else PATH's.
    const char* fake_env = std::getenv("ARUN_FAKE_AGENT");
    const std::string fallback = fake_env && *fake_env ? fake_env : "fake-agent";
    chosen = io::parse_agent_cli(name, fake.path.empty() ? fallback : fake.path);
    if (auto* cli = std::get_if<io::agent_cli>(&chosen); cli && name == "fake" && fake.path.empty())
      cli->fake_looked_in = fake.looked_in;
    if (a.cli.empty() && from_env && *from_env && std::holds_alternative<std::string>(chosen))
      chosen = "$ARUN_AGENT_CLI: " + std::get<std::string>(chosen);
  }
  return chosen;
}

std::optional<std::pair<std::string, int>> parse_limit(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  const auto name = text.substr(0, eq);
  const bool name_ok = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-';
  });
  const auto digits = text.substr(eq + 1);
  if (!name_ok || digits.empty() || digits.size() > 4 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const int n = std::stoi(std::string(digits));
  if (n < 1 || n > 4096) return std::nullopt;
  return std::pair{std::string(name), n};
}

void add_limit_checks(const agent_settings& a, recipe_options& o) {
  o.limit_names.clear();
  for (const auto& given : a.limits)
    if (const auto limit = parse_limit(given)) o.limit_names.push_back(limit->first);
  o.limit_providers.clear();
  if (const auto chosen = choose_agent_cli(a); std::holds_alternative<io::agent_cli>(chosen))
    o.limit_providers.push_back(io::provider_name(std::get<io::agent_cli>(chosen)));
}

std::optional<std::string> configure_agents(const run_settings& s, const std::string& base_dir,
                                            const std::string& recipe_path, io::runner_options& runner,
                                            run_options& engine) {
  const auto& a = s.agents;
  auto chosen = choose_agent_cli(a);
  if (const auto* error = std::get_if<std::string>(&chosen)) return *error;
  runner.agent = std::get<io::agent_cli>(std::move(chosen));
  std::optional<io::amplihack_settings> amplihack;
  if (runner.agent.kind == io::agent_cli_kind::amplihack) {
    amplihack = io::read_amplihack_settings([](const char* name) { return std::getenv(name); });
    for (const auto& w : amplihack->warnings) std::fprintf(stderr, "arun: warning: %s\n", w.c_str());
    runner.agent.env = {{"AMPLIHACK_MAX_DEPTH", amplihack->max_depth}, {"AMPLIHACK_MAX_SESSIONS", amplihack->max_sessions}};
    runner.agent.system_prompt_suffix = std::string(io::amplihack_no_reentry_guard);
    runner.agent.allow_all_tools = amplihack->allow_all_tools;
  }
  runner.agents = io::agent_search_from_environment(s.recipe.agent_dirs, base_dir);
  runner.agents.recipe_dir = recipe_directory(recipe_path);
  runner.allow_missing_agents = s.recipe.allow_missing_agents;
  auto& opts = engine.agents;
  // The command line wins over amplihack's settings, which win over the recipe's.
  if (amplihack) {
    opts.rate_limit_retries = amplihack->rate_limit_retries;
    opts.rate_limit_delay = amplihack->rate_limit_delay;
    opts.rate_limit_max_delay = amplihack->rate_limit_max_delay;
    opts.rate_limit_fallback_model = amplihack->fallback_model;
  }
  if (a.rate_limit_retries >= 0) opts.rate_limit_retries = a.rate_limit_retries;
  if (a.rate_limit_delay >= 0) opts.rate_limit_delay = a.rate_limit_delay;
  if (a.rate_limit_max_delay >= 0) opts.rate_limit_max_delay = a.rate_limit_max_delay;
  if (!a.rate_limit_fallback_model.empty()) opts.rate_limit_fallback_model = a.rate_limit_fallback_model;
  opts.rate_limit_patterns = a.rate_limit_patterns;
  opts.auto_stage = a.auto_stage;
  engine.agent_provider = io::provider_name(runner.agent);
  if (!a.prices.empty()) {
    auto table = io::load_price_table(a.prices);
    if (auto* error = std::get_if<std::string>(&table)) return "--prices: " + *error;
    runner.prices = std::make_shared<const io::price_table>(std::move(std::get<io::price_table>(table)));
  }
  if (a.max_cost > 0) engine.budget.cost_usd = a.max_cost;
  if (a.max_tokens > 0) engine.budget.tokens = static_cast<std::uint64_t>(a.max_tokens);
  for (const auto& given : a.limits) {
    const auto limit = parse_limit(given);
    if (!limit) return "--limit: expected NAME=N (N from 1 to 4096), got '" + given + "'";
    engine.limits[limit->first] = limit->second;  // the last one given for a name wins
  }
  return std::nullopt;
}

}  // namespace arun::cli
