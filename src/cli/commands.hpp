#pragma once
// The subcommands of arun. Each adds its options to the parser, then runs.

#include "recipe_input.hpp"

#include <arun/recipe.hpp>

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace arun::io {
class session_store;
}

namespace arun::cli {

/// How agent steps run (docs/agents.md, "Choosing the CLI", "Output, JSON and flaky agents"): the
/// run options of agent_setup.cpp.
struct agent_settings {
  std::string cli;      ///< --agent-cli; empty: $ARUN_AGENT_CLI, else claude
  std::string command;  ///< --agent-command TEMPLATE
  bool auto_stage = false;
  int rate_limit_retries = -1;        ///< -1: the recipe's rate_limiting.backoff, else 5
  double rate_limit_delay = -1;       ///< seconds; -1: the recipe's, else 60
  double rate_limit_max_delay = -1;   ///< seconds; -1: the recipe's, else 600
  std::vector<std::string> rate_limit_patterns;
  std::string rate_limit_fallback_model;  ///< --rate-limit-fallback-model
  std::vector<std::string> limits;        ///< --limit NAME=N, as given (checked by the option)
  double max_cost = -1;                   ///< --max-cost USD; -1: the recipe's budget, else none
  long long max_tokens = -1;              ///< --max-tokens N; -1: the recipe's budget, else none
  std::string prices;                     ///< --prices FILE; empty: none
};

struct run_settings {
  recipe_options recipe;  ///< recipe.working_dir is -C
  /// The command line as given (argv), for the session's record of its runs (state.json's
  /// `runs`), masked there: a `--secret KEY=VALUE` never reaches it.
  std::vector<std::string> command_line;
  std::string output_format = "text";
  double kill_grace = 5.0;
  std::size_t max_output = 10u << 20;
  std::size_t spill_outputs_over = 96u << 10;  ///< 0: every output stays in memory
  bool quiet = false;
  bool verbose = false;  ///< -v: every instance's lines, loop iterations included
  int max_concurrent = 8;
  std::string executor;    ///< --executor: where leaf steps run (local, slurm); empty: local, or a resumed run's
  std::string shared_dir;          ///< --shared-dir: the slurm executor's job files; empty: the session dir
  std::string pending_timeout;     ///< --pending-timeout: a Slurm job waiting longer fails; empty: never
  bool dry_run = false;
  bool keep_going = false;  ///< -k: run what does not depend on a failure, then fail (run_options::keep_going)
  bool reload = false;      ///< resume --reload: the edited recipe files, recorded work reused by content key
  std::string log_level;    ///< --log-level; empty: $ARUN_LOG, else info
  int retention_days = 30;        ///< sessions older are pruned when a run starts (0: never)
  int retention_sessions = 200;   ///< sessions beyond the newest this many are pruned (0: no limit)
  bool log_stderr = false;  ///< --log-stderr: arun's log on stderr too
  std::vector<std::string> include_tags, exclude_tags;
  std::string events_file;
  std::string audit_dir;
  std::string progress = "auto";
  double heartbeat = 60.0;
  agent_settings agents;
  std::string session_dir;  ///< --session-dir; empty: session_root's default
  bool yes = false;         ///< --yes: approve every gate
  bool no_input = false;    ///< --no-input: never ask on the terminal
  bool no_cache = false;    ///< --no-cache: steps with `cache:` run, and nothing is stored
  std::vector<std::string> refresh_cache;  ///< --refresh-cache: step ids or instance globs run despite a hit
  std::string cache_dir;    ///< --cache-dir; empty: $ARUN_CACHE_DIR, $XDG_CACHE_HOME/arun, ~/.cache/arun
  std::uint64_t cache_max_bytes = std::uint64_t{1} << 30;  ///< --cache-max-size
  bool keep_worktrees = false;  ///< --keep-worktrees: isolated steps' trees stay after a success too
};

int run_command(const run_settings& s);
/// Runs a loaded recipe on one io_context with the real runner, recording into `store` (null:
/// no session, only for --dry-run); prints the result; returns the exit code of
/// docs/reference/exit-codes.md.
/// `input.value` is the recipe; its `sub_recipes` serve the checks before the first step.
int execute_run(const run_settings& s, const recipe_input& input, const std::string& base_dir,
                const std::string& session_id, io::session_store* store);
/// How a run was invoked, kept in state.json so `resume` loads the recipe the same way.
boost::json::object invocation_to_json(const recipe_options& o, const std::string& base_dir);
/// The cache settings of a run (--cache-dir as an absolute path, --no-cache, --cache-max-size,
/// --keep-worktrees), kept in state.json so its resumes use them again.
boost::json::object cache_invocation(const run_settings& s);

struct resume_settings {
  std::string session_id;
  bool retry_failed = false;
  bool reload = false;            ///< --reload: run the recipe files as they are now
  std::vector<std::string> sets;  ///< --set: added to the original ones
  run_settings run;               ///< how to execute (its recipe options come from the session)
  std::set<std::string> given;    ///< the long names of the options given on the command line
};
int resume_command(const resume_settings& r);

struct sessions_settings {
  std::string session_dir;
  std::string session_id;   ///< show
  double older_than_days = -1;  ///< clean
  bool dry_run = false;         ///< clean --dry-run: say what would go
  std::string output_format = "text";
};
/// `arun cache list|clear`.
struct cache_settings {
  std::string cache_dir;               ///< --cache-dir; empty: the default
  std::string output_format = "text";  ///< list
  std::vector<std::string> steps;      ///< --step: instance globs of the instances that stored entries
  std::string recipe;                  ///< --recipe: entries stored by this recipe
  std::string older_than;              ///< clear --older-than AGE (unused for that long)
  bool dry_run = false;                ///< clear --dry-run
};
int cache_list(const cache_settings& s);
int cache_clear(const cache_settings& s);

/// `arun approve|deny ID`: which gates, and what to say.
struct decision_settings {
  bool approve = true;
  std::string message;               ///< --message / --reason
  std::vector<std::string> gates;    ///< --step: instance ids or globs; none: the only gate waiting
  bool all = false;                  ///< --all: every gate waiting
};
/// `arun approve ID [--step INSTANCE]... [--all] [--message M]` / `arun deny ID … [--reason R]`.
int decide_command(const sessions_settings& s, const decision_settings& d);
int sessions_list_command(const sessions_settings& s);
int sessions_show_command(const sessions_settings& s);
int sessions_clean_command(const sessions_settings& s);

/// Which sessions housekeeping removes: older than `older_than_days` (none: no age limit), or
/// beyond the newest `keep_newest` (none: no count limit); never one waiting for approval or
/// held by a running arun.
struct prune_rule {
  std::optional<double> older_than_days;  ///< none: no age limit
  std::optional<std::size_t> keep_newest;
  bool dry_run = false;
  /// Leaves sessions holding kept worktrees or copies (the automatic prune of every run).
  bool spare_kept_trees = false;
};
struct prune_report {
  std::vector<std::string> removed;  ///< (or, dry run, that would be)
  std::size_t kept = 0;              ///< matched but kept: waiting, live or spared
  std::vector<std::string> spared;   ///< matched but kept for their kept trees
};
/// `verbose`: says on stderr which matching sessions are kept and why.
prune_report prune_sessions(const std::string& root, const prune_rule& rule, bool verbose);

/// `arun config [--output-format json]`: every setting, its value and where it came from.
int config_command(const std::string& format);
/// `arun config trust [FILE]` (`trust`) and `arun config untrust [FILE]`: records (or drops)
/// the user's trust of a project file's content (default ./.arun.yaml).
int config_trust_command(const std::string& file, bool trust);

/// `arun report ID [-o FILE] [--output-format html|json]` (docs/report-and-dashboard.md).
struct report_settings {
  std::string session_dir;
  std::string session_id;
  std::string output;                  ///< -o: the file; "-": stdout; empty: the format's default
  std::string output_format = "html";  ///< html (a file) or json (stdout)
};
int report_command(const report_settings& s);

/// `arun logs ID [INSTANCE-GLOB] [--stream out|err] [-f]`.
struct logs_settings {
  std::string session_dir;
  std::string session_id;
  std::string instance_glob;  ///< empty: every instance
  std::string stream;         ///< "out", "err", or empty: both
  bool follow = false;
  bool transcript = false;    ///< --transcript: what each agent instance was asked and answered
  bool failed = false;        ///< --failed: only the instances the journal has as failed
};
int logs_command(const logs_settings& s);
/// The instances of the session in the directory `session` that have a log, in the order its
/// recipe runs them (what `arun logs ID <TAB>` offers).
std::vector<std::string> logged_instances(const std::string& session);

// `format` is --output-format: "text" or "json" (one document on stdout).
int validate_command(const recipe_options& o, const std::string& format, const agent_settings& agents);
int explain_command(const recipe_options& o, const std::string& format);
/// `arun graph RECIPE [--format dot|mermaid] [--expand]`.
int graph_command(const recipe_options& o, const std::string& format, bool expand);
int list_command(const recipe_options& o, const std::string& format);
/// `arun agents list`: one entry per agent file (reference, path, source), exit 0.
int agents_list_command(const recipe_options& o, const std::string& format);

/// Parses argv and runs the chosen command; returns the process exit code.
int main(int argc, char** argv);

/// `arun init [NAME] [--force]`: a commented starter recipe NAME.yaml (default recipe.yaml).
struct init_settings {
  std::string name;
  bool force = false;
};
int init_command(const init_settings& s);

/// `arun completions bash|zsh|fish`: a completion script generated from `app`'s model.
int completions_command(CLI::App& app, const std::string& shell);
/// `arun __complete -- WORDS…` (the words after `arun` up to the cursor, the last one being
/// typed): what may come next, one "value<TAB>description" per line, then `:files`, `:dirs`
/// or `:yaml` when the shell should add its own file names. `arun __complete --commands`:
/// every command path with its description (the man pages are made from it).
int complete_command(CLI::App& app, const std::vector<std::string>& args);

}  // namespace arun::cli
