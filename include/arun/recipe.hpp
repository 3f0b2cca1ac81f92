#pragma once
/// The recipe model (docs/reference/recipe.md, "Top-level fields", "Steps"): what the loader
/// produces, the validator checks and the engine runs. Both dialects load into it: aliases are
/// resolved by the loader (`cwd` is `working_dir`, `nonfatal: true` is `on_error: continue`, ...).

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace arun {

/// Where something was written, for diagnostics. Lines and columns are 1-based; 0 = unknown.
struct source_location {
  std::string file;
  int line = 0;
  int column = 0;
};

using seconds_d = std::chrono::duration<double>;

/// bash / agent / recipe steps run a body; `loop` is a compound step whose body is `steps`;
/// `gate` is a pure approval gate (docs/reference/recipe.md, "Approval gates").
enum class step_type { bash, agent, recipe, loop, gate };

enum class on_error_policy { fail, continue_run, skip_remaining };

enum class backoff_kind { exponential, linear, constant };

/// One entry of `retry.on`: a failure kind or an exit code.
enum class retry_trigger { failure, timeout, rate_limit };
using retry_on_entry = std::variant<retry_trigger, int>;

struct retry_policy {
  int max_attempts = 3;  ///< total attempts, the first included
  backoff_kind backoff = backoff_kind::exponential;
  double initial_delay = 5.0;  ///< seconds
  double max_delay = 300.0;    ///< seconds
  double multiplier = 2.0;     ///< exponential growth per attempt (rate_limiting.backoff)
  double jitter = 0.0;         ///< 0 = none, 1 = full jitter, between: a fraction
  std::vector<retry_on_entry> on = {retry_trigger::failure, retry_trigger::timeout};
};

struct foreach_spec {
  boost::json::value items;        ///< a list, or a string template yielding one
  std::string as = "item";         ///< alias foreach_var
  int max_concurrent = 1;          ///< 0 = the global limit (`parallel: true`)
  std::optional<std::string> collect;
  int max_iterations = 10000;
  std::optional<int> checkpoint_iterations;
};

struct while_spec {
  std::string condition;
  int max_iterations = 100;  ///< max_while_iterations
  std::string break_when;    ///< empty: none
  boost::json::object update_context;
};

enum class approval_decision { deny, approve };

struct step_approval {
  bool required = false;
  std::string prompt;
  std::optional<double> timeout;  ///< seconds; none = wait forever
  approval_decision default_decision = approval_decision::deny;
  on_error_policy on_denied = on_error_policy::fail;
};

struct agent_call {
  std::string agent;   ///< `ns:name` / `ns:cat:name`; empty = the CLI's default agent
  std::string prompt;
  std::string mode, model, provider, model_role;
  boost::json::value provider_preferences;  ///< null when absent
  boost::json::value agent_config;          ///< null when absent
  bool auto_stage = false;
};

struct recipe_call {
  std::string recipe;            ///< a name (discovery) or a path relative to the caller
  boost::json::object context;   ///< overrides, rendered type-preserving
  std::optional<int> max_depth;  ///< recursion.max_depth for this call's subtree
  boost::json::value recovery_on_failure;  ///< null when absent
};

/// `resources:` on a step, a loop or recipe step (for the leaves inside it) or the recipe (for
/// all its steps): what a leaf asks of the machine that runs it. A cluster executor maps it to
/// the scheduler's options; the local executor takes `cpus` slots of --max-concurrent and
/// ignores the rest with a warning. Unset fields are inherited from the enclosing level.
struct step_resources {
  std::optional<int> cpus;
  std::string memory;                        ///< Slurm's --mem syntax: "4096" (MB), "4G", "512M"
  std::optional<std::chrono::seconds> time;  ///< the scheduler's own limit (a backstop)
  std::string partition;
  std::string gpus;                          ///< "2" or "a100:2"
  std::map<std::string, int, std::less<>> licenses;  ///< NAME: count
  std::vector<std::string> extra;            ///< further scheduler options, verbatim

  bool empty() const noexcept {
    return !cpus && memory.empty() && !time && partition.empty() && gpus.empty() && licenses.empty() &&
           extra.empty();
  }
};

/// `inner`'s fields, with the unset ones taken from `outer` (licenses and extra options are
/// merged, the inner count or option winning). Either may be null; null when both are.
std::shared_ptr<const step_resources> inherit_resources(const std::shared_ptr<const step_resources>& inner,
                                                        const std::shared_ptr<const step_resources>& outer);

/// A step's `output_schema:` (a JSON Schema, inline or from a local file), compiled by the
/// loader, which refuses a schema that is invalid or reaches outside its file. The engine
/// only asks it about values.
class json_schema_check {
public:
  virtual ~json_schema_check() = default;
  /// What is wrong with `value`, one message per violation, each naming where in the value
  /// (`/items/0/name: ...`); empty: the value conforms.
  virtual std::vector<std::string> violations(const boost::json::value& value) const = 0;
  /// "inline" or the schema file's path as written, for messages.
  virtual const std::string& origin() const noexcept = 0;
  /// The schema document (as JSON), for the prompt that asks an agent again.
  virtual const boost::json::value& document() const noexcept = 0;
};

/// Who may reuse a cached output (a step's `cache.scope`): any run (`global`, the default),
/// runs of the same recipe (`recipe`), or the same session (`session`: its resumes).
enum class cache_scope { global, recipe, session };

/// A step's `cache:` (bash and agent steps): an instance whose content key (what decides its
/// result) was stored by an earlier successful instance reuses that output without running.
struct step_cache {
  /// Extra values folded into the key (templates, rendered per instance): what the result
  /// depends on that the command or prompt does not show (a model's version, a date).
  std::vector<std::string> key;
  std::optional<std::chrono::seconds> max_age;  ///< an older entry is not reused; none: any age
  cache_scope scope = cache_scope::global;
  /// Globs (templates rendered; relative to the step's working directory) of the files
  /// whose contents count in the key.
  std::vector<std::string> files;
};

/// A step's `isolation:` (bash and agent steps): where each instance runs. `worktree`: a git
/// worktree of its own, on a branch of its own, made from the run's base commit; `copy`: a
/// copy of its working directory (trees that are not git checkouts).
enum class isolation_kind { none, worktree, copy };

/// Where one key's value is written, in the file of its step.
struct key_place {
  std::string key;
  int line = 0;
  int column = 0;
};

/// One declared step.
struct step {
  std::string id;
  step_type type = step_type::bash;
  source_location where;  ///< the step's mapping
  /// Where each key's value is, in `where.file` (the file is not repeated per key: a recipe
  /// of 20,000 steps would hold 80,000 copies of its path).
  std::vector<key_place> key_where;

  /// Whether `key` was written in the step's mapping.
  bool has(std::string_view key) const {
    for (const auto& entry : key_where)
      if (entry.key == key) return true;
    return false;
  }

  /// Where the value of `key` was written, else where the step starts.
  source_location at(std::string_view key) const {
    for (const auto& entry : key_where)
      if (entry.key == key) return {where.file, entry.line, entry.column};
    return where;
  }
  std::string name, description;  ///< documentation only
  /// A fingerprint of the step as written (its whole mapping), set by the loader: with the
  /// values its templates read it makes the content key a `resume --reload` compares.
  std::string definition_hash;

  // Common fields (docs/reference/recipe.md, "Fields of every step")
  std::string condition;                       ///< empty: always
  std::optional<std::string> output;           ///< context variable receiving the output
  std::optional<seconds_d> timeout;            ///< 0 = no limit
  std::optional<retry_policy> retry;
  on_error_policy on_error = on_error_policy::fail;
  std::vector<std::string> when_tags;
  std::optional<std::string> parallel_group;
  std::vector<std::string> depends_on;
  bool parse_json = false;
  bool parse_json_required = false;
  std::string working_dir;                               ///< relative to the run's working dir
  std::vector<std::pair<std::string, std::string>> env;  ///< in declaration order
  step_approval approval;
  /// `resources:`, with the enclosing loop steps' folded in by the loader (shared: a step
  /// stays small in a recipe of 20,000); null: none written.
  std::shared_ptr<const step_resources> resources;
  /// `executor: local` here or on an enclosing loop step: the leaves run on arun's machine
  /// whatever the run's executor.
  bool local_only = false;

  /// `output_schema:` (agent and bash steps): the output is parsed as JSON and must conform;
  /// null: none written.
  std::shared_ptr<const json_schema_check> output_schema;
  /// `schema_retries:`: how many times an agent whose reply does not conform is asked again
  /// with the validator's errors (0: fail at once).
  int schema_retries = 2;
  /// `limit_group:`: the per-provider limit (recipe `limits:`, `--limit`) this step's
  /// children count against; empty: an agent step's own CLI's, none for other steps.
  std::string limit_group;
  /// `cache:` (bash and agent steps); null: not cached.
  std::shared_ptr<const step_cache> cache;
  /// `isolation:` (bash and agent steps).
  isolation_kind isolation = isolation_kind::none;

  // bash (docs/reference/recipe.md, "Bash steps")
  std::string command;
  std::optional<std::string> output_exit_code;
  std::optional<std::size_t> max_env_value_bytes;

  // agent (docs/reference/recipe.md, "Agent steps") and recipe (docs/reference/recipe.md,
  // "Sub-recipe steps")
  agent_call agent;
  recipe_call call;

  // loops (docs/reference/recipe.md, "Loops"): a loop step repeats its own body, or `steps` when
  // type is loop
  std::optional<foreach_spec> foreach;
  std::optional<while_spec> loop_while;
  std::vector<step> steps;
};

enum class gate_timing { before, after, automatic };

struct stage_approval {
  bool required = false;
  std::string prompt;
  std::optional<double> timeout;
  approval_decision default_decision = approval_decision::deny;
  gate_timing when = gate_timing::automatic;  ///< automatic: the rule of docs/reference/recipe.md, "Stages"
};

struct stage {
  std::string name;
  std::string description;
  std::string condition;  ///< empty: always
  stage_approval approval;
  std::vector<step> steps;
  source_location where;
  source_location name_at;  ///< where the name is written
};

struct recursion_limits {
  int max_depth = 6;
  int max_total_steps = 10000;
};

struct recipe_hooks {
  std::string pre_step, post_step, on_error;  ///< shell commands; empty: none
};

/// `rate_limiting.backoff`: how agent rate limits are retried (docs/agents.md,
/// "Output, JSON and flaky agents"); unset fields keep the command line's values (defaults 5
/// retries, 60 s, ×2, 600 s cap).
struct rate_limit_backoff {
  std::optional<int> max_retries;
  std::optional<double> initial_delay, max_delay, multiplier;
};

struct rate_limits {
  std::optional<int> max_concurrent_llm;  ///< agent children running at once in the run
  std::optional<int> min_delay_ms;        ///< at least this long between two agent starts
  rate_limit_backoff backoff;
};

/// `budget:`: when the run's agent steps have spent this much, no new agent step starts.
struct run_budget {
  std::optional<double> cost_usd;        ///< US dollars, as the CLIs report or the price table gives
  std::optional<std::uint64_t> tokens;   ///< input + output tokens (cache reads and writes included)
  bool empty() const noexcept { return !cost_usd && !tokens; }
};

enum class execution_mode { sequential, dag };

enum class context_check { nonempty, path, git_repo, optional };

struct recipe {
  std::string name;
  std::string description;
  std::string version = "1.0.0";
  std::string author, created, updated;
  std::vector<std::string> tags;
  boost::json::object context;
  /// `env` for every step and hook of this recipe, before the step's own (which wins).
  std::vector<std::pair<std::string, std::string>> env;
  source_location env_where;
  /// `secrets`: context variables whose values come from arun's environment (an unset one is
  /// an error when the recipe runs) and are masked as `***` wherever arun shows or keeps text.
  std::vector<std::string> secrets;
  source_location secrets_where;
  std::vector<step> steps;    ///< exactly one of steps and stages is non-empty
  std::vector<stage> stages;
  recursion_limits recursion;
  bool recursion_set = false;  ///< `recursion` was written (extends inherits it otherwise)
  recipe_hooks hooks;
  bool hooks_set = false;
  std::string extends;
  source_location extends_where;
  std::vector<std::pair<std::string, context_check>> context_validation;
  rate_limits rate_limiting;
  /// `limits:`: children at once per provider (an agent CLI's provider name, or a step's
  /// `limit_group`); the command line's --limit wins per name.
  std::map<std::string, int, std::less<>> limits;
  source_location limits_where;
  run_budget budget;
  source_location budget_where;
  execution_mode execution = execution_mode::sequential;
  std::optional<seconds_d> default_step_timeout;
  std::optional<std::string> output;  ///< the variable reported as the final output
  /// `resources:` for every step of this recipe (a step's own fields win); null: none.
  std::shared_ptr<const step_resources> resources;
  boost::json::value inputs, parameters, metadata;  ///< documentation only
  bool lenient_templates = false;
  std::string source_path;
  source_location where;
};

/// "bash", "agent", "recipe", "loop", "gate".
std::string_view to_string(step_type t) noexcept;

/// Visits every step of `r`, stages and nested loop bodies included, in declaration order,
/// with the number of loops around it.
void for_each_step(const recipe& r, const std::function<void(const step&, int loop_depth)>& visit);

}  // namespace arun
