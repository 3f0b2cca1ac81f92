// `arun [run] RECIPE` (docs/cli.md, "arun run"): load and check the recipe, run it on one
// io_context with the real step runner, report on stderr, print the result on stdout, exit with the
// codes of docs/reference/exit-codes.md.
#include "agent_setup.hpp"
#include "approvals.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "final_drain.hpp"
#include "stop_signals.hpp"
#include "files/fd_write.hpp"
#include "usage_hints.hpp"
#include "output/diagnostic_render.hpp"
#include "agents/agent_checks.hpp"
#include "output/arun_log.hpp"
#include "resumed_options.hpp"
#include "run_output.hpp"

#include "recipe/context_checks.hpp"
#include "recipe/discovery.hpp"
#include "recipe/duration.hpp"
#include "output/event_json.hpp"
#include "output/jsonl_sink.hpp"
#include "output/listener_fanout.hpp"
#include "process/supervisor.hpp"
#include "executor/process_step_runner.hpp"
#include "session/transcripts.hpp"
#include "session/workspaces.hpp"
#include "cache/result_store.hpp"
#include "executor/slurm_job_dirs.hpp"
#include "files/directory_trust.hpp"
#include "instance_glob.hpp"
#include "executor/slurm_executor.hpp"
#include "files/private_files.hpp"
#include "process/spawn.hpp"
#include "output/progress_printer.hpp"
#include "recipe/recipe_library.hpp"
#include "session/instance_logs.hpp"
#include "session/session_outputs.hpp"
#include "output/stored_values.hpp"
#include "session/session_store.hpp"
#include "executor/step_environment.hpp"

#include <arun/engine.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string_view>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <variant>

