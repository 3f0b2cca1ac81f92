#pragma once
// What every coroutine of one run shares: the host's services, the concurrency limit, the
// interrupt, the step budget, event emission and the heartbeat ticker. One per run; the
// scheduler runs on one thread, so nothing here needs a lock.

#include "scheduler/limit_groups.hpp"
#include "scheduler/limiter.hpp"
#include "scheduler/spend.hpp"

#include <arun/engine.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <list>
#include <optional>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun::engine {

using steady = std::chrono::steady_clock;

/// How run_state::refuse_for_budget's text starts.
inline constexpr std::string_view not_started_prefix = "not started: ";

class run_state {
public:
  run_state(step_runner& runner, event_listener& listener, run_options options, const recipe& top,
            const boost::asio::any_io_executor& ex);

  step_runner& runner;
  const run_options options;
  const boost::asio::any_io_executor executor;
  concurrency_limiter limiter;
  /// rate_limiting of the top-level recipe (docs/reference/recipe.md, "rate_limiting"): agent
  /// children at once (none: only the global limit), and the least time between two agent starts.
  std::optional<concurrency_limiter> agent_limiter;
  /// Per-provider limits (--limit, the recipe's `limits:`), adapting to rate limits.
  limit_groups groups;
  /// What the agent calls spent, against the run's budget.
  spend_meter spend;
  const std::chrono::nanoseconds agent_spacing;
  std::optional<steady::time_point> last_agent_start;
  /// docs/agents.md, "Output, JSON and flaky agents": how an agent's rate limit is retried when the
  /// step's `retry` does not say.
  const retry_policy rate_limit_policy;
  std::stop_source interrupt;  ///< the whole run stops: no new work, running children end
  const recursion_limits limits;  ///< the top-level recipe's, for the whole run (docs/reference/recipe.md, "recursion")
  int instances_started = 0;      ///< counted against limits.max_total_steps
  bool budget_exhausted = false;  ///< max_total_steps was reached: every failure is fatal now
  /// options.reload: recorded instances taken (key unchanged) and run again (key changed).
  std::vector<std::string> reused, changed;
  /// options.reload: recorded failures run again with their key unchanged (run_result::failed_again).
  std::vector<std::string> failed_again;
  /// Gates denied with a fatal effect, with the error each one gave: the run's result names
  /// those whose error is the one the run ended on (run_result::denied); a denial that an
  /// outer step absorbed (recovery_on_failure, on_error: continue) does not count.
  std::vector<std::pair<std::string, std::string>> denied;

  event make_event(event_kind kind, std::string_view instance = {}, std::string_view type = {}) const;
  void emit(const event& e) noexcept { listener_.on_event(e); }
  /// Warning events, each text once per step (an iteration repeats its loop's warnings).
  void warn(std::string_view instance, const std::vector<std::string>& messages, std::string_view type = {});

  /// The limit group the children of `s` count against: its `limit_group`, else an agent
  /// step's provider; empty: none.
  std::string_view group_of(const step& s) const noexcept;

  /// Adds what a call of `instance` spent (or a replayed instance of a journal that keeps no
  /// calls, on resume) and journals it at once; warns when it makes the run reach its budget,
  /// and once when a cost budget meets a call of unknown cost.
  void record_spend(const agent_usage& u, std::string_view instance);
  /// The journal keeps no calls of the session's earlier runs (an older arun's): what a
  /// replayed instance spent is counted instead (docs/sessions.md).
  bool counts_replayed_spend() const noexcept { return counts_replayed_spend_; }
  /// The budget was reached: no new step starts (running ones finish).
  bool draining() const noexcept { return spend.exhausted(); }
  /// Why an instance was not started because the budget was reached (counted): "not
  /// started: the budget is reached (…)".
  std::string refuse_for_budget();

  /// Whether a failed agent's output reads as a rate limit (the markers of docs/agents.md,
  /// "Output, JSON and flaky agents", and the options' extra patterns).
  bool rate_limited(std::string_view output) const;

  /// A number in [0, 1) for retry jitter.
  double unit_random();

  /// Registers a running child for heartbeats until the returned handle is destroyed.
  class running_leaf;
  running_leaf track(std::string instance, std::string type);

  /// Emits step_heartbeat for every tracked child running longer than options.heartbeat since
  /// its start or last beat; returns when `stop_heartbeats` is called.
  boost::asio::awaitable<void> heartbeats();
  void stop_heartbeats();

private:
  struct tracked {
    std::string instance, type;
    steady::time_point started, last_beat;
  };

  bool counts_replayed_spend_ = true;
  event_listener& listener_;
  std::mt19937_64 random_;
  std::set<std::pair<std::string, std::string>, std::less<>> warned_;
  std::list<tracked> running_;
  boost::asio::steady_timer ticker_;
  bool heartbeats_stopped_ = false;
};

class run_state::running_leaf {
public:
  running_leaf(std::list<tracked>& owner, std::list<tracked>::iterator it) : owner_(&owner), it_(it) {}
  running_leaf(running_leaf&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), it_(other.it_) {}
  running_leaf(const running_leaf&) = delete;
  running_leaf& operator=(const running_leaf&) = delete;
  running_leaf& operator=(running_leaf&&) = delete;
  ~running_leaf() {
    if (owner_) owner_->erase(it_);
  }

private:
  std::list<tracked>* owner_;
  std::list<tracked>::iterator it_;
};

/// `id[3]/child` -> `id/child`: the declared step an instance belongs to.
std::string declared_path(std::string_view instance);

}  // namespace arun::engine
