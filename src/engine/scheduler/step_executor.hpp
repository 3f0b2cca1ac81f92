#pragma once
// Runs the steps of one recipe invocation (the top-level recipe, or a sub-recipe call):
// sequences with parallel groups, DAG order, loops, leaves with retry, sub-recipes, gates and
// hooks. Every path returns an instance_outcome value; exceptions are arun faults only.

#include "scheduler/run_state.hpp"
#include "scheduler/upstream_failures.hpp"
#include "shell/context_export.hpp"
#include "template/render.hpp"

#include <arun/recipe.hpp>
#include <arun/results.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <optional>
#include <set>
#include <unordered_map>
#include <type_traits>
#include <variant>
#include <stop_token>
#include <string>
#include <vector>

namespace arun::engine {

/// One recipe invocation: what its steps render against besides the context.
struct recipe_frame {
  const recipe& r;
  /// declared names (docs/reference/templates.md, "Undefined references"), for the
  /// undefined-reference rule
  name_set declared;
  undefined_mode mode = undefined_mode::normal;
  boost::json::object builtins;  ///< recipe.*, session.* (step.* and stage.* are added per step)
  std::string prefix;        ///< instance id prefix: "" at the top, "call/" inside sub-recipe step `call`
  int depth = 0;             ///< 0 at the top
  int max_depth = 6;         ///< for this subtree (recursion: docs/reference/recipe.md, "Sub-recipe steps")
  std::vector<std::string> chain;  ///< recipe names from the top, for recursion errors
  /// {{step.index}}: each step's position in the list that declares it (filled on first use).
  std::unordered_map<const step*, std::size_t> step_index = {};
  /// What this recipe's leaves inherit: its own `resources` over the calling steps', and an
  /// `executor: local` of a calling step.
  leaf_placement inherited = {};
  /// A step's resources with `inherited` folded in (filled on first use).
  std::unordered_map<const step*, std::shared_ptr<const step_resources>> resources = {};
};

/// The context export (docs/reference/templates.md, "The context in the environment") of one
/// context object, built when a bash step first needs it and dropped whenever the context may
/// change: steps that run against the same context (the iterations of a foreach, the members of a
/// parallel group) share one.
class context_export_cache {
public:
  void invalidate() noexcept { table_.reset(); }
  const context_export_table& table(const boost::json::object& context) {
    if (!table_) table_ = std::make_unique<context_export_table>(context);
    return *table_;
  }

private:
  std::unique_ptr<context_export_table> table_;
};

/// Where a step reads and writes variables. Writes go to `locals` when set (a loop iteration
/// keeps its body's outputs to itself), else to `context`; every write goes through target(),
/// which invalidates the context's export cache.
struct scope {
  boost::json::object* context = nullptr;
  boost::json::object* locals = nullptr;
  context_export_cache* exports = nullptr;  ///< `context`'s; none: every step builds its own
  /// Set inside a foreach handed to the runner whole: its one leaf holds no slot itself. A
  /// plain pointer to the loop's: g++ 12 destroys a coroutine's by-value parameter of a
  /// type with a destructor twice in places, so scope stays trivially copyable.
  const std::shared_ptr<const fan_out_share>* fan_out = nullptr;
  /// --keep-going: what failed in the steps around this one, which a sub-recipe or loop body
  /// run here must not read either (upstream_failures.hpp).
  const upstream_failures* upstream = nullptr;
  boost::json::object& target() const {
    if (locals) return *locals;
    if (exports) exports->invalidate();
    return *context;
  }
  const context_export_table* export_table() const { return exports ? &exports->table(*context) : nullptr; }
};
static_assert(std::is_trivially_destructible_v<scope>, "scope is a by-value coroutine parameter (g++ 12)");

/// What happens after an instance. `kept_going`: it failed under --keep-going; only
/// failure_flow() says it, and finish_instance() turns it into `next` with the outcome's
/// `kept_going` set, so that what holds outcomes sees a failure the rest goes on past.
enum class flow { next, fatal, skip_remaining, cancelled, suspend, kept_going };

struct instance_outcome {
  step_result result;
  boost::json::object updates;  ///< variables to set in the caller's scope (docs/reference/recipe.md, "Outputs")
  flow next = flow::next;
  std::vector<pending_approval> waiting;  ///< flow::suspend: every gate waiting below this instance
  /// an agent failed with a rate-limit message (docs/agents.md, "Output, JSON and flaky agents")
  bool rate_limited = false;
  /// It failed, or something inside it did, under --keep-going: the rest goes on, what
  /// depends on it does not run, and its caller (and so the run) ends failed.
  bool kept_going = false;
  /// kept_going: names it would have written besides its step's own outputs (a sub-recipe
  /// call's: what its steps output), which later steps must not read.
  std::set<std::string, std::less<>> unwritten;
};

/// What a leaf child runs.
using leaf_invocation = std::variant<bash_invocation, agent_invocation>;

struct sequence_outcome {
  std::vector<step_result> results;  ///< one per declared step, in order
  flow end = flow::next;             ///< fatal / skip_remaining / cancelled / suspend, or next
  std::vector<pending_approval> waiting;
  boost::json::value last_output;    ///< the last completed step's output
  std::string error;                 ///< why it ended when no step says so (a stage condition)
  bool kept_going = false;           ///< a step failed under --keep-going: the list ends failed
};

class step_executor {
public:
  step_executor(run_state& rs, recipe_frame& frame) : rs_(rs), frame_(frame) {}