namespace arun::cli {
namespace {

namespace asio = boost::asio;

std::optional<std::string> absolute_dir(const std::string& dir, std::string& problem) {
  std::error_code ec;
  const std::filesystem::path given = dir.empty() ? std::string(".") : dir;
  auto path = std::filesystem::absolute(given, ec);
  if (ec || !std::filesystem::is_directory(path, ec)) {
    problem = "working directory '" + dir + "' does not exist or is not a directory";
    return std::nullopt;
  }
  // "/a/b/." normalises to "/a/b/": drop the slash, or {{session.project}} would be empty
  // and paths built from {{session.working_dir}} would hold "//".
  path = path.lexically_normal();
  if (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
  return path.string();
}

std::chrono::nanoseconds to_ns(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
}

run_options engine_options(const run_settings& s, const std::string& base_dir) {
  run_options options;
  options.working_dir = base_dir;
  options.templates = s.recipe.strict ? template_mode::strict : s.recipe.lenient ? template_mode::lenient : template_mode::normal;
  options.max_concurrent = s.max_concurrent;
  // An empty tag is no filter: `--include-tags ''` on a resume clears the run's.
  auto tags = [](std::vector<std::string> v) {
    std::erase(v, std::string());
    return v;
  };
  options.include_tags = tags(s.include_tags);
  options.exclude_tags = tags(s.exclude_tags);
  options.heartbeat = to_ns(s.heartbeat);
  options.reload = s.reload;
  options.keep_going = s.keep_going;
  return options;
}

// Where events go: progress on stderr, an events file, an audit file. Owns the sinks, and
// the thread that writes the files (and the session's journal) off the event loop.
struct event_sinks {
  std::shared_ptr<io::background_writer> writer = std::make_shared<io::background_writer>();
  std::unique_ptr<io::instance_logs> logs;  ///< the session's logs/, when there is a session
  std::unique_ptr<io::transcript_store> transcripts;  ///< the session's transcripts.jsonl, likewise
  std::unique_ptr<io::progress_printer> progress;
  /// A question on the terminal pauses `progress` (goes before it).
  std::optional<io::status_registration> progress_pauses;
  std::vector<std::unique_ptr<io::jsonl_event_sink>> files;
  io::listener_fanout fanout;
  /// The executor's jobs waiting in a queue, for the status line (set once there is one).
  std::function<std::vector<std::pair<std::string, std::string>>()> waiting;

  void warn_failed_files() const {
    for (const auto& f : files)
      if (f->failed()) std::fprintf(stderr, "arun: warning: %s\n", f->error().c_str());
    if (logs && !logs->error().empty()) std::fprintf(stderr, "arun: warning: %s\n", logs->error().c_str());
    if (transcripts && !transcripts->error().empty())
      std::fprintf(stderr, "arun: warning: %s\n", transcripts->error().c_str());
  }
};

// Builds the sinks; a file that cannot be opened is a usage error (nothing ran yet).
std::optional<std::string> open_sinks(const run_settings& s, const recipe& r, const std::string& session_id,
                                      io::session_store* store, const io::secret_masker& masker, event_sinks& sinks) {
  // Always: a sub-recipe's `secrets:` join the masker while the run goes on.
  const io::line_filter mask = [&masker](std::string_view text) { return masker.mask(text); };
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  // First: a failure line printed by the progress names the log its lines went to.
  if (store) {
    sinks.logs = std::make_unique<io::instance_logs>(store->dir() + "/logs", s.max_output, sinks.writer, mask,
                                                     !store->resumed());
    sinks.fanout.add(sinks.logs.get());
    sinks.transcripts = std::make_unique<io::transcript_store>(io::transcripts_file(store->dir()), s.max_output,
                                                                sinks.writer, &masker);
  }
  if (!s.quiet && s.progress != "off") {
    io::progress_options po;
    // A status line redrawn in place needs a terminal that understands it; `live` insists.
    const char* term = std::getenv("TERM");
    const bool dumb = term && std::string_view(term) == "dumb";
    const bool live = s.progress == "live" || (s.progress == "auto" && tty && !dumb);
    po.mode = live ? io::progress_mode::live : io::progress_mode::plain;
    po.color = stderr_color(s.recipe.color);
    po.verbose = s.verbose;
    po.filter = mask;
    po.waiting = [&sinks]() -> std::vector<std::pair<std::string, std::string>> {
      return sinks.waiting ? sinks.waiting() : std::vector<std::pair<std::string, std::string>>{};
    };
    if (sinks.logs) po.log_files = [logs = sinks.logs.get()](std::string_view id) { return logs->files_of(id); };
    sinks.progress = std::make_unique<io::progress_printer>(stderr, po);
    sinks.progress_pauses.emplace(sinks.progress.get());
    sinks.fanout.add(sinks.progress.get());
  }
  auto add_file = [&](io::jsonl_open_result opened) -> std::optional<std::string> {
    if (!opened.sink) return opened.error;
    opened.sink->mask_with(&masker);
    sinks.fanout.add(opened.sink.get());
    sinks.files.push_back(std::move(opened.sink));
    return std::nullopt;
  };
  if (!s.events_file.empty())
    if (auto e = add_file(io::jsonl_event_sink::open(s.events_file, true, {}, sinks.writer))) return e;
  // The session's own events, appended across resumes (docs/sessions.md, "Where sessions live").
  if (store)
    if (auto e = add_file(io::jsonl_event_sink::open(store->dir() + "/events.jsonl", false, {}, sinks.writer))) return e;
  if (!s.audit_dir.empty())
    if (auto e = add_file(io::jsonl_event_sink::open_audit(s.audit_dir, r.name, session_id, sinks.writer))) return e;
  return std::nullopt;
}

// A run that ends before the engine starts still leaves a session that says why.
int finish_unstarted(io::session_store* store, const std::string& why, int code) {
  // A resume that cannot start leaves the session as it was (waiting for approval, say).
  if (store && !store->resumed()) {
    store->state()["status"] = "failed";
    store->state()["error"] = why;
    (void)store->save_state();
  }
  return code;
}

// The failed instances of `results`, innermost: a loop's failed items, a sub-recipe's failed
// steps, else the failed step itself.
std::size_t failed_instance_count(const std::vector<step_result>& results) {
  std::size_t n = 0;
  for (const auto& r : results) {
    const auto inside = failed_instance_count(r.children);
    if (!r.failed_instances.empty()) n += r.failed_instances.size();
    else if (inside > 0) n += inside;
    else if (r.status == step_status::failed) ++n;
  }
  return n;
}

void save_final_state(io::session_store& store, const run_result& r, bool after_failure = false) {
  auto& state = store.state();
  state["status"] = to_string(r.status);
  state["context"] = r.context;
  state["error"] = r.error;
  state["output"] = r.output;
  state["duration"] = std::chrono::duration<double>(r.duration).count();
  if (!r.waiting.empty()) {
    boost::json::array gates;
    for (const auto& w : r.waiting) gates.push_back(boost::json::object{{"step", w.step}, {"prompt", w.prompt}});
    state["waiting"] = std::move(gates);
  } else {
    state.erase("waiting");
  }
  boost::json::array steps;
  for (const auto& step : r.step_results)
    steps.push_back(boost::json::object{{"step_id", step.step_id}, {"status", to_string(step.status)}});
  state["steps"] = std::move(steps);
  // How many instances failed, at any depth (a loop's items under on_error: continue too):
  // what `resume --retry-failed` would run again, for TAB completion and listings.
  state["failed_instances"] = failed_instance_count(r.step_results);
  store.sync();
  const auto error = after_failure ? store.save_state_after_failure() : store.save_state();
  if (!error.empty()) std::fprintf(stderr, "arun: warning: %s\n", error.c_str());
  if (!after_failure && !store.journal_error().empty())
    std::fprintf(stderr, "arun: warning: %s\n", store.journal_error().c_str());
}

// The session store failed during the run: the run failed, and says where and why, and how
// to go on once the disk has room.
int finish_after_store_failure(io::session_store& store, run_result& r, const std::string& format,
                               const io::secret_masker& masker) {
  r.status = run_status::failed;
  r.error = "the session store " + store.dir() + " failed: " + store.failure();
  save_final_state(store, r, true);
  (void)print_result(r, format, &masker);  // the store's failure is the one to report
  std::fprintf(stderr,
               "arun: the run stopped because its session could not be written; the %zu steps recorded before are "
               "kept. Free space, then: arun resume %s\n",
               store.records(), store.id().c_str());
  return exit_store_failed;
}

}  // namespace

boost::json::object cache_invocation(const run_settings& s) {
  std::error_code ec;
  return {{"dir", s.cache_dir.empty() ? std::string()
                                      : std::filesystem::absolute(s.cache_dir, ec).lexically_normal().string()},
          {"off", s.no_cache},
          {"max_bytes", s.cache_max_bytes},
          {"keep_worktrees", s.keep_worktrees}};
}

boost::json::object invocation_to_json(const recipe_options& o, const std::string& base_dir) {
  auto strings = [](const std::vector<std::string>& v) { return boost::json::array(v.begin(), v.end()); };
  // Directories as absolute paths: a resume may start from another directory.
  auto dirs = [](const std::vector<std::string>& v) {
    boost::json::array out;
    for (const auto& d : v) {
      std::error_code ec;
      const auto absolute = std::filesystem::absolute(d, ec);
      out.emplace_back(ec ? d : absolute.lexically_normal().string());
    }
    return out;
  };
  return {{"working_dir", base_dir},
          {"sets", strings(o.sets)},
          {"recipe_dirs", dirs(o.recipe_dirs)},
          {"agent_dirs", dirs(o.agent_dirs)},
          {"allow_missing_agents", o.allow_missing_agents},
          {"strict", o.strict},
          {"lenient", o.lenient},
          {"max_recipe_bytes", o.max_recipe_bytes}};
}

int run_command(const run_settings& s) {
  io::session_sources sources;  // copies of every recipe file read, for the session
  run_settings settings = s;
  settings.recipe.sources = &sources;
  settings.recipe.resolve_secrets = !s.dry_run;
  add_limit_checks(s.agents, settings.recipe);
  auto input = load_recipe_input(settings.recipe, true);
  if (!input.value) return input.exit_code;
  const recipe& loaded = *input.value;
  std::string problem;
  const auto base_dir = absolute_dir(s.recipe.working_dir, problem);
  if (!base_dir) {
    std::fprintf(stderr, "arun: %s\n", problem.c_str());
    return exit_usage;
  }
  const auto session_id = make_session_id(std::chrono::system_clock::now(), std::random_device{}());
  if (s.dry_run) return execute_run(settings, input, *base_dir, session_id, nullptr);
  hold_stop_signals();  // from the session's creation until the run handles them
  // Another user who can write where sessions live could swap what a resume reads and runs.
  const auto sessions = io::checked_session_root(s.session_dir, io::trust_mode::make);
  if (!sessions.ok()) {
    std::fprintf(stderr, "arun: %s\n", sessions.error.c_str());
    return exit_usage;
  }
  // Housekeeping first (arun config: retention_days, retention_sessions).
  if (s.retention_days > 0 || s.retention_sessions > 0) {
    prune_rule rule;
    if (s.retention_days > 0) rule.older_than_days = s.retention_days;
    if (s.retention_sessions > 0)  // the run's own session makes one more
      rule.keep_newest = static_cast<std::size_t>(s.retention_sessions) - 1;
    rule.spare_kept_trees = true;
    const auto report = prune_sessions(sessions.path, rule, false);
    if (!report.removed.empty() && !s.quiet)
      std::fprintf(stderr, "arun: removed %zu old session%s (retention: %d days, %d sessions; arun config)\n",
                   report.removed.size(), report.removed.size() == 1 ? "" : "s", s.retention_days, s.retention_sessions);
    if (!report.spared.empty() && !s.quiet)
      std::fprintf(stderr,
                   "arun: kept %zu old session%s holding worktrees or copies with a failed step's work (%s%s); "
                   "arun sessions clean --older-than DAYS removes them\n",
                   report.spared.size(), report.spared.size() == 1 ? "" : "s", report.spared.front().c_str(),
                   report.spared.size() > 1 ? ", ..." : "");
  }
  // docs/sessions.md, "Where sessions live": every run has a session; it exists before any step
  // runs.
  auto created = io::session_store::create(sessions.path, session_id);
  if (auto* error = std::get_if<std::string>(&created)) {
    std::fprintf(stderr, "arun: %s\n", error->c_str());
    return exit_usage;
  }
  auto& store = *std::get<std::unique_ptr<io::session_store>>(created);
  sources.attach(store.dir());
  const auto copy = sources.copy_of(loaded.source_path);
  if (auto error = io::write_file_atomically(store.dir() + "/recipe.yaml", copy.value_or(""));
      !error.empty() || !copy) {
    std::fprintf(stderr, "arun: cannot keep the recipe in the session: %s\n",
                 error.empty() ? "the recipe text is not available" : error.c_str());
    return exit_usage;
  }
  auto& state = store.state();
  state["recipe_name"] = loaded.name;
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(loaded.source_path, ec);
  state["recipe_path"] = ec ? loaded.source_path : absolute.lexically_normal().string();
  state["invocation"] = invocation_to_json(s.recipe, *base_dir);
  // The agent CLI too: a resume must not switch from --agent-cli fake to claude by surprise.
  const auto& a = s.agents;
  state["invocation"].as_object()["agents"] = {
      {"cli", a.cli},
      {"command", a.command},
      {"auto_stage", a.auto_stage},
      {"rate_limit_retries", a.rate_limit_retries},
      {"rate_limit_delay", a.rate_limit_delay},
      {"rate_limit_max_delay", a.rate_limit_max_delay},
      {"rate_limit_patterns", boost::json::array(a.rate_limit_patterns.begin(), a.rate_limit_patterns.end())},
      {"rate_limit_fallback_model", a.rate_limit_fallback_model},
      {"limits", boost::json::array(a.limits.begin(), a.limits.end())},
      {"max_cost", a.max_cost},
      {"max_tokens", a.max_tokens},
      {"prices", a.prices.empty() ? std::string() : std::filesystem::absolute(a.prices, ec).lexically_normal().string()}};
  state["invocation"].as_object()["keep_going"] = s.keep_going;
  state["invocation"].as_object()["execution"] = execution_invocation(s);
  // A resume follows the jobs where they were submitted.
  std::string shared_dir = s.shared_dir;
  if (!shared_dir.empty()) shared_dir = std::filesystem::absolute(shared_dir, ec).lexically_normal().string();
  state["invocation"].as_object()["executor"] = {{"name", s.executor.empty() ? "local" : s.executor},
                                                {"shared_dir", shared_dir},
                                                {"pending_timeout", s.pending_timeout}};
  // The cache the run used, for its resumes (an absolute directory; empty: the default).
  state["invocation"].as_object()["cache"] = cache_invocation(s);
  // Where each secret came from, never its value: a resume asks the same sources again.
  boost::json::array secrets;
  for (const auto& secret : input.secrets) {
    boost::json::object entry{{"name", secret.name}, {"source", secret.source}};
    if (!secret.path.empty()) entry["path"] = secret.path;  // where --secret-file read it: not secret
    secrets.push_back(std::move(entry));
  }
  state["invocation"].as_object()["secrets"] = std::move(secrets);
  return execute_run(settings, input, *base_dir, session_id, &store);
}

namespace {

// A tag given to --include-tags/--exclude-tags that no step carries filters nothing: most
// likely a typo, which would otherwise run (or skip) everything in silence.
void warn_unknown_tags(const run_settings& s, const std::vector<const recipe*>& recipes) {
  std::set<std::string, std::less<>> known;
  for (const auto* r : recipes)
    for_each_step(*r, [&](const step& st, int) { known.insert(st.when_tags.begin(), st.when_tags.end()); });
  const std::vector<std::string_view> names(known.begin(), known.end());
  std::string listed;
  for (auto n : names) listed += (listed.empty() ? "" : ", ") + std::string(n);
  for (const auto* given : {&s.include_tags, &s.exclude_tags})
    for (const auto& tag : *given) {
      if (tag.empty() || known.contains(tag)) continue;
      auto hint = did_you_mean(tag, names);
      std::fprintf(stderr, "arun: warning: no step has the tag '%s'%s (%s)\n", tag.c_str(),
                   hint.empty() ? "" : (": " + hint).c_str(),
                   listed.empty() ? "no step has when_tags" : ("tags in this recipe: " + listed).c_str());
    }
}

// --pending-timeout's DURATION (seconds, "30s", "10m", "1h30m", as every duration); "off" or 0: none.
std::variant<std::optional<std::chrono::milliseconds>, std::string> pending_timeout(const std::string& text) {
  if (text.empty() || text == "off") return std::optional<std::chrono::milliseconds>();
  const auto seconds = io::parse_duration(text);
  if (!seconds) return "--pending-timeout: '" + text + "' is not " + std::string(io::duration_forms) + ", or off";
  if (*seconds == 0) return std::optional<std::chrono::milliseconds>();
  return std::optional<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(*seconds)));
}

// The journal of a Slurm run: once it has an instance's result, the instance's job files
// leave the shared directory (docs/scale-out.md, "Job files").
class releasing_journal final : public run_journal {
public:
  releasing_journal(io::session_store& store, io::slurm_executor& cluster) : store_(store), cluster_(cluster) {}
  void record(const step_result& result, const boost::json::object& context_delta) noexcept override {
    store_.record(result, context_delta);
    cluster_.release(result.step_id);  // queued behind the record's write
  }
  const finished_instance* find(std::string_view instance_id) const noexcept override { return store_.find(instance_id); }
  void record_usage(std::string_view instance_id, const agent_usage& call) noexcept override {
    store_.record_usage(instance_id, call);
  }
  std::optional<std::vector<agent_usage>> recorded_usage() const override { return store_.recorded_usage(); }

private:
  io::session_store& store_;
  io::slurm_executor& cluster_;
};

// --executor slurm: Slurm's clients must be there, and the job files need a directory the
// nodes share (the session's, unless --shared-dir names another).
std::variant<std::unique_ptr<io::slurm_executor>, std::string> make_slurm_executor(const run_settings& s,
                                                                                   const std::string& session_id,
                                                                                   const io::session_store* store,
                                                                                   io::slurm_options o = {}) {
  o.client_env = io::current_environment();
  for (const char* tool : {"sbatch", "squeue", "scancel"})
    if (!io::find_program(tool, o.client_env))
      return std::string("--executor slurm needs Slurm's ") + tool + " on PATH, and it is not there";
  o.shared_dir = !s.shared_dir.empty() ? s.shared_dir : store ? store->dir() : std::string();
  if (o.shared_dir.empty()) return std::string("--executor slurm needs --shared-dir or a session directory");
  std::error_code ec;
  o.shared_dir = std::filesystem::absolute(o.shared_dir, ec).lexically_normal().string();
  o.session_id = session_id;
  if (auto limit = pending_timeout(s.pending_timeout); std::holds_alternative<std::string>(limit))
    return std::get<std::string>(limit);
  else
    o.pending_timeout = std::get<std::optional<std::chrono::milliseconds>>(limit);
  // Checked before any job is submitted: the job files below it are what the nodes run.
  auto dirs = io::prepare_slurm_job_dirs(o.shared_dir, session_id, store ? store->dir() + "/slurm-jobs" : std::string(),
                                         store && store->resumed());
  if (!dirs.error.empty()) return std::move(dirs.error);
  o.shared_dir = std::move(dirs.shared_dir);
  o.jobs_dir = std::move(dirs.jobs_dir);
  if (store) o.recorded = [store](std::string_view instance) { return store->recorded(instance); };
  return std::make_unique<io::slurm_executor>(std::move(o));
}

}  // namespace

