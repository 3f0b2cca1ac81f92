#pragma once
/// What the engine asks of its host besides running children (step_runner.hpp): loading
/// sub-recipes, remembering finished step instances, and deciding approval gates. The engine
/// reads no files itself; io provides these, tests provide fakes.

#include <arun/recipe.hpp>
#include <arun/results.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun {

/// A sub-recipe, or why it could not be loaded.
struct loaded_recipe {
  std::shared_ptr<const recipe> value;  ///< null: see error
  std::string error;                    ///< "recipe 'x' not found in ...", a load or validation error
};

/// Finds and loads the recipes that `recipe:` steps name (docs/reference/recipe.md,
/// "Sub-recipe steps", "extends").
class recipe_source {
public:
  virtual ~recipe_source() = default;
  /// `reference` is the rendered `recipe:` value: a name (discovery) or a path relative to
  /// `caller.source_path`. Never throws for a missing or invalid recipe: see `error`.
  virtual loaded_recipe load(std::string_view reference, const recipe& caller) = 0;
};

/// A step instance that finished, as a session records it (docs/sessions.md,
/// "Where sessions live").
struct finished_instance {
  step_result result;
  /// What the instance wrote into its scope's context (outputs, output_exit_code, collect,
  /// a sub-recipe's delta): replaying it restores the context as it was.
  boost::json::object context_delta;
};

/// Where every finished instance is reported (the session journal hangs here), and the
/// lookup resume uses.
class run_journal {
public:
  virtual ~run_journal() = default;
  /// Called once per finished instance (top-level, iteration, loop body and sub-recipe
  /// steps), before its step_end event. Must not throw.
  virtual void record(const step_result& result, const boost::json::object& context_delta) noexcept = 0;
  /// An instance to take as finished instead of running it (resume), or null to run it. A
  /// journal may keep a sub-recipe step's `children` without their own children; the engine
  /// then finds each child's record to restore them.
  virtual const finished_instance* find(std::string_view instance_id) const noexcept = 0;
  /// One agent call's usage, the moment it is known, whatever then becomes of its instance
  /// (cancelled, failed, stopped by the budget): a budget holds across resumes
  /// (docs/sessions.md). Must not throw.
  virtual void record_usage(std::string_view /*instance_id*/, const agent_usage& /*call*/) noexcept {}
  /// What the session's earlier runs spent, summed per provider and model from every call
  /// record_usage kept; none when the journal keeps no calls (one written by an older arun):
  /// the replayed instances' usage is counted instead.
  virtual std::optional<std::vector<agent_usage>> recorded_usage() const { return std::nullopt; }
};

/// Keeps large step outputs out of memory: a finished instance's output longer than
/// `spill_threshold()` is handed to the host, which stores it (the session's `outputs/`), and
/// the engine keeps a reference in its place (<arun/stored_output.hpp>) — in the context, the
/// collected list of a foreach, the journal and the result. Templates and conditions that
/// read the value load it back, so recipes see the same values as without spilling. A store
/// reads only the files it wrote (or an earlier run of the same session did), by name.
class output_store {
public:
  virtual ~output_store() = default;
  /// Outputs whose text is longer than this many bytes are stored.
  virtual std::size_t spill_threshold() const noexcept = 0;
  /// Stores `text` (the trimmed output of `instance`); the file's name (a name of the
  /// store's own, no path), or nullopt when it cannot be stored (the output then stays in
  /// memory).
  virtual std::optional<std::string> store(std::string_view instance, std::string text) = 0;
  /// The text of the store's file `file`, which must be exactly `bytes` long; nullopt (with
  /// the reason in `why`) when it is not the store's, is not a regular file of that size, or
  /// cannot be read.
  virtual std::optional<std::string> load(std::string_view file, std::uint64_t bytes, std::string& why) = 0;
};

/// The tree an isolated leaf (`isolation:`) runs in.
struct workspace {
  std::string root;    ///< the worktree or copy (absolute): {{step.worktree}}
  std::string dir;     ///< where the leaf runs: the step's working directory inside `root`
  std::string branch;  ///< the worktree's branch: {{step.branch}}; empty for a copy
};

/// Makes and finishes the private trees of isolated leaves (git worktrees, copies). The engine
/// runs no git and copies no file: io does, under the session.
class workspace_provider {
public:
  virtual ~workspace_provider() = default;
  /// The instance's own tree for a leaf that would run in `working_dir` (as rendered: empty
  /// for the run's working directory, relative to it, or absolute). A tree left by an earlier
  /// attempt of the instance is replaced. The error text when it cannot be made.
  virtual boost::asio::awaitable<std::variant<workspace, std::string>> make(isolation_kind kind, std::string instance,
                                                                            std::string working_dir) = 0;
  /// The leaf ended. Succeeded: a worktree's changes are committed on its branch, and the
  /// tree is removed (unless kept by --keep-worktrees); failed: it stays for inspection.
  /// Problems are warnings, never a failure of the step.
  virtual boost::asio::awaitable<std::vector<std::string>> finish(isolation_kind kind, workspace w, std::string instance,
                                                                  bool succeeded) = 0;
};

enum class approval_verdict { approved, denied, suspend };

struct approval_request {
  std::string step;    ///< the gate's instance id
  std::string prompt;  ///< rendered
  std::optional<double> timeout;  ///< seconds; none: wait as long as it takes
  approval_decision default_decision = approval_decision::deny;  ///< applied when the timeout passes
};

struct approval_reply {
  approval_verdict verdict = approval_verdict::suspend;
  std::string message;  ///< the approver's message or the denial's reason
};

/// Decides approval gates (docs/sessions.md, "Approvals"). `suspend` ends the run with status
/// waiting_approval, to be resumed later; without a handler every gate suspends.
class approval_handler {
public:
  virtual ~approval_handler() = default;
  virtual boost::asio::awaitable<approval_reply> decide(approval_request request) = 0;
};

}  // namespace arun