  /// Runs `steps` in order (parallel groups together), or as a DAG when `dag`, writing their
  /// updates into `sc` as they finish. `prefix` starts every instance id.
  /// `upstream`: what failed under --keep-going before these steps, in the same recipe (stages
  /// share it); none for a loop body's iteration, whose steps depend only on each other.
  boost::asio::awaitable<sequence_outcome> run_steps(const std::vector<step>& steps, scope sc,
                                                     std::string prefix, std::stop_token stop, bool dag = false,
                                                     upstream_failures* upstream = nullptr);

  /// One step instance: journal lookup, tags, condition, hooks, the body, events, journal.
  /// An `iteration` of a loop step runs the loop's body; its tags and condition were checked
  /// for the loop as a whole.
  boost::asio::awaitable<instance_outcome> run_instance(const step& s, scope sc, std::string instance,
                                                        std::stop_token stop, bool iteration = false);

  /// The recipe's steps, or its stages in order (docs/reference/recipe.md, "Stages"), as run_steps
  /// does.
  boost::asio::awaitable<sequence_outcome> run_recipe(scope sc, std::string prefix, std::stop_token stop);

private:
  // sequence.cpp
  boost::asio::awaitable<sequence_outcome> run_sequence(const std::vector<step>& steps, scope sc,
                                                        const std::string& prefix, std::stop_token stop,
                                                        upstream_failures& upstream);
  /// `s` depends on a step that failed under --keep-going: not run, reported, and noted so
  /// that what depends on `s` is not run either.
  instance_outcome hold_back(const step& s, const std::string& instance, const upstream_failures::hold& cause,
                             upstream_failures& upstream);
  boost::asio::awaitable<void> run_member(const step& s, scope sc, std::string instance, std::stop_source& group,
                                         instance_outcome& slot);
  struct group_run;
  boost::asio::awaitable<void> group_worker(scope sc, group_run& g);
  /// A pooled group member the group's stop reached before a worker took it.
  instance_outcome cancel_unstarted_member(const step& s, scope sc, const std::string& instance);
  boost::asio::awaitable<std::vector<instance_outcome>> run_group(const std::vector<const step*>& members, scope sc,
                                                                  const std::string& prefix, std::stop_token stop);
  // dag.cpp
  boost::asio::awaitable<sequence_outcome> run_dag(const std::vector<step>& steps, scope sc,
                                                   const std::string& prefix, std::stop_token stop,
                                                   upstream_failures& upstream);
  struct dag_run;
  boost::asio::awaitable<void> run_dag_node(const step& s, std::size_t index, const std::vector<std::size_t>& deps,
                                            scope sc, std::string instance, dag_run& dag);
  // instance.cpp
  boost::asio::awaitable<instance_outcome> run_body(const step& s, scope sc, const std::string& instance,
                                                    std::stop_token stop, bool as_iteration);
  /// The step's own work (a loop, a child, a sub-recipe, a pure gate), its approval passed;
  /// an `iteration` of a looping leaf runs the leaf once.
  boost::asio::awaitable<instance_outcome> run_body_after_gate(const step& s, scope sc, const std::string& instance,
                                                               std::stop_token stop, bool iteration = false);
  boost::asio::awaitable<void> run_hook(const std::string& command, const step& s, const std::string& instance,
                                        const step_result* finished, scope sc);
  // leaf.cpp
  boost::asio::awaitable<instance_outcome> run_with_retry(const step& s, scope sc, const std::string& instance,
                                                          std::stop_token stop);
  boost::asio::awaitable<instance_outcome> run_bash(const step& s, scope sc, const std::string& instance, int attempt,
                                                    std::stop_token stop);
  /// One attempt of a step: its child (or sub-recipe call), then for agent steps the
  /// parse_json reminder call and auto_stage. A `model` (the rate-limit fallback) replaces
  /// an agent step's own for this attempt.
  boost::asio::awaitable<instance_outcome> run_attempt(const step& s, scope sc, const std::string& instance,
                                                       int attempt, std::stop_token stop, const std::string& model = {});
  /// One child under the concurrency limit (agents also under rate_limiting): step_start when
  /// it gets its slot, output events, heartbeats; stopping `stop` terminates it.
  /// `weight`: the slots of the run's limit it holds (resources.cpus of a leaf run here).
  /// A reached budget refuses every agent and bash child (a retry, a schema correction
  /// included); hooks still run.
  /// `group`: the limit group whose slot it takes first (none: empty), held in `lease` until
  /// the caller has judged the outcome (a rate limit, a clean completion).
  boost::asio::awaitable<leaf_outcome> run_child(leaf_invocation inv, const std::string& instance,
                                                 std::string_view type, int attempt, std::stop_token stop,
                                                 int weight = 1, std::string_view group = {},
                                                 group_lease* lease = nullptr);
  /// Where a leaf of `s` runs and what it asks for: its own fields over the frame's.
  leaf_placement placement_of(const step& s);
  /// The slots a leaf of `s` holds: its cpus when it runs on this machine, else 1.
  int slot_weight(const step& s, const std::string& instance, const leaf_placement& p);
  // agent_leaf.cpp
  boost::asio::awaitable<instance_outcome> run_agent(const step& s, scope sc, const std::string& instance,
                                                     int attempt, std::stop_token stop, const std::string& model);
  /// Waits for rate_limiting's agent slot (max_concurrent_llm); false when stopped first.
  boost::asio::awaitable<bool> await_agent_slot(std::optional<slot_lease>& lease, std::stop_token stop);
  /// Waits until min_delay_ms has passed since the last agent start and claims the start;
  /// false when stopped first.
  boost::asio::awaitable<bool> await_agent_spacing(std::stop_token stop);
  /// `git add -A` in the agent step's directory (auto_stage: docs/agents.md,
  /// "auto_stage and recovery_on_failure"); failures are warnings.
  boost::asio::awaitable<void> stage_changes(const step& s, const std::string& instance, const std::string& dir);
  /// recovery_on_failure (docs/agents.md, "auto_stage and recovery_on_failure"): one agent call
  /// after a sub-recipe step failed for good.
  boost::asio::awaitable<instance_outcome> recover(const step& s, scope sc, const std::string& instance,
                                                   instance_outcome failed, std::stop_token stop);
  // deadline.cpp
  enum class container_kind { recipe_call, foreach, loop_while };
  /// A sub-recipe call or a loop under the step's own `timeout`: when it passes, everything
  /// the container runs is stopped and the step fails with timed_out.
  boost::asio::awaitable<instance_outcome> run_with_deadline(container_kind kind, const step& s, scope sc,
                                                             const std::string& instance, int attempt,
                                                             std::stop_token stop);
  boost::asio::awaitable<instance_outcome> run_container(container_kind kind, const step& s, scope sc,
                                                         const std::string& instance, int attempt,
                                                         std::stop_token stop);
  // loops.cpp
  struct foreach_run;
  /// The share of a foreach of `n` items whose one leaf the runner takes whole (null: the
  /// items start one per free slot as usual).
  std::shared_ptr<fan_out_share> hand_off(const step& s, std::size_t n, int limit);
  boost::asio::awaitable<void> foreach_worker(const step& s, scope sc, const std::string& instance, foreach_run& loop);
  boost::asio::awaitable<instance_outcome> run_foreach(const step& s, scope sc, const std::string& instance,
                                                       std::stop_token stop);
  boost::asio::awaitable<instance_outcome> run_while(const step& s, scope sc, const std::string& instance,
                                                     std::stop_token stop);
  boost::asio::awaitable<instance_outcome> run_iteration(const step& s, scope sc, const std::string& instance,
                                                         std::stop_token stop);
  // sub_recipe.cpp
  boost::asio::awaitable<instance_outcome> run_recipe_call(const step& s, scope sc, const std::string& instance,
                                                           int attempt, std::stop_token stop);
  // gate.cpp
  boost::asio::awaitable<instance_outcome> run_gate(const step& s, scope sc, const std::string& instance,
                                                    std::stop_token stop);
  /// A step with `requires_approval` and a body: the gate, then (approved) the body.
  boost::asio::awaitable<instance_outcome> run_approved(const step& s, scope sc, const std::string& instance,
                                                        std::stop_token stop);
  /// A stage's approval (docs/reference/recipe.md, "Stages"): nothing when approved, else how the
  /// stages end.
  boost::asio::awaitable<std::optional<sequence_outcome>> run_stage_gate(const stage& st, scope sc,
                                                                         const std::string& prefix, std::stop_token stop);
  /// approval_requested, then the host's decision; none when the run was stopped meanwhile.
  boost::asio::awaitable<std::optional<approval_reply>> decide_approval(approval_request request, std::string_view type,
                                                                        std::stop_token stop);