// --refresh-cache naming no cached step of the recipe (or its sub-recipes known now) is most
// likely a typo: said, not refused (a sub-recipe loaded later may have it).
static void warn_unknown_refresh(const std::vector<std::string>& names, const recipe_input& input) {
  std::vector<std::string> cached;
  auto collect = [&](const recipe& r) {
    for_each_step(r, [&](const step& st, int) {
      if (st.cache) cached.push_back(st.id);
    });
  };
  collect(*input.value);
  for (const auto& child : input.sub_recipes) collect(child);
  for (const auto& n : names) {
    // `call[0]/leaf`, `fan[*]`: the step is the last component without its indices.
    auto last = std::string_view(n).substr(n.rfind('/') + 1);
    last = last.substr(0, last.find('['));
    const bool known = std::any_of(cached.begin(), cached.end(), [&](const std::string& id) {
      return id == n || id == last || instance_glob_match(n, id);
    });
    if (known) continue;
    std::string list;
    for (const auto& id : cached) list += (list.empty() ? "" : ", ") + id;
    std::fprintf(stderr, "arun: warning: --refresh-cache %s names no step with cache: (%s)\n", n.c_str(),
                 list.empty() ? "the recipe has none" : ("those with one: " + list).c_str());
  }
}

// Who ran the session, where and how: one `runs` entry in state.json per invocation (the run,
// then each resume), shown by `arun report` (docs/report-and-dashboard.md). The command line
// is masked: a `--secret KEY=VALUE` keeps its key, and no word keeps a secret's value.
static void record_invocation(boost::json::object& state, const std::vector<std::string>& command_line,
                              const io::secret_masker& masker) {
  boost::json::array argv;
  bool secret_next = false;
  for (const auto& word : command_line) {
    std::string shown = word;
    const auto secret_value_at = [&](std::size_t from) {
      const auto eq = shown.find('=', from);
      if (eq != std::string::npos) shown = shown.substr(0, eq + 1) + "***";
    };
    if (secret_next)
      secret_value_at(0);
    else if (word.starts_with("--secret="))
      secret_value_at(std::string_view("--secret=").size());
    secret_next = word == "--secret";
    argv.emplace_back(masker.mask(shown));
  }
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const auto* user = ::getpwuid(::geteuid());
  boost::json::object run{{"started_at", io::format_rfc3339_ms(std::chrono::system_clock::now())},
                          {"arun_version", ARUN_VERSION},
                          {"pid", ::getpid()},
                          {"user", user && user->pw_name ? user->pw_name : std::to_string(::geteuid())},
                          {"host", host},
                          {"argv", std::move(argv)}};
  auto* runs = state.if_contains("runs");
  if (!runs || !runs->is_array()) runs = &(state["runs"] = boost::json::array());
  runs->get_array().push_back(std::move(run));
}

