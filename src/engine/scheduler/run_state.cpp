#include "scheduler/run_state.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "policy/retry.hpp"

#include <algorithm>
#include <cctype>

namespace arun::engine {

namespace asio = boost::asio;

namespace {

// The command line wins over the recipe's rate_limiting.backoff, which wins over the defaults of
// docs/agents.md, "Output, JSON and flaky agents".
retry_policy rate_limits_for(const agent_options& cli, const rate_limit_backoff& recipe) {
  return rate_limit_retry_policy(cli.rate_limit_retries.value_or(recipe.max_retries.value_or(5)),
                                 cli.rate_limit_delay.value_or(recipe.initial_delay.value_or(60.0)),
                                 cli.rate_limit_max_delay.value_or(recipe.max_delay.value_or(600.0)),
                                 recipe.multiplier.value_or(2.0));
}

// The command line's budget wins per field over the recipe's.
run_budget merged_budget(const run_budget& cli, const run_budget& recipe) {
  run_budget b = recipe;
  if (cli.cost_usd) b.cost_usd = cli.cost_usd;
  if (cli.tokens) b.tokens = cli.tokens;
  return b;
}

// The command line's limits win per name over the recipe's.
std::map<std::string, int, std::less<>> merged_limits(std::map<std::string, int, std::less<>> cli,
                                                      const std::map<std::string, int, std::less<>>& recipe) {
  for (const auto& [name, limit] : recipe) cli.emplace(name, limit);
  return cli;
}

}  // namespace

run_state::run_state(step_runner& r, event_listener& listener, run_options opts, const recipe& top,
                     const asio::any_io_executor& ex)
    : runner(r),
      options(std::move(opts)),
      executor(ex),
      limiter(ex, options.max_concurrent),
      groups(ex, merged_limits(options.limits, top.limits), options.max_concurrent,
             [this](const limit_group_view& v, std::string_view why) {
               auto e = make_event(event_kind::limit_changed);
               e.group = {std::string(v.name), v.running, v.limit, v.configured};
               e.message = std::string(why);
               emit(e);
             }),
      spend(merged_budget(options.budget, top.budget)),
      agent_spacing(std::chrono::milliseconds(top.rate_limiting.min_delay_ms.value_or(0))),
      rate_limit_policy(rate_limits_for(options.agents, top.rate_limiting.backoff)),
      limits(top.recursion),
      listener_(listener),
      random_(options.random_seed ? options.random_seed : std::random_device{}()),
      ticker_(ex) {
  if (top.rate_limiting.max_concurrent_llm) agent_limiter.emplace(ex, *top.rate_limiting.max_concurrent_llm);
  // A resume: every call the session's earlier runs made counts against its budget, those of
  // instances that were cancelled or failed included (docs/sessions.md).
  if (options.journal)
    if (auto earlier = options.journal->recorded_usage()) {
      counts_replayed_spend_ = false;
      for (const auto& u : *earlier) spend.add(u);
    }
}

void run_state::record_spend(const agent_usage& u, std::string_view instance) {
  // Journaled before anything else: whatever becomes of the instance, the call was paid for.
  if (options.journal) options.journal->record_usage(instance, u);
  const auto unknown_before = spend.uncosted_calls();
  if (spend.add(u)) {
    auto e = make_event(event_kind::warning);
    e.message = "the budget is reached after '" + std::string(instance) + "' (" + spend.describe() +
                "): no new step starts; the running ones finish";
    emit(e);
  }
  if (unknown_before == 0 && spend.uncosted_calls() > 0 && spend.budget().cost_usd) {
    auto e = make_event(event_kind::warning);
    e.message = "a cost budget is set, but " + (u.provider.empty() ? std::string("the agent CLI") : u.provider) +
                " reported no cost for " + (u.model.empty() ? std::string("this call") : "model " + u.model) +
                " and --prices has no price for it: such calls are not counted against the budget";
    emit(e);
  }
}

std::string run_state::refuse_for_budget() {
  spend.refused();
  return std::string(not_started_prefix) + "the budget is reached (" + spend.describe() + ")";
}

std::string_view run_state::group_of(const step& s) const noexcept {
  if (!s.limit_group.empty()) return s.limit_group;
  if (s.type == step_type::agent) return options.agent_provider;
  return {};
}

bool run_state::rate_limited(std::string_view output) const {
  if (looks_rate_limited(output)) return true;
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  if (options.agents.rate_limit_patterns.empty()) return false;
  const auto text = lower(output);
  return std::any_of(options.agents.rate_limit_patterns.begin(), options.agents.rate_limit_patterns.end(),
                     [&](const std::string& p) { return !p.empty() && text.find(lower(p)) != std::string::npos; });
}

event run_state::make_event(event_kind kind, std::string_view instance, std::string_view type) const {
  event e;
  e.kind = kind;
  e.session_id = options.session_id;
  e.step = instance;
  e.step_type = type;
  const auto& b = spend.budget();
  if (b.cost_usd || b.tokens || !spend.totals().empty())
    e.spend = event::spend_state{spend.cost_usd(), spend.cost_usd() > 0 || spend.uncosted_calls() < spend.calls(),
                                 spend.tokens(), b.cost_usd, b.tokens};
  return e;
}

void run_state::warn(std::string_view instance, const std::vector<std::string>& messages, std::string_view type) {
  for (const auto& m : messages) {
    if (!warned_.emplace(declared_path(instance), m).second) continue;
    auto e = make_event(event_kind::warning, instance, type);
    e.message = m;
    emit(e);
  }
}

double run_state::unit_random() { return std::uniform_real_distribution<double>(0.0, 1.0)(random_); }

run_state::running_leaf run_state::track(std::string instance, std::string type) {
  const auto now = steady::now();
  running_.push_back({std::move(instance), std::move(type), now, now});
  return {running_, std::prev(running_.end())};
}

asio::awaitable<void> run_state::heartbeats() {
  const auto every = options.heartbeat;
  if (every <= std::chrono::nanoseconds::zero()) co_return;
  // Check often enough that a beat is at most ~1 s late, without waking more than needed.
  const auto tick = std::min<std::chrono::nanoseconds>(every, std::chrono::seconds(1));
  while (!heartbeats_stopped_) {
    ticker_.expires_after(tick);
    co_await ticker_.async_wait(asio::as_tuple(asio::use_awaitable));
    const auto now = steady::now();
    for (auto& leaf : running_) {
      if (heartbeats_stopped_ || now - leaf.last_beat < every) continue;
      leaf.last_beat = now;
      auto e = make_event(event_kind::step_heartbeat, leaf.instance, leaf.type);
      e.elapsed = now - leaf.started;
      emit(e);
    }
  }
}

void run_state::stop_heartbeats() {
  heartbeats_stopped_ = true;
  ticker_.cancel();
}

std::string declared_path(std::string_view instance) {
  std::string out;
  out.reserve(instance.size());
  bool in_index = false;
  for (char c : instance) {
    if (c == '[') in_index = true;
    if (!in_index) out += c;
    if (c == ']') in_index = false;
  }
  return out;
}

}  // namespace arun::engine
