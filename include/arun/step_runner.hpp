#pragma once
/// The engine runs leaf work only through this interface (ninja's CommandRunner idea): io
/// implements it with real child processes, tests with a fake.

#include <arun/events.hpp>
#include <arun/recipe.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arun {

/// Called for every line a child prints (newline removed; a partial last line included).
using output_line_handler =
    std::function<void(output_stream, std::string_view line, bool truncated)>;

/// A variable the rendered script expands (docs/reference/templates.md,
/// "Templates in bash commands", "The context in the environment"): in the environment, or, when
/// too large for it, through a private file the script reads back byte-exact.
struct shell_variable_export {
  std::string name;
  std::string value;
  bool by_file = false;
};

/// A foreach whose body is one leaf, handed to the runner whole (step_runner::takes_fan_outs):
/// its leaves ask together, and the runner lets at most `throttle` of them run at a time
/// (a cluster's job array with a task limit), so that 10,000 items are a few submissions.
struct fan_out_share {
  std::uint64_t id = 0;   ///< the loop run's: unique in the arun process
  std::size_t items = 0;  ///< how many leaves the loop starts at once (more, and retries, ask later)
  int throttle = 1;       ///< the most leaves of the loop running at once
};

/// Where a leaf runs and what it asks of the machine there.
struct leaf_placement {
  /// The step's `resources`, over its loops', its recipe's and its calling steps' (inner
  /// fields win); null: none.
  std::shared_ptr<const step_resources> resources;
  bool local_only = false;  ///< `executor: local`: on arun's machine whatever the run's executor
  /// Set: a leaf of a handed-off fan-out. It holds no slot of --max-concurrent itself; its
  /// loop holds the slots of the throttle.
  std::shared_ptr<const fan_out_share> fan_out;
};

/// Called once when a leaf that waited in a queue (a handed-off fan-out's) starts running.
using running_handler = std::function<void()>;

/// A bash step, ready to run: templates already rendered.
struct bash_invocation {
  std::string instance_id;
  std::string command;  ///< the rewritten script: references are `${RECIPE_VAR_…}` expansions
  std::vector<shell_variable_export> exports;            ///< the context export and the script's variables
  std::vector<std::pair<std::string, std::string>> env;  ///< the step's env, applied last, in order
  std::string working_dir;  ///< empty: the run's working dir; relative: below it
  std::optional<std::chrono::nanoseconds> timeout;
  leaf_placement placement;
  output_line_handler on_line;
  running_handler on_running;  ///< may be empty; a runner that cannot tell never calls it
};

/// An agent step, ready to run (docs/reference/recipe.md, "Agent steps"): the prompt rendered,
/// `MODE:` line and the non-interactive footer included. The runner resolves the agent's persona
/// (docs/agents.md, "Resolution order") and builds the agent CLI's command line (docs/agents.md,
/// "Choosing the CLI").
struct agent_invocation {
  std::string instance_id;
  std::string agent;        ///< `ns:name` / `ns:cat:name`; empty: the CLI's own default agent
  std::string prompt;
  std::string model;        ///< the step's `model`; empty: provider_preferences, the agent file's, the CLI's
  std::string provider;     ///< the step's `provider`; empty: any
  boost::json::value provider_preferences;  ///< the step's list of {provider, model glob}; null: none
  std::string working_dir;  ///< empty: the run's working dir; relative: below it
  std::vector<std::pair<std::string, std::string>> env;  ///< the step's env, applied last
  std::optional<std::chrono::nanoseconds> timeout;
  leaf_placement placement;
  output_line_handler on_line;
  running_handler on_running;  ///< may be empty; a runner that cannot tell never calls it
};

/// What running one leaf (a child process) produced. The engine turns it into a step_result.
struct leaf_outcome {
  bool started = false;  ///< false: the child never ran (see error)
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool timed_out = false;
  bool cancelled = false;
  bool truncated = false;   ///< stdout or stderr exceeded the capture bound
  std::string stdout_text;  ///< captured stdout (bounded)
  std::string snippet;      ///< last lines of stderr and stdout, for failure messages
  std::string error;        ///< why it failed, without the step prefix; empty on success
  std::vector<std::string> warnings;  ///< for the step's warning events (e.g. a persona left out)
  std::chrono::nanoseconds duration{};  ///< the child's run time, time queued excluded
  /// How long the child waited in a cluster's queue before it started (a Slurm job); unset
  /// where it never waits (a local child).
  std::optional<std::chrono::nanoseconds> queued;
  /// An agent call whose CLI reports usage (claude, codex): what it spent, also when it
  /// failed; none: the CLI reports none.
  std::optional<agent_usage> usage;
  /// The CLI said the reply was refused for a rate limit (claude's 429 may exit 0).
  bool rate_limited = false;
  /// The CLI exited 0 but reported that the call failed (claude's `is_error`); see `error`.
  bool reported_error = false;

  bool succeeded() const noexcept {
    return started && exit_code == 0 && !timed_out && !cancelled && !reported_error;
  }
};

/// What, besides its invocation, decides what a leaf does where this runner runs it: the
/// content key of a cached step (`cache:`) covers it.
struct leaf_identity {
  std::string working_dir;  ///< absolute: where the child would run
  /// The runner's own choices, as text: an agent's CLI, resolved model and persona.
  std::string text;
  std::string error;  ///< set: the leaf cannot run (an unknown persona); no key, no lookup
};

class step_runner {
public:
  virtual ~step_runner() = default;

  /// The identity of a bash or agent leaf (a cached step's key). The defaults: the working
  /// directory as given, nothing else.
  virtual leaf_identity identity(const bash_invocation& inv);
  virtual leaf_identity identity(const agent_invocation& inv);

  /// Runs a bash step to completion. Expected failures (non-zero exit, timeout, missing
  /// program or working directory) are reported in the outcome, never thrown. Cancellation
  /// through the awaiting coroutine's cancellation slot terminates the step's process group
  /// (SIGTERM, grace, SIGKILL) and yields `cancelled`.
  virtual boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation inv) = 0;

  /// Runs an agent step to completion, with the same rules as `run_bash`. The default says
  /// the runner has no agent support (the step fails without starting anything).
  virtual boost::asio::awaitable<leaf_outcome> run_agent(agent_invocation inv);

  /// Whether leaves placed as `p` go where a whole fan-out can be taken at once and
  /// throttled there (a cluster's job arrays). Then a foreach whose body is one leaf starts
  /// all its items together, each placed with the loop's fan_out_share, instead of one per
  /// free slot. The default: no.
  virtual bool takes_fan_outs(const leaf_placement& p) const;
};

}  // namespace arun