  /// Journal record and step_end event of a finished instance.
  instance_outcome finish_instance(const step& s, const std::string& instance, bool iteration, instance_outcome&& o);
  /// The outcome of an instance that ends before it starts (recorded by a resumed session,
  /// stopped, filtered by tags, its condition false or failing, over the step budget).
  std::optional<instance_outcome> settle_before_start(const step& s, scope sc, const std::string& instance,
                                                      const std::stop_token& stop, bool iteration,
                                                      const std::string& key);
  /// The content key of a leaf instance of `s` in `sc` (step_result::content_key): the step's
  /// definition, the recipe's env, the loop locals, and the value of every name its
  /// templates and condition read (built-ins left out: they change from run to run).
  std::string content_key(const step& s, scope sc) const;
  // isolation.cpp
  struct isolated {
    std::optional<workspace> ws;  ///< none: the step is not isolated
    std::string error;            ///< set: its tree could not be made; the instance fails before it starts
  };
  /// The instance's own tree when `s` has `isolation:`; step.worktree and step.branch join
  /// `builtins` for its templates.
  boost::asio::awaitable<isolated> isolate(const step& s, scope sc, const std::string& instance,
                                           boost::json::object& builtins);
  /// After the instance's last call: the host commits and removes its tree (a success) or
  /// keeps it (a failure, named in the error); the result names the tree and branch.
  boost::asio::awaitable<void> release(const step& s, const std::string& instance, const workspace& ws,
                                       instance_outcome& o);
  // cache_leaf.cpp
  /// A cached step's key for one instance and, unless --refresh-cache names it, the output
  /// stored under it. `key` empty: the instance is not cached (no `cache:`, --no-cache, or
  /// its key could not be made: then `warnings` say why and it simply runs).
  struct cache_probe {
    std::string key;
    std::optional<cached_output> hit;
    std::vector<std::string> warnings;
  };
  cache_probe probe_cache(const step& s, scope sc, const std::string& instance, const bash_invocation& inv);
  cache_probe probe_cache(const step& s, scope sc, const std::string& instance, const agent_invocation& inv);
  /// The part of a key both kinds share (the runner's identity, `cache.key`, `cache.files`,
  /// the scope), the hash, and the lookup.
  cache_probe finish_probe(const step& s, scope sc, const std::string& instance, std::string material,
                           const leaf_identity& identity);
  /// The outcome of a hit: completed and `cached`, the output derived from the stored text
  /// as if the child had just printed it; no child, no attempt.
  /// None when the step, judging the stored output now (parse_json, output_schema), would not
  /// complete with it: then the hit is no hit and the step runs.
  std::optional<instance_outcome> cached_outcome(const step& s, const std::string& instance, cached_output&& hit);
  /// Keeps a completed instance's stdout under its key; a failure is a warning. An output
  /// holding a secret's value is not kept.
  void remember_output(const step& s, scope sc, const std::string& instance, const cache_probe& probe,
                       const instance_outcome& o, const std::string& stdout_text, std::chrono::nanoseconds took);
  /// Whether `text` holds the value of a secret (--secret, --secret-env, a recipe's `secrets:`).
  bool holds_secret(scope sc, std::string_view text) const;
  /// A recorded instance, as the journal has it: step_end, and the outcome to go on with.
  instance_outcome replay(const step& s, const std::string& instance, bool iteration, const finished_instance& done);
  /// step_end (and the journal, when skipped) for a step the sequence never started.
  void report_unstarted(const step& s, const step_result& r);
  /// Warning events for an instance of `s`, typed like its other events.
  void warn(const step& s, const std::string& instance, const std::vector<std::string>& messages);

