#pragma once
/// Step and run outcomes (docs/reference/formats.md, "Statuses", "Run result"). Outcomes are
/// values: an expected failure is a result with a status, never an exception.

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arun {

/// Tokens and cost of agent calls, as the agent CLI reported them (claude's JSON output,
/// codex's JSON events). A sum when it covers several calls.
struct agent_usage {
  std::string provider;  ///< the CLI's provider: claude, codex, …
  std::string model;     ///< as reported, else as asked for; empty: unknown
  std::uint64_t calls = 0;        ///< agent calls summed here (one per reply, corrections included)
  std::uint64_t input = 0;        ///< input tokens, cache reads and writes not included
  std::uint64_t output = 0;
  std::uint64_t cache_read = 0;   ///< input tokens read from the provider's prompt cache
  std::uint64_t cache_write = 0;  ///< input tokens written to it
  /// US dollars: the CLI's own figure, else priced from --prices; in a sum, of the calls
  /// whose cost is known. None: no call's cost is known (never a made-up zero).
  std::optional<double> cost_usd;
  std::uint64_t calls_without_cost = 0;  ///< calls summed here whose cost is unknown
  std::uint64_t tokens() const noexcept { return input + output + cache_read + cache_write; }
  /// Adds `other`'s counts: the known costs, and the calls of unknown cost.
  void add(const agent_usage& other);
};

/// `into` plus `more`, where either may be absent (no usage reported).
void add_usage(std::optional<agent_usage>& into, const std::optional<agent_usage>& more);

/// US dollars for people: `$12.34` from $10, `$0.0041` below, and below $0.0001 two
/// significant digits (`$0.000031`): a nonzero amount never reads as zero.
std::string format_usd(double usd);

/// The agent calls of a run for one provider and model (run_result::usage).
struct usage_total {
  std::string provider, model;
  std::uint64_t calls = 0;
  std::uint64_t input = 0, output = 0, cache_read = 0, cache_write = 0;
  double cost_usd = 0;                   ///< of the calls whose cost is known
  std::uint64_t calls_without_cost = 0;  ///< calls whose cost is unknown (not in cost_usd)
};

/// What happened to one step instance (docs/reference/formats.md, "Statuses").
enum class step_status { completed, failed, skipped, degraded, cancelled, not_run };

/// How a whole run ended (`status`, docs/reference/formats.md, "Run result").
/// budget_exhausted: the run's budget (--max-cost, --max-tokens, `budget:`) was spent; the
/// steps it did not start run on `arun resume` with a larger one.
enum class run_status { completed, failed, waiting_approval, cancelled, budget_exhausted };

std::string_view to_string(step_status s) noexcept;
std::string_view to_string(run_status s) noexcept;

/// How the iterations of a loop step ended (`iterations`, docs/reference/formats.md, "Run result").
struct iteration_counts {
  std::size_t total = 0;  ///< iterations the loop had (foreach: items; while: iterations run)
  std::size_t completed = 0;
  std::size_t failed = 0;
  std::size_t skipped = 0;  ///< skipped: a condition, tags, or skip_remaining chose not to run them
  std::size_t waiting = 0;  ///< stopped at an approval gate (the run waits for approval)
  std::size_t cancelled = 0;  ///< stopped while running (the interrupt, a fatal failure): a resume runs them
  std::size_t not_run = 0;    ///< never started: the loop ended early
  std::size_t cached = 0;     ///< of the completed: reused from the cache (`cache:`), no child ran
};

/// A loop's iteration that failed, as its loop's result names it (docs/reference/formats.md).
struct failed_instance {
  std::string instance;  ///< `fan[3]`
  std::string error;     ///< the first line of its error
};

/// The outcome of one step instance.
struct step_result {
  std::string step_id;  ///< instance id (docs/reference/formats.md, "Conventions")
  step_status status = step_status::not_run;
  std::optional<int> exit_code;  ///< set when a child exited normally
  std::optional<int> signal;     ///< set when a child was ended by a signal
  bool timed_out = false;
  bool truncated = false;  ///< stored output hit the capture bound
  int attempts = 0;
  /// How long the instance ran; a leaf whose jobs waited in a cluster's queue: without that
  /// wait (`queued`), so that it says what the step itself took.
  std::chrono::nanoseconds duration{};
  /// Leaves only: how long its jobs (every attempt's) waited in a cluster's queue before they
  /// started; unset where nothing queues (the local executor). docs/scale-out.md, queue time.
  std::optional<std::chrono::nanoseconds> queued;
  /// Wall-clock start and end of the instance (its pre_step hook excluded); the epoch when it
  /// never started (skipped, not run).
  std::chrono::system_clock::time_point started_at{}, ended_at{};
  boost::json::value output;  ///< null when the step stored nothing; loops: the collected list
  std::string error;          ///< empty unless failed/cancelled/degraded
  std::optional<iteration_counts> iterations;  ///< loop steps only
  std::vector<failed_instance> failed_instances;  ///< loop steps: the iterations that failed, in item order
  std::vector<step_result> children;           ///< sub-recipe steps: the child's top-level steps
  bool fatal = false;  ///< this failure ended the run (on_error: fail)
  /// What the instance ran from (leaf instances: bash, agent, gate): its step's definition and
  /// the values its templates and condition read. A `resume --reload` reuses a recorded
  /// instance only when its key is unchanged. Empty for containers (loops, iterations with a
  /// body, sub-recipe calls).
  std::string content_key;
  /// This instance skipped the rest of its sequence (on_error: skip_remaining, or a body that
  /// did): a resume that replays it from the journal skips the rest again.
  bool skipped_rest = false;
  /// What the agent calls of this instance spent (a loop or sub-recipe call: everything
  /// inside it); none when no call reported usage.
  std::optional<agent_usage> usage;
  /// A leaf whose output came from the cache (`cache:`): no child ran. Status completed.
  bool cached = false;
  /// An isolated leaf (`isolation:`): its worktree or copy (removed after a success unless
  /// kept, kept after a failure), and its branch (worktrees). Empty otherwise.
  std::string worktree, branch;

  /// It started (an attempt, a start time, or time spent): an instance that never started has
  /// no duration to show, and a `(0.00s)` beside it would say that it ran.
  bool ran() const noexcept {
    return attempts > 0 || started_at != std::chrono::system_clock::time_point{} || duration.count() > 0;
  }
};

/// The gate a run stopped at (docs/sessions.md, "Approvals"): status `waiting_approval`.
struct pending_approval {
  std::string step;    ///< the gate's instance id
  std::string prompt;  ///< rendered
};

/// The outcome of a whole run: what `arun` prints on stdout.
struct run_result {
  std::string recipe_name;
  run_status status = run_status::completed;
  std::string session_id;
  std::chrono::nanoseconds duration{};
  std::chrono::system_clock::time_point started_at{}, ended_at{};  ///< this invocation's (a resume's own)
  boost::json::value output;  ///< the recipe's final output (`output`, docs/reference/recipe.md, "Top-level fields")
  boost::json::object context;
  std::vector<step_result> step_results;  ///< one per declared top-level step, in order
  /// Why the run failed: its own reason, or the first line of the error of the step whose
  /// failure ended it; empty otherwise.
  std::string error;
  /// A `resume --reload`: the recorded instances taken as they were (their content key
  /// unchanged), and those run again because their step or inputs changed.
  std::vector<std::string> reused, changed;
  /// A `resume --reload`: recorded failures run again although their key is unchanged (the fix
  /// may be outside the recipe: a script, a source file, the machine).
  std::vector<std::string> failed_again;
  /// Gates whose denial failed the run (`on_approval_denied: fail`, a stage's gate): a resume
  /// meets the same denial, so the result suggests none.
  std::vector<std::string> denied;
  /// Every gate the run stopped at, in instance order (status waiting_approval): a fan-out
  /// can leave several, each decided on its own (`arun approve ID --step INSTANCE`).
  std::vector<pending_approval> waiting;
  /// The session's agent calls per provider and model (those of a resumed run's recorded
  /// steps included), in the order first seen.
  std::vector<usage_total> usage;

  bool success() const noexcept { return status == run_status::completed; }
};

}  // namespace arun