int execute_run(const run_settings& s, const recipe_input& input, const std::string& base_dir,
                const std::string& session_id, io::session_store* store) {
  const recipe& loaded = *input.value;
  // Secrets reach the steps; what arun prints or keeps has `***` in their place.
  io::secret_masker masker;
  for (const auto& secret : input.secrets) masker.add(secret.value);
  if (store) store->mask_with(&masker);
  struct forget_masker {  // the store outlives this function; the masker does not
    io::session_store* store;
    ~forget_masker() {
      if (store) store->mask_with(nullptr);
    }
  } const forget_masker_at_end{store};
  // context_validation (docs/reference/recipe.md, "context_validation"): a pre-flight, before
  // anything runs.
  if (const auto problems = io::check_context(loaded, base_dir); !problems.empty()) {
    for (const auto& p : problems)
      std::fprintf(stderr, "%s: error: %s\n", loaded.source_path.c_str(), masker.mask(p).c_str());
    return finish_unstarted(store, "context_validation failed", exit_usage);
  }
  auto options = engine_options(s, base_dir);
  for (const auto& secret : input.secrets) options.secret_names.insert(secret.name);
  // The cache keeps no output the masker would change (docs/caching.md).
  options.holds_secret = [&masker](std::string_view text) { return !masker.clean(text); };
  options.on_slot_wait = [](std::string_view instance, std::chrono::nanoseconds waited) {
    io::arun_log().debug("{} waited {:.1f} ms for a slot (max_concurrent or an agent limit)", instance,
                         std::chrono::duration<double, std::milli>(waited).count());
  };
  options.session_id = session_id;
  io::runner_options ro;
  ro.base_dir = base_dir;
  ro.kill_grace = to_ns(s.kill_grace);
  ro.limits.max_bytes = s.max_output;
  ro.limits.secrets = &masker;  // a cut never keeps part of a secret
  ro.inherited_env = io::current_environment();
  if (auto error = configure_agents(s, base_dir, input.path, ro, options)) {
    std::fprintf(stderr, "arun: %s\n", error->c_str());
    return finish_unstarted(store, *error, exit_usage);
  }
  if (s.dry_run) {
    return print_plan(plan_run(loaded, options), loaded, s.output_format, &masker) ? exit_success : exit_output_failed;
  }
  // Steps with `isolation:` run in trees of their own, kept in the session. A resume first
  // removes the trees its crashed or stopped instances left (a failed one's stays for
  // inspection until it runs again; with --keep-worktrees every finished one's stays).
  std::optional<io::session_workspaces> workspaces;
  if (store) {
    if (store->resumed())
      for (const auto& problem : io::remove_session_workspaces(store->dir(), [store, &s](std::string_view instance) {
             const auto* done = store->find(instance);
             return done && (done->result.status == step_status::failed || s.keep_worktrees);
           }))
        std::fprintf(stderr, "arun: warning: %s\n", problem.c_str());
    workspaces.emplace(store->dir(), session_id, base_dir, s.keep_worktrees);
    options.workspaces = &*workspaces;
  }
  // Steps with `cache:` find and keep their outputs here; --no-cache leaves the engine none.
  std::optional<io::result_store> cache;
  if (!s.no_cache) {
    // A cache another user can write could hand this run their outputs: the steps run instead.
    if (const auto dir = io::checked_cache_dir(s.cache_dir); !dir.ok()) {
      std::fprintf(stderr, "arun: warning: %s (the cache is not used by this run)\n", dir.error.c_str());
    } else {
      cache.emplace(dir.path, s.cache_max_bytes);
      cache->limit_output(s.max_output);
      options.cache = &*cache;
    }
  }
  if (!s.refresh_cache.empty()) {
    warn_unknown_refresh(s.refresh_cache, input);
    options.refresh_cache = [names = s.refresh_cache](std::string_view step_id, std::string_view instance) {
      return std::any_of(names.begin(), names.end(),
                         [&](const std::string& n) { return n == step_id || instance_glob_match(n, instance); });
    };
  }
  // An agent CLI that is not there is said before the first step, not only at the first agent
  // step after an hour of work. A warning when the agent steps may all be skipped (tags,
  // conditions) or already done (resume), as the run may then succeed without one.
  {
    std::vector<const recipe*> recipes = {&loaded};
    for (const auto& child : input.sub_recipes) recipes.push_back(&child);
    warn_unknown_tags(s, recipes);
    // A step that must run needs it: the run cannot succeed, so it does not start (said once,
    // here). A resume may have done that step already: a warning, as ever.
    const bool resumed = store && store->resumed();
    const step* must_run = resumed ? nullptr
                                   : io::agent_step_that_must_run(loaded, !options.include_tags.empty(),
                                                                  s.executor.empty() || s.executor == "local");
    if (auto missing = io::check_agent_cli(recipes, ro.agent, ro.inherited_env, severity::warning, must_run)) {
      io::source_files files(s.recipe.sources);
      std::fputs(io::render_diagnostics({*missing}, files, stderr_color(s.recipe.color)).c_str(), stderr);
      if (missing->level == severity::error) return finish_unstarted(store, missing->message, exit_usage);
    }
  }

  // arun's own log, in the session: what a bug report or a soak test looks at.
  struct log_closer {
    ~log_closer() { io::close_arun_log(); }
  } const close_log;
  {
    std::string level_text = s.log_level;
    if (level_text.empty())
      if (const char* env = std::getenv("ARUN_LOG")) level_text = env;
    auto level = io::parse_log_level(level_text.empty() ? "info" : level_text);
    if (!level) {
      std::fprintf(stderr, "arun: warning: ARUN_LOG=%s is not a log level (off, error, warn, info, debug, trace); "
                           "using info\n", level_text.c_str());
      level = spdlog::level::info;
    }
    io::arun_log_options lo;
    lo.level = *level;
    lo.file = store ? store->dir() + "/arun.log" : std::string();
    lo.to_stderr = s.log_stderr;
    if (auto error = io::open_arun_log(lo); !error.empty()) std::fprintf(stderr, "arun: warning: %s\n", error.c_str());
    auto& log = io::arun_log();
    log.info("arun {} (pid {}) runs '{}' from {} in {}: session {}, -j {}{}", ARUN_VERSION, ::getpid(), loaded.name,
             loaded.source_path, base_dir, options.session_id, s.max_concurrent, s.reload ? ", --reload" : "");
    if (store && store->resumed()) {
      log.info("resume: {} finished instances recorded before", store->resumed_records());
      for (const auto& notice : store->notices()) log.warn("resume: {}", notice);
    }
  }
  event_sinks sinks;
  if (auto error = open_sinks(s, loaded, options.session_id, store, masker, sinks)) {
    std::fprintf(stderr, "arun: %s\n", error->c_str());
    return finish_unstarted(store, *error, exit_usage);
  }
  // Before the executor: the executor's timers must go before the loop they belong to.
  asio::io_context ctx;
  std::unique_ptr<io::slurm_executor> cluster;
  if (s.executor == "slurm") {
    io::slurm_options base;
    // A held or long-pending job is a warning of its step, where every warning goes.
    base.warn = [&sinks, session = options.session_id](const std::string& key, const std::string& message) {
      event e;
      e.kind = event_kind::warning;
      e.session_id = session;
      e.step = key;
      e.message = message;
      sinks.fanout.on_event(e);
    };
    // A job's files go once the journal's record of it is written: on the journal's thread,
    // after that record.
    if (store)
      base.after_journal = [writer = sinks.writer](std::function<void()> job) {
        writer->post(0, [job = std::move(job)]() noexcept {
          try {
            job();
          } catch (...) {
            // Out of memory: the files stay until `arun sessions clean`.
          }
        });
      };
    auto made = make_slurm_executor(s, options.session_id, store, std::move(base));
    if (auto* error = std::get_if<std::string>(&made)) {
      std::fprintf(stderr, "arun: %s\n", error->c_str());
      return finish_unstarted(store, *error, exit_usage);
    }
    cluster = std::move(std::get<std::unique_ptr<io::slurm_executor>>(made));
    sinks.waiting = [c = cluster.get()] { return c->waiting(); };
    ro.jobs = cluster.get();
    options.leaves_run_here = false;  // cpus is the scheduler's to place, not a share of -j
    // Bodies, prompts and large values a step reads from files must be where its node sees them.
    const auto temp = io::trust_directory(cluster->shared_dir() + "/tmp", "--shared-dir", io::trust_mode::make);
    if (!temp.ok()) {
      std::fprintf(stderr, "arun: %s\n", temp.error.c_str());
      return finish_unstarted(store, temp.error, exit_usage);
    }
    ro.temp_dir = temp.path;
  }
  if (sinks.transcripts)
    ro.on_agent_call = [t = sinks.transcripts.get()](const io::agent_call_record& call) { t->record(call); };
  io::process_step_runner runner(std::move(ro));
  io::load_limits limits;
  limits.max_bytes = s.recipe.max_recipe_bytes;
  limits.sources = s.recipe.sources;
  io::recipe_library library(io::discovery_from_environment(s.recipe.recipe_dirs, base_dir), loaded.source_path,
                             limits);
  // A sub-recipe's own `secrets:` come from the run's secrets, else arun's environment.
  library.provide_secrets([&input, &masker](recipe& child) -> std::string {
    for (const auto& name : child.secrets) {
      const auto given = std::find_if(input.secrets.begin(), input.secrets.end(),
                                      [&](const secret_value& secret) { return secret.name == name; });
      const char* from_env = std::getenv(name.c_str());
      if (given == input.secrets.end() && !from_env)
        return "secret '" + name + "' is not set: export " + name + "=… or pass --secret " + name + "=VALUE";
      const std::string value = given != input.secrets.end() ? given->value : std::string(from_env);
      masker.add(value);
      child.context[name] = value;
    }
    return {};
  });
  options.recipes = &library;
  options.journal = store;
  std::optional<releasing_journal> journal;
  if (store && cluster) options.journal = &journal.emplace(*store, *cluster);
  std::optional<session_approvals> approvals;
  if (store) {
    const bool terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1;
    approvals.emplace(*store, s.yes, terminal && !s.no_input);
    options.approvals = &*approvals;
  }
  recipe_engine eng(runner, sinks.fanout);
  if (store) {
    store->state()["status"] = "running";
    // Just before the run starts, past every check that can stop it: `arun report` matches
    // each entry to the run whose recipe_start came next.
    record_invocation(store->state(), s.command_line, masker);
    if (auto error = store->save_state(); !error.empty()) {
      std::fprintf(stderr, "arun: the session store %s cannot be written: %s\n", store->dir().c_str(), error.c_str());
      return exit_store_failed;
    }
    store->write_in_background(sinks.writer);
  }
  std::optional<io::session_outputs> outputs;
  // Also with --spill-outputs-over 0: nothing new is stored, but a resume still reads what
  // the earlier run stored.
  if (store) {
    outputs.emplace(*store, s.spill_outputs_over);
    options.outputs = &*outputs;
  }

  asio::cancellation_signal cancel;
  int stop_signal = 0;
  asio::signal_set signals(ctx, SIGINT, SIGTERM);
  // A second signal: every step is killed and arun exits now, at most 2 s later.
  const std::function<void(int)> emergency_exit = [&](int sig) {
    std::fprintf(stderr, "arun: second %s: killing every running step\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    io::kill_all_supervised_processes();
    if (cluster) cluster->emergency_stop();
    // A write waiting for its reader (an events FIFO) stops waiting: the journal behind it goes.
    io::abandon_waiting_writes();
    // What finished is in the journal, unless the disk stalls: then this does not wait.
    if (store) {
      store->sync();
      (void)store->flush(std::chrono::seconds(2));
    }
    std::_Exit(128 + sig);
  };
  // The first signal stops the run gracefully; a second one kills every step at once.
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
        io::arun_log().warn("{} received{}", name, stop_signal == 0 ? ": stopping running steps" : " again: killing every step");
        if (sinks.progress) sinks.progress->clear_status();  // not onto the live status line
        if (stop_signal == 0) {
          stop_signal = sig;
          std::fprintf(stderr, "arun: %s received, stopping running steps (again to kill them now)\n", name);
          cancel.emit(asio::cancellation_type::terminal);
          signals.async_wait(on_signal);
          return;
        }
        emergency_exit(sig);
      };
  signals.async_wait(on_signal);
  release_stop_signals();  // a Ctrl-C while the run was being set up is handled now
  // A full or failing disk stops the run: what finishes next could not be kept. Running steps
  // are stopped as for SIGINT; what was journaled stays, and `arun resume` continues.
  // The failure is seen on the writer's thread: the loop's thread reports it and stops the run.
  if (store)
    store->on_failure([&](const std::string& why) {
      asio::post(ctx, [&, why] {
        io::arun_log().error("{}: stopping the run", why);
        if (sinks.progress) sinks.progress->clear_status();
        std::fprintf(stderr, "arun: %s: stopping the run\n", why.c_str());
        cancel.emit(asio::cancellation_type::terminal);
      });
    });
  struct forget_handler {
    io::session_store* store;
    ~forget_handler() {
      if (!store) return;
      store->flush();
      store->on_failure(nullptr);
    }
  } const forget{store};
  // docs/sessions.md, "Where sessions live": the journal is fsync'd at least once a second, also
  // while steps run long.
  asio::steady_timer syncer(ctx);
  std::function<void(const boost::system::error_code&)> on_tick = [&](const boost::system::error_code& ec) {
    if (ec) return;
    if (store) store->sync();
    syncer.expires_after(std::chrono::seconds(1));
    syncer.async_wait(on_tick);
  };
  if (store) {
    syncer.expires_after(std::chrono::seconds(1));
    syncer.async_wait(on_tick);
  }
  // Ten times a second: buffered log lines reach the files (for `arun logs -f`), and the
  // status line is brought up to date.
  asio::steady_timer ticker(ctx);
  std::function<void(const boost::system::error_code&)> on_tick_progress = [&](const boost::system::error_code& ec) {
    if (ec) return;
    if (sinks.logs) sinks.logs->flush();
    if (sinks.progress) sinks.progress->tick();
    ticker.expires_after(std::chrono::milliseconds(100));
    ticker.async_wait(on_tick_progress);
  };
  ticker.expires_after(std::chrono::milliseconds(100));
  ticker.async_wait(on_tick_progress);

  std::optional<run_result> result;
  std::exception_ptr failure;
  eng.async_run(ctx.get_executor(), loaded, std::move(options),
                asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, run_result r) {
                  failure = e;
                  result = std::move(r);
                  signals.cancel();
                  syncer.cancel();
                  ticker.cancel();
                }));
  ctx.run();
  sinks.waiting = nullptr;  // the executor goes before the sinks
  if (failure) std::rethrow_exception(failure);
  {
    auto& log = io::arun_log();
    log.info("run {} in {:.3f} s{}{}", to_string(result->status), std::chrono::duration<double>(result->duration).count(),
             result->error.empty() ? "" : ": ", masker.mask(result->error.substr(0, result->error.find('\n'))));
    if (cluster) {
      const auto st = cluster->stats();
      log.info("slurm: {} jobs submitted in {} sbatch calls ({} arrays), {} taken up from an earlier run, {} squeue "
               "calls, {} array task limit updates",
               st.submitted, st.sbatch_calls, st.arrays, st.taken_up, st.queue_polls, st.limit_updates);
    }
    if (s.reload) {
      log.info("reload: {} recorded instances kept (unchanged), {} run again (changed)", result->reused.size(),
               result->changed.size());
      for (const auto& id : result->changed) log.debug("reload: {} changed", id);
    }
  }
  if (cache && cache->foreign_entries() > 0)
    std::fprintf(stderr, "arun: warning: %llu cache entr%s in %s owned by another user ignored (only your own are reused)\n",
                 static_cast<unsigned long long>(cache->foreign_entries()), cache->foreign_entries() == 1 ? "y" : "ies",
                 cache->dir().c_str());
  if (cache && cache->stored_bytes() > 0) {
    // Past its cap the cache loses its least recently used outputs: once a run, not per store.
    std::string error;
    const auto removed = cache->trim(error);
    if (!error.empty()) io::arun_log().warn("cache: {}", error);
    for (const auto& refused : removed.refused) io::arun_log().warn("cache: {}", refused);
    if (removed.entries > 0)
      io::arun_log().info("cache: {} least recently used outputs removed ({} bytes): over --cache-max-size",
                          removed.entries, removed.bytes);
  }
  if (cluster) cluster->release_all();  // after every record the run wrote
  if (sinks.logs) sinks.logs->flush();
  drain_at_end(ctx, signals, *sinks.writer, stop_signal, emergency_exit);
  sinks.warn_failed_files();
  // The result and state.json carry stored outputs' values up to --max-output (docs/running.md,
  // "Large outputs"); the journal keeps the references.
  io::put_stored_values(*result, outputs ? &*outputs : nullptr, s.max_output);
  if (store && !store->failure().empty()) return finish_after_store_failure(*store, *result, s.output_format, masker);
  if (store) save_final_state(*store, *result);
  const io::log_locator logs = [&sinks](std::string_view instance) {
    const auto files = sinks.logs ? sinks.logs->files_of(instance) : std::vector<std::string>{};
    return files.empty() ? std::string() : files.front();
  };
  if (!print_result(*result, s.output_format, &masker, logs)) {
    // The result is not lost: the session holds it.
    if (store) std::fprintf(stderr, "arun: the run %s; its session keeps the result: arun sessions show %s\n",
                            std::string(to_string(result->status)).c_str(), store->id().c_str());
    return exit_output_failed;
  }
  if (stop_signal != 0) return 128 + stop_signal;
  if (result->status == run_status::waiting_approval) return exit_waiting_approval;
  if (result->status == run_status::budget_exhausted) return exit_budget_exhausted;
  return result->success() ? exit_success : exit_recipe_failed;
}

}  // namespace arun::cli
