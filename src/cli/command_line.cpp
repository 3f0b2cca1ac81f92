// Every option of the commands, in one place: the only translation unit besides
// main_command.cpp, completions.cpp and usage_hints.cpp that compiles CLI11 (a header-only
// library that costs ~15 s of compile time per file that includes it).
#include "command_line.hpp"

#include "agent_setup.hpp"
#include "recipe/duration.hpp"

#include <fmt/format.h>

#include <string>

namespace arun::cli {
namespace {

// A duration option's text as its number of seconds, before CLI11 reads the number: `5m` is
// 300, as in a recipe (docs/running.md, "Durations").
CLI::Validator seconds_of_duration() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto seconds = io::parse_duration(text);
        if (!seconds) return "'" + text + "' is not " + std::string(io::duration_forms);
        text = fmt::format("{}", *seconds);
        return {};
      },
      "", "DURATION");
}

}  // namespace

void add_recipe_options(CLI::App& app, recipe_options& o) {
  app.add_option("recipe", o.recipe, "Recipe file, or a recipe name found by discovery");
  app.add_option("-R,--recipe-dir", o.recipe_dirs, "Directory searched first for recipes by name (repeatable)")
      ->allow_extra_args(false)
      ->type_name("DIR")
      ->group("Recipe");
  app.add_option("-C,--working-dir", o.working_dir,
                 "Directory the steps run in and discovery starts from (default: the current one)")
      ->type_name("DIR")
      ->group("Recipe");
  app.add_option("--set", o.sets, "Set a context variable: KEY=VALUE (JSON-typed; a.b=1 sets a key of a)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false)  // `--set k=v recipe.yaml`: the recipe is not a second value
      ->group("Recipe");
  app.add_flag("--strict", o.strict, "Warnings are errors (unknown keys, names nothing uses); references without a value at run time fail the step")
      ->group("Recipe");
  app.add_flag("--lenient", o.lenient, "Undefined references render empty with a warning")
      ->group("Recipe");
  app.add_option("--max-recipe-bytes", o.max_recipe_bytes, "Largest recipe file accepted (default 1 MiB)")
      ->check(quiet(CLI::PositiveNumber))
      ->type_name("BYTES")
      ->group("Recipe");
  app.add_option("--color", o.color, "Colour on stderr: auto (a terminal, unless NO_COLOR is set), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN")
      ->group("Output");
}

void add_secret_options(CLI::App& app, recipe_options& o) {
  app.add_option("--secret", o.secrets,
                 "A context variable that is a secret: KEY reads its value from the terminal (not echoed) or one "
                 "line of stdin; KEY=VALUE takes it from the command line, where other processes can see it. Steps "
                 "see it; arun prints and keeps *** in its place, and a resume needs it again")
      ->type_name("KEY[=VALUE]")
      ->allow_extra_args(false)
      ->group("Recipe");
  app.add_option("--secret-file", o.secret_files,
                 "A secret context variable KEY whose value is the contents of the file PATH, one trailing newline "
                 "removed (read again on resume)")
      ->type_name("KEY=PATH")
      ->allow_extra_args(false)
      ->group("Recipe");
  app.add_option("--secret-env", o.secret_envs,
                 "A secret context variable KEY whose value is $KEY from arun's environment (read again on resume)")
      ->type_name("KEY")
      ->allow_extra_args(false)
      ->group("Recipe");
}

void add_agent_options(CLI::App& app, recipe_options& o) {
  o.check_agents = true;
  app.add_option("--agent-dir", o.agent_dirs, "Directory searched first for agent files (repeatable)")
      ->allow_extra_args(false)
      ->type_name("DIR")
      ->group("Agents and rate limits");
  app.add_flag("--allow-missing-agents", o.allow_missing_agents,
               "An agent reference that does not resolve is a warning instead of an error")
      ->group("Agents and rate limits");
}

void add_agent_cli_options(CLI::App& app, agent_settings& a) {
  auto* cli = app.add_option("--agent-cli", a.cli,
                             "Agent CLI for agent steps: claude (default), copilot, codex, amplihack[:claude|copilot|codex] "
                             "or fake (default from $ARUN_AGENT_CLI)")
                  ->type_name("NAME")
      ->group("Agents and rate limits");
  app.add_option("--agent-command", a.command,
                 "Agent command template instead of a preset, e.g. 'mycli --model {model} --file {prompt_file}' "
                 "(placeholders {prompt_file} {system_prompt_file} {model} {working_dir}; the prompt is also on stdin)")
      ->type_name("TEMPLATE")
      ->excludes(cli)
      ->group("Agents and rate limits");
}

void add_agent_run_options(CLI::App& app, agent_settings& a) {
  add_agent_cli_options(app, a);
  app.add_flag("--auto-stage", a.auto_stage, "Run 'git add -A' in the step's directory after every agent step")
      ->group("Agents and rate limits");
  app.add_option("--rate-limit-retries", a.rate_limit_retries,
                 "Retries of an agent step that hit a rate limit (default: rate_limiting.backoff, else 5)")
      ->check(quiet(CLI::Range(0, 1000)))
      ->type_name("N")
      ->group("Agents and rate limits");
  app.add_option("--rate-limit-delay", a.rate_limit_delay,
                 "Delay before the first rate-limit retry, doubling after each (seconds, or 90s, 5m; default 60)")
      ->transform(seconds_of_duration())
      ->check(quiet(CLI::Range(0.0, 86400.0)))
      ->type_name("DURATION")
      ->group("Agents and rate limits");
  app.add_option("--rate-limit-max-delay", a.rate_limit_max_delay,
                 "Longest wait between rate-limit retries (seconds, or 90s, 10m; default 600)")
      ->transform(seconds_of_duration())
      ->check(quiet(CLI::Range(0.0, 86400.0)))
      ->type_name("DURATION")
      ->group("Agents and rate limits");
  app.add_option("--rate-limit-fallback-model", a.rate_limit_fallback_model,
                 "Model of an agent step's last rate-limit retry (e.g. auto; default: the step's own)")
      ->type_name("MODEL")
      ->group("Agents and rate limits");
  app.add_option("--limit", a.limits,
                 "Children at once of one agent provider (claude, codex, copilot, fake) or limit_group, "
                 "halved on a rate limit and grown back one per clean reply (repeatable; wins over the "
                 "recipe's limits:)")
      ->check(CLI::Validator(
          [](std::string& text) {
            const auto parsed = parse_limit(text);
            return parsed ? std::string() : "expected NAME=N (N from 1 to 4096), got '" + text + "'";
          },
          "NAME=N"))
      ->allow_extra_args(false)
      ->type_name("NAME=N")
      ->group("Agents and rate limits");
  app.add_option("--max-cost", a.max_cost,
                 "Budget of the run's agent calls in US dollars (as the CLIs report, or priced by --prices): "
                 "reached, no new step or agent call (a retry, a correction) starts and the run ends budget_exhausted "
                 "(exit 6); wins over the "
                 "recipe's budget.cost_usd")
      ->check(quiet(CLI::Range(0.000001, 1e9)))
      ->type_name("USD")
      ->group("Agents and rate limits");
  app.add_option("--max-tokens", a.max_tokens,
                 "Budget of the run's agent calls in tokens (input, output and cache): as --max-cost; wins "
                 "over the recipe's budget.tokens")
      ->check(quiet(CLI::Range(1LL, 1000000000000000LL)))
      ->type_name("N")
      ->group("Agents and rate limits");
  app.add_option("--prices", a.prices,
                 "Price table (JSON or YAML: models: {NAME: {input, output, cache_read, cache_write}} in US "
                 "dollars per million tokens) for calls whose CLI reports no cost, or to replace its figure")
      ->type_name("FILE")
      ->group("Agents and rate limits");
  app.add_option("--rate-limit-pattern", a.rate_limit_patterns,
                 "Extra text (case-insensitive) marking a failed agent reply as rate limited (repeatable)")
      ->allow_extra_args(false)
      ->type_name("TEXT")
      ->group("Agents and rate limits");
}

void add_run_options(CLI::App& app, run_settings& s) {
  add_recipe_options(app, s.recipe);
  add_secret_options(app, s.recipe);
  add_execution_options(app, s);
  app.add_flag("--dry-run", s.dry_run, "Run nothing: print the plan with conditions evaluated where possible")
      ->group("Running");
  add_agent_options(app, s.recipe);
  add_agent_run_options(app, s.agents);
}

// Core options first (what runs, how, what it prints); agents and rate limits after them.
void add_execution_options(CLI::App& app, run_settings& s) {
  const std::string running = "Running", output = "Output", limits = "Limits and sessions";
  app.add_option("-j,--max-concurrent", s.max_concurrent,
                 "Child processes running at once in the whole run (steps and hooks; 1 to 4096, default 8)")
      ->check(quiet(CLI::Range(1, 4096)))
      ->type_name("N")
      ->group(running);
  app.add_option("--executor", s.executor,
                 "Where bash and agent steps run: local (children of arun, the default; a resume: where the run "
                 "ran) or slurm (one Slurm batch job each; sbatch, squeue and scancel on PATH)")
      ->check(quiet(CLI::IsMember({"local", "slurm"})))
      ->type_name("NAME")
      ->group(running);
  app.add_option("--shared-dir", s.shared_dir,
                 "With --executor slurm: where each job's script, output and exit status go, on a filesystem "
                 "the nodes share (default: the session directory)")
      ->type_name("DIR")
      ->group(running);
  app.add_option("--pending-timeout", s.pending_timeout,
                 "With --executor slurm: a job held or pending in the queue longer than DURATION (seconds, or 30s, 10m, 1h30m; off: none) "
                 "is cancelled and its step fails (default: it waits as long as Slurm keeps it)")
      ->type_name("DURATION")
      ->group(running);
  app.add_option("--include-tags", s.include_tags, "Run only steps with one of these when_tags (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("TAGS")
      ->group(running);
  app.add_option("--exclude-tags", s.exclude_tags, "Skip steps with any of these when_tags (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("TAGS")
      ->group(running);
  app.add_flag("-k,--keep-going", s.keep_going,
               "As make -k: after a failure run what does not depend on it, then exit 1 (a step's own "
               "on_error, continue_on_error, nonfatal or fatal holds)")
      ->group(running);
  app.add_flag("-y,--yes", s.yes, "Approve every approval gate")->group(running);
  app.add_flag("--no-input", s.no_input, "Never ask on the terminal: a gate suspends the run (exit 5)")->group(running);
  app.add_option("--output-format", s.output_format, "Final result on stdout: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->group(output);
  app.add_option("--events", s.events_file, "Write every event as a JSON line to FILE (truncated first)")
      ->type_name("FILE")
      ->group(output);
  app.add_option("--audit-dir", s.audit_dir, "Also write the events to DIR/<recipe>-<session>.jsonl")
      ->type_name("DIR")
      ->group(output);
  app.add_option("--progress", s.progress,
                 "Progress on stderr: auto (a live status line on a terminal), live (also through a pipe, e.g. "
                 "tee), plain or off")
      ->check(CLI::IsMember({"auto", "live", "plain", "off"}))
      ->type_name("MODE")
      ->group(output);
  auto* quiet_flag = app.add_flag("-q,--quiet", s.quiet, "No progress on stderr")->group(output);
  app.add_flag("-v,--verbose", s.verbose,
               "Every step instance on stderr, loop iterations too: its start, its end and its output lines "
               "prefixed with its instance id")
      ->excludes(quiet_flag)
      ->group(output);
  app.add_option("--log-level", s.log_level,
                 "arun's own log in the session (arun.log): off, error, warn, info (default, or $ARUN_LOG), debug "
                 "(every child spawned and ended), trace")
      ->check(CLI::IsMember({"off", "error", "warn", "info", "debug", "trace"}))
      ->type_name("LEVEL")
      ->group(output);
  app.add_flag("--log-stderr", s.log_stderr, "arun's own log on stderr too")->group(output);
  app.add_option("--heartbeat", s.heartbeat, "Time between heartbeat events of a long step (seconds, or 90s, 5m; 0: none)")
      ->transform(seconds_of_duration())
      ->check(quiet(CLI::Range(0.0, 86400.0)))
      ->type_name("DURATION")
      ->group(limits);
  app.add_option("--kill-grace", s.kill_grace,
                 "Time between SIGTERM and SIGKILL when a step times out or is cancelled (seconds, or 500ms, 1m)")
      ->transform(seconds_of_duration())
      ->check(quiet(CLI::Range(0.0, 3600.0)))
      ->type_name("DURATION")
      ->group(limits);
  app.add_option("--max-output", s.max_output, "Bytes of each step's stdout/stderr kept (default 10 MiB)")
      ->check(quiet(CLI::PositiveNumber))
      ->type_name("BYTES")
      ->group(limits);
  app.add_option("--spill-outputs-over", s.spill_outputs_over,
                 "Outputs longer than BYTES are kept in the session's outputs/ directory, not in memory "
                 "(default 96 KiB; 0: never)")
      ->type_name("BYTES")
      ->group(limits);
  app.add_option("--session-dir", s.session_dir,
                 "Where sessions live (default $ARUN_SESSION_DIR, else $XDG_STATE_HOME/arun/sessions)")
      ->type_name("DIR")
      ->group(limits);
  app.add_flag("--keep-worktrees", s.keep_worktrees,
               "Keep the worktrees and copies of steps with isolation: after a success too (their branches "
               "always stay)")
      ->group(running);
  const std::string cache = "Cache";
  auto* no_cache = app.add_flag("--no-cache", s.no_cache,
                                "Steps with cache: run as if they had none: nothing is looked up or stored")
                       ->group(cache);
  app.add_option("--refresh-cache", s.refresh_cache,
                 "Run the instances of this step (its id, or an instance glob such as 'fan[*]') even when the "
                 "cache has their output, and store the new one (repeatable)")
      ->excludes(no_cache)
      ->allow_extra_args(false)
      ->type_name("STEP")
      ->group(cache);
  app.add_option("--cache-dir", s.cache_dir,
                 "Where cached outputs live (default $ARUN_CACHE_DIR, else $XDG_CACHE_HOME/arun, else ~/.cache/arun)")
      ->type_name("DIR")
      ->group(cache);
  app.add_option("--cache-max-size", s.cache_max_bytes,
                 "The cache's size cap: past it, the least recently used outputs go when a run ends (default 1G; 0: "
                 "none)")
      ->transform(CLI::AsSizeValue(false))
      ->type_name("SIZE")
      ->group(cache);
}

void add_resume_options(CLI::App& app, resume_settings& r) {
  app.add_option("session", r.session_id, session_argument_help)->required();
  app.add_option("--set", r.sets, "Add or change a context variable: KEY=VALUE (after the original --set values)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  app.add_flag("--retry-failed", r.retry_failed, "Run again the instances that failed without stopping the run");
  app.add_flag("--reload", r.reload,
               "Run the recipe files as they are now, not the session's copies: a finished instance is kept only "
               "when its step and the values it reads are unchanged");
  add_secret_options(app, r.run.recipe);
  add_execution_options(app, r.run);
  add_agent_run_options(app, r.run.agents);
}

void add_logs_options(CLI::App& app, logs_settings& s) {
  app.add_option("session", s.session_id, session_argument_help)->required();
  app.add_option("instance", s.instance_glob,
                 "Only these instances: an instance id or a glob ('fan[*]/review', 'build*'); default: all");
  app.add_option("--stream", s.stream, "Only stdout (out) or stderr (err)")->check(CLI::IsMember({"out", "err"}));
  app.add_flag("-f,--follow", s.follow, "Keep printing new output while the session runs; ends when the run ends");
  auto* failed = app.add_flag("--failed", s.failed,
                              "Only the instances that failed (as the session's journal last recorded them); with an "
                              "instance glob, those of them that failed");
  app.add_flag("--transcript", s.transcript,
               "Agent instances: each call's argv, model, system prompt, prompt (correction rounds included) "
               "and full reply, instead of the output lines")
      ->excludes("--follow")
      ->excludes("--stream")
      ->excludes(failed);
  app.add_option("--session-dir", s.session_dir, "Where sessions live")->type_name("DIR");
}

}  // namespace arun::cli
