#pragma once
/// The engine: runs a recipe on the caller's io_context. Embedders co_await recipe_engine::run,
/// or call async_run with any completion token.

#include <arun/events.hpp>
#include <arun/recipe.hpp>
#include <arun/result_cache.hpp>
#include <arun/results.hpp>
#include <arun/run_services.hpp>
#include <arun/step_runner.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>

#include <chrono>
#include <optional>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

/// How references without a value behave (docs/reference/templates.md, "Undefined references"):
/// `--lenient`, default, `--strict`.
enum class template_mode { lenient, normal, strict };

/// How agent steps are retried and finished (docs/reference/recipe.md, "Agent steps";
/// docs/agents.md, "Output, JSON and flaky agents"). Unset rate-limit values come from the
/// top-level recipe's `rate_limiting.backoff`, else the defaults of docs/agents.md,
/// "Output, JSON and flaky agents" (5, 60 s, 600 s).
struct agent_options {
  std::optional<int> rate_limit_retries;        ///< --rate-limit-retries
  std::optional<double> rate_limit_delay;       ///< --rate-limit-delay (seconds)
  std::optional<double> rate_limit_max_delay;   ///< --rate-limit-max-delay (seconds)
  /// Extra rate-limit markers (case-insensitive substrings), besides the built-in ones
  /// (docs/agents.md, "Output, JSON and flaky agents").
  std::vector<std::string> rate_limit_patterns;
  bool auto_stage = false;  ///< --auto-stage: `git add -A` after every agent step
  /// The model of an agent step's last rate-limit retry (amplihack's `auto`); empty: its own.
  std::string rate_limit_fallback_model;
};

struct run_options {
  std::string session_id;  ///< reported in events and the result
  template_mode templates = template_mode::normal;  ///< a recipe's lenient_templates also applies
  std::string working_dir;  ///< shown as {{session.working_dir}} (the runner resolves paths itself)
  /// Child processes (steps and hooks) running at once in the whole run (docs/running.md,
  /// "Concurrency").
  int max_concurrent = 8;
  /// The run's leaves run on this machine (the local executor): a leaf's `resources.cpus`
  /// takes that many of max_concurrent's slots. False when they go to a cluster, where the
  /// scheduler places them: then only `executor: local` leaves are weighted.
  bool leaves_run_here = true;
  std::vector<std::string> include_tags, exclude_tags;  ///< docs/reference/recipe.md, "Tags"
  /// A step_heartbeat event for every instance running this long, repeated; 0: none.
  std::chrono::nanoseconds heartbeat = std::chrono::seconds(60);
  std::chrono::nanoseconds hook_timeout = std::chrono::seconds(30);
  recipe_source* recipes = nullptr;     ///< sub-recipe steps fail without one
  run_journal* journal = nullptr;       ///< optional
  /// The recipe was edited since the journal was written (`resume --reload`): a recorded
  /// instance is taken only when its content key matches; containers are always entered.
  bool reload = false;
  /// `-k/--keep-going` (docs/running.md): a failing step that sets no on_error of its own
  /// lets the rest run; a step that depends on it (depends_on, or reading its output) is
  /// not run, and the run ends failed.
  bool keep_going = false;
  /// Context variables that hold secrets (--secret, --secret-env; a recipe's `secrets:` are
  /// known from the recipe): content keys cover their names, never their values.
  std::set<std::string, std::less<>> secret_names;
  /// Whether `text` holds a secret in any form the host masks (its secret masker's
  /// `mask(text) != text`): a cache never keeps such an output. None: the values of
  /// `secret_names` and the recipe's `secrets:` as written are looked for.
  std::function<bool(std::string_view text)> holds_secret;
  /// Called when a child waited for its slots (the run's max_concurrent, an agent limit, the
  /// agent spacing) before it started, with how long: for the host's own log. Not an event:
  /// a 10,000-item fan-out would make 10,000 of them.
  std::function<void(std::string_view instance, std::chrono::nanoseconds waited)> on_slot_wait;
  output_store* outputs = nullptr;      ///< optional: without one every output stays in memory
  approval_handler* approvals = nullptr;  ///< none: every gate suspends the run
  unsigned random_seed = 0;  ///< retry jitter; 0: from std::random_device
  agent_options agents;
  /// --limit NAME=N: children at once of a provider or limit group; each name wins over the
  /// recipe's `limits:`.
  std::map<std::string, int, std::less<>> limits;
  /// The provider of the run's agent CLI (claude, codex, copilot, fake, a custom command's
  /// program): the limit group of agent steps that name no `limit_group`.
  std::string agent_provider = "agent";
  /// --max-cost / --max-tokens: the run's budget for agent calls; each wins over the recipe's
  /// `budget:` field of the same kind. Reached, no new step starts, running ones finish, and
  /// the run ends budget_exhausted.
  run_budget budget;
  /// Where steps with `cache:` find and keep their outputs; none (--no-cache): every step
  /// runs and nothing is stored.
  result_cache* cache = nullptr;
  /// --refresh-cache: whether an instance of the step (its id, its instance id) must run
  /// even on a cache hit; its new output replaces the entry. Empty: none.
  std::function<bool(std::string_view step_id, std::string_view instance)> refresh_cache;
  /// Makes the trees of steps with `isolation:`; none: such a step fails before it starts.
  workspace_provider* workspaces = nullptr;
};

class recipe_engine {
public:
  recipe_engine(step_runner& runner, event_listener& listener) noexcept
      : runner_(runner), listener_(listener) {}

  /// Runs `r` and returns the result; never throws for recipe failures (only for arun's own
  /// faults, such as bad_alloc). `r` (and this engine, its runner, listener and the services
  /// in `options`) must outlive the returned awaitable. Cancelling the awaiting coroutine
  /// (any cancellation type) stops the run as SIGINT does: no new work starts, running
  /// children are terminated (SIGTERM, grace, SIGKILL), unstarted steps are `not_run`, and the
  /// result has status `cancelled`.
  boost::asio::awaitable<run_result> run(const recipe& r, run_options options);

  /// `run` with a completion token: the handler gets `(std::exception_ptr, run_result)`.
  template <typename Executor, typename CompletionToken>
  auto async_run(const Executor& ex, const recipe& r, run_options options, CompletionToken&& token) {
    return boost::asio::co_spawn(ex, run_here(r, std::move(options)), std::forward<CompletionToken>(token));
  }

private:
  /// The run itself, for a coroutine thread of its own: it changes that thread's cancellation
  /// settings (every cancellation type becomes the interrupt), never the caller's.
  boost::asio::awaitable<run_result> run_here(const recipe& r, run_options options);

  step_runner& runner_;
  event_listener& listener_;
};

/// A session id as docs/sessions.md, "Where sessions live", shows it: `20261121-134501-3f9a2c` (UTC
/// time + 24 random bits).
std::string make_session_id(std::chrono::system_clock::time_point now, unsigned random_bits);

}  // namespace arun