  /// The scope templates of step `s` render in (built-ins with step.* for this instance).
  boost::json::object step_builtins(const step& s, const std::string& instance) const;
  render_scope view(const scope& sc, const boost::json::object& builtins) const {
    return render_scope{*sc.context, &frame_.declared, frame_.mode, &builtins, sc.locals, rs_.options.outputs};
  }

  run_state& rs_;
  recipe_frame& frame_;
};

/// docs/reference/recipe.md, "Outputs": what a finished child leaves in the result and the context.
/// A leaf's outcome as the instance's result; an output longer than the threshold of the
/// run's `outputs` store is stored there and referenced (spilled_output.hpp); a failure flows
/// as failure_flow() says under the run's --keep-going.
/// `calls`: the replies an agent step got in this attempt (its output is the last one's).
instance_outcome to_outcome(const step& s, const std::string& instance, leaf_outcome&& o, const run_options& run,
                            int calls = 1);
/// The step's `timeout`, else the recipe's default_step_timeout; none for 0
/// (docs/reference/recipe.md, "Timeouts").
std::optional<std::chrono::nanoseconds> effective_timeout(const step& s, const recipe& r);

/// docs/reference/recipe.md, "Stages": whether a stage's gate comes after its steps (`when: after`,
/// or a prompt that needs outputs only the stage's own steps produce) instead of before them.
bool stage_gate_after(const stage& st, const recipe& r);

/// "bash", "agent", "recipe", "loop", "gate": the `type` of events.
std::string_view type_name(const step& s);
/// The `type` of an instance's events: an iteration of a looping leaf is that leaf's type; an
/// iteration of a loop with a `steps:` body is "iteration".
std::string_view instance_type(const step& s, bool iteration);
/// A loop step (foreach or while), whose instances are iterations.
bool is_loop(const step& s);
/// The status a failed instance ends its caller with, by `on_error` (docs/reference/recipe.md);
/// under --keep-going (`keep_going`) a step with no on_error of its own flows `kept_going`.
flow failure_flow(const step& s, bool keep_going);
/// Names a failed foreach iteration's item in its error: "step 'shard[15]': exit code 1" becomes
/// "step 'shard[15]' (item: tests/test_x.py): exit code 1" (item_label: shortened, control
/// characters escaped). An error that does not start with the instance's name is left alone.
void name_item(std::string& error, const std::string& instance, const boost::json::value& item);
/// A failed instance that never started anything: `step 'ID': WHY`, flowing as `on_error` says.
instance_outcome failed_before_start(const step& s, const std::string& instance, const std::string& why,
                                     bool keep_going);
/// Which of two ways to end wins: a fatal failure over a cancellation over a gate waiting
/// (a run that failed or was stopped says so, not "approve to go on") over skip_remaining.
inline flow worse(flow a, flow b) {
  auto rank = [](flow f) {
    switch (f) {
      case flow::next: return 0;
      case flow::skip_remaining: return 1;
      case flow::suspend: return 2;
      case flow::cancelled: return 3;
      case flow::fatal: return 4;
      case flow::kept_going: return 0;  // never held by a caller: finish_instance() turned it into next
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

/// Adds the gates `more` waits at to `into` (a fan-out collects every waiting gate).
inline void append_waiting(std::vector<pending_approval>& into, std::vector<pending_approval>& more) {
  for (auto& w : more) into.push_back(std::move(w));
  more.clear();
}

/// What the instances of `results` spent together (none: none reported usage).
std::optional<agent_usage> usage_of(const std::vector<step_result>& results);

/// A result for an instance that never started.
step_result unstarted(std::string instance, step_status status, std::string error = {});

}  // namespace arun::engine
