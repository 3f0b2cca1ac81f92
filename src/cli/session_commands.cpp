// `arun resume ID` and `arun sessions list|show|clean` (docs/sessions.md, "Resume",
// "Managing sessions"): continuing a session from its recipe copy and journal, and looking after
// the session directories.
#include "commands.hpp"
#include "exit_codes.hpp"
#include "agent_setup.hpp"
#include "approvals.hpp"
#include "run_output.hpp"
#include "resumed_options.hpp"
#include "session_argument.hpp"
#include "stop_signals.hpp"

#include "files/json_text.hpp"
#include "recipe/recipe_library.hpp"
#include "session/session_lookup.hpp"
#include "session/session_store.hpp"
#include "executor/slurm_cleanup.hpp"
#include "session/workspaces.hpp"
#include "files/owned_tree.hpp"
#include "output/result_format.hpp"
#include "session/live_status.hpp"
#include "session/session_record.hpp"
#include "output/terminal_text.hpp"
#include "output/value_summary.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/printf.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <optional>
#include <sstream>
#include <variant>

namespace arun::cli {

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::vector<std::string> strings_of(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key); v && v->is_array())
    for (const auto& s : v->get_array())
      if (s.is_string()) out.emplace_back(s.get_string());
  return out;
}

bool flag_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

// The recipe options a session was started with, plus the resume's own --set values.
recipe_options recipe_options_of(const json::object& state, const std::vector<std::string>& more_sets) {
  recipe_options o;
  const auto* inv = state.if_contains("invocation");
  const json::object empty;
  const auto& i = inv && inv->is_object() ? inv->get_object() : empty;
  o.recipe = io::string_member(state, "recipe_path");
  o.working_dir = io::string_member(i, "working_dir");
  o.sets = strings_of(i, "sets");
  o.stored_sets = o.sets.size();
  o.sets.insert(o.sets.end(), more_sets.begin(), more_sets.end());
  o.recipe_dirs = strings_of(i, "recipe_dirs");
  o.agent_dirs = strings_of(i, "agent_dirs");
  o.check_agents = true;
  o.allow_missing_agents = flag_of(i, "allow_missing_agents");
  o.strict = flag_of(i, "strict");
  o.lenient = flag_of(i, "lenient");
  // A damaged state.json may hold any number: only a size in range is one.
  if (const auto* m = i.if_contains("max_recipe_bytes"); m && m->is_number())
    if (const double d = m->to_number<double>(); d >= 1 && d < 9007199254740992.0)
      o.max_recipe_bytes = static_cast<std::size_t>(d);
  return o;
}

// The agent settings the session started with, where the resume gives none.
void inherit_agent_settings(const json::object& state, agent_settings& a) {
  const auto* inv = state.if_contains("invocation");
  const auto* agents = inv && inv->is_object() ? inv->get_object().if_contains("agents") : nullptr;
  if (!agents || !agents->is_object()) return;
  const auto& o = agents->get_object();
  auto number = [&](std::string_view key, double fallback) {
    const auto* v = o.if_contains(key);
    return v && v->is_number() ? v->to_number<double>() : fallback;
  };
  if (a.cli.empty() && a.command.empty()) {
    a.cli = io::string_member(o, "cli");
    a.command = io::string_member(o, "command");
  }
  a.auto_stage = a.auto_stage || flag_of(o, "auto_stage");
  if (a.rate_limit_retries < 0) a.rate_limit_retries = static_cast<int>(number("rate_limit_retries", -1));
  if (a.rate_limit_delay < 0) a.rate_limit_delay = number("rate_limit_delay", -1);
  if (a.rate_limit_max_delay < 0) a.rate_limit_max_delay = number("rate_limit_max_delay", -1);
  if (a.rate_limit_patterns.empty()) a.rate_limit_patterns = strings_of(o, "rate_limit_patterns");
  if (a.rate_limit_fallback_model.empty()) a.rate_limit_fallback_model = io::string_member(o, "rate_limit_fallback_model");
  if (a.limits.empty()) a.limits = strings_of(o, "limits");
  // The budget is the session's: a resume without --max-cost keeps the one it ran with.
  if (a.max_cost < 0) a.max_cost = number("max_cost", -1);
  if (a.max_tokens < 0) a.max_tokens = static_cast<long long>(number("max_tokens", -1));
  if (a.prices.empty()) a.prices = io::string_member(o, "prices");
}

// The largest state.json a listing reads (a resume reads more): beyond it, "unreadable".
constexpr std::size_t listing_state_bytes = std::size_t{256} << 20;

struct listed_session {
  std::string id, dir;
  json::object state;
  std::string problem;  ///< why the state cannot be read
};

std::vector<listed_session> list_sessions(const std::string& root) {
  std::vector<listed_session> out;
  for (auto& id : io::session_ids(root)) {
    listed_session s;
    s.dir = (fs::path(root) / id).string();
    s.id = std::move(id);
    auto state = io::session_store::read_state(s.dir, listing_state_bytes);
    if (auto* problem = std::get_if<std::string>(&state))
      s.problem = *problem;
    else
      s.state = std::move(std::get<json::object>(state));
    out.push_back(std::move(s));
  }
  return out;
}

std::string progress_of(const json::object& state) {
  std::size_t done = 0, total = 0;
  if (const auto* steps = state.if_contains("steps"); steps && steps->is_array()) {
    for (const auto& s : steps->get_array()) {
      ++total;
      const auto status = s.is_object() ? io::string_member(s.get_object(), "status") : "";
      if (status == "completed" || status == "skipped" || status == "degraded") ++done;
    }
  }
  const auto* records = state.if_contains("records");
  const double count = records && records->is_number() ? records->to_number<double>() : 0;
  const auto n = count >= 0 && count < 9007199254740992.0 ? static_cast<long long>(count) : 0;
  return total ? std::to_string(done) + "/" + std::to_string(total) + " steps, " + std::to_string(n) + " instances"
               : std::to_string(n) + " instances";
}

// A live run's counts, for `progress` (its state.json counts only what it found at its start).
std::string live_progress(const io::live_status& now) {
  const auto c = now.counts();
  auto text = fmt::format("{} running, {} ended in this run ({} failed)", c.running, c.finished, c.failed);
  if (c.kept > 0) text += fmt::format(", {} kept from earlier runs", c.kept);
  return text;
}

// A session's events, read through its descriptor, never blocking (a FIFO planted as
// events.jsonl is skipped).
std::string events_of(const std::string& dir) {
  std::string why_not;
  auto session = io::owned_dir::open(dir);
  if (auto* d = std::get_if<io::owned_dir>(&session))
    return d->read_file("events.jsonl", std::size_t{1} << 30, why_not).value_or("");
  return {};
}

// The progress a listing shows: a live run's from its events (its state.json is a snapshot
// of its start), else the state's.
std::string listed_progress(const listed_session& x) {
  if (io::session_is_live(x.dir)) {
    io::live_status now;
    now.add_events(events_of(x.dir));
    if (now.active()) return live_progress(now);
  }
  return progress_of(x.state);
}

json::object live_json(const io::live_status& now, std::chrono::system_clock::time_point at) {
  const auto c = now.counts();
  json::array loops;
  for (const auto* l : now.loops()) {
    json::object loop{{"step", l->id}, {"done", l->done}, {"failed", l->failed}, {"running", l->running.size()}};
    loop["items"] = l->items ? json::value(*l->items) : json::value(nullptr);
    loops.push_back(std::move(loop));
  }
  return json::object{{"running", c.running}, {"ended", c.finished},      {"failed", c.failed},
                      {"kept", c.kept},       {"loops", std::move(loops)}, {"status_line", now.line(at, 160)}};
}

}  // namespace

int resume_command(const resume_settings& asked) {
  const auto named = find_named_session(asked.run.session_dir, asked.session_id);
  if (!named) return exit_usage;
  // From here on the session's full id, whatever form of it was given.
  resume_settings r = asked;
  r.session_id = named->id;
  // `resume last`: which session that is, with whatever refuses it.
  const std::string which = named->newest ? "the newest session, " + r.session_id + "," : "session " + r.session_id;
  auto opened = io::session_store::open(named->root, r.session_id, r.retry_failed);
  if (auto* error = std::get_if<std::string>(&opened)) {
    std::fprintf(stderr, "arun: cannot resume%s: %s\n", named->newest ? (" the newest session, " + r.session_id).c_str() : "",
                 error->c_str());
    return exit_usage;
  }
  auto& store = *std::get<std::unique_ptr<io::session_store>>(opened);
  for (const auto& notice : store.notices()) std::fprintf(stderr, "arun: warning: %s\n", notice.c_str());
  const auto status = io::string_member(store.state(), "status");
  // A completed session runs again only what --retry-failed or --reload asks for.
  if (status == "completed" && !r.reload && !(r.retry_failed && store.instances_to_run_again() > 0)) {
    const auto failed = store.failures_kept();
    if (r.retry_failed)
      std::fprintf(stderr, "arun: %s has completed and no instance of it failed; there is nothing to retry\n", which.c_str());
    else if (failed > 0)
      std::fprintf(stderr,
                   "arun: %s has completed; %zu instance%s failed without stopping it (to run them again: "
                   "arun resume %s --retry-failed)\n",
                   which.c_str(), failed, failed == 1 ? "" : "s", r.session_id.c_str());
    else
      std::fprintf(stderr, "arun: %s has completed; there is nothing to resume (after editing its recipe: arun resume %s --reload)\n",
                   which.c_str(), r.session_id.c_str());
    return exit_success;
  }
  auto loaded_sources = io::session_sources::load(store.dir());
  if (auto* error = std::get_if<std::string>(&loaded_sources)) {
    std::fprintf(stderr, "arun: cannot resume: %s\n", error->c_str());
    return exit_usage;
  }
  auto& copies = *std::get<std::unique_ptr<io::session_sources>>(loaded_sources);
  // An edited recipe is said before anything runs: without --reload the copies run.
  const auto changed = copies.changed_on_disk();
  if (!changed.empty() && !r.reload) {
    std::string files;
    for (const auto& f : changed) files += "\n  " + io::printable_text(f);  // names from the session's files
    std::fprintf(stderr,
                 "arun: warning: %zu recipe file%s changed since session %s started:%s\n"
                 "arun: resuming with the session's copies; to run the edited files: arun resume %s --reload\n",
                 changed.size(), changed.size() == 1 ? "" : "s", r.session_id.c_str(), files.c_str(),
                 r.session_id.c_str());
  }
  // --reload reads the files anew and keeps the new copies in the session.
  io::session_sources fresh;
  auto& sources = r.reload ? fresh : copies;
  run_settings s = r.run;
  s.reload = r.reload;
  s.recipe = recipe_options_of(store.state(), r.sets);
  // Secrets are never kept: those of --secret-env and --secret-file are read again, those of
  // --secret must be given again (the recipe's own `secrets:` come from the environment as before).
  s.recipe.secrets = r.run.recipe.secrets;
  s.recipe.secret_files = r.run.recipe.secret_files;
  s.recipe.secret_envs = r.run.recipe.secret_envs;
  s.recipe.resolve_secrets = true;
  if (const auto* inv = store.state().if_contains("invocation"); inv && inv->is_object())
    if (const auto* listed = inv->get_object().if_contains("secrets"); listed && listed->is_array())
      for (const auto& entry : listed->get_array()) {
        if (!entry.is_object()) continue;
        const auto name = io::string_member(entry.get_object(), "name");
        const auto given = [&](const std::vector<std::string>& list) {
          return std::any_of(list.begin(), list.end(),
                             [&](const std::string& x) { return x == name || x.starts_with(name + "="); });
        };
        if (name.empty() || given(s.recipe.secrets) || given(s.recipe.secret_files) || given(s.recipe.secret_envs))
          continue;
        const auto source = io::string_member(entry.get_object(), "source");
        if (source == "flag") {
          std::fprintf(stderr,
                       "arun: cannot resume: session %s was run with --secret %s, which is never stored; give it "
                       "again: arun resume %s --secret %s (then type or pipe the value), or --secret-file %s=PATH\n",
                       r.session_id.c_str(), io::printable_text(name).c_str(), r.session_id.c_str(),
                       io::printable_text(name).c_str(), io::printable_text(name).c_str());
          return exit_usage;
        }
        if (const auto path = io::string_member(entry.get_object(), "path"); source == "file" && !path.empty())
          s.recipe.secret_files.push_back(name + "=" + path);
        else
          s.recipe.secret_envs.push_back(name);
      }
  inherit_agent_settings(store.state(), s.agents);
  if (s.recipe.recipe.empty()) {
    std::fprintf(stderr, "arun: cannot resume: the session's state.json names no recipe\n");
    return exit_usage;
  }
  // The recipe as it was when the session started: recipe.yaml, under its original path.
  if (!r.reload && !sources.saved(s.recipe.recipe)) {
    std::ifstream in(store.dir() + "/recipe.yaml", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    sources.read(s.recipe.recipe, text);
  }
  s.recipe.sources = &sources;
  add_limit_checks(s.agents, s.recipe);
  // Limits kept from the run were judged when it started: only ones given now are checked.
  if (r.run.agents.limits.empty()) s.recipe.limit_names.clear();
  auto input = load_recipe_input(s.recipe, true);
  if (!input.value) return input.exit_code;
  hold_stop_signals();  // until the resumed run handles them (stop_signals.hpp)
  // Only now that the edited files loaded do they become the session's copies.
  if (r.reload) fresh.attach(store.dir());
  if (r.reload)
    if (const auto copy = fresh.copy_of(s.recipe.recipe))
      if (const auto error = io::write_file_atomically(store.dir() + "/recipe.yaml", *copy); !error.empty())
        std::fprintf(stderr, "arun: warning: cannot keep the edited recipe in the session: %s\n", error.c_str());
  // -k given to the run holds for its resumes.
  if (const auto* inv = store.state().if_contains("invocation"); inv && inv->is_object()) {
    s.keep_going = s.keep_going || flag_of(inv->get_object(), "keep_going");
    // -j, tags, limits of output and time: as the run had them, unless given again now.
    if (const auto* ex = inv->get_object().if_contains("execution"); ex && ex->is_object())
      keep_execution_options(s, ex->get_object(), r.given);
  }
  // A resumed run goes on where it ran (unless --executor says otherwise).
  if (const auto* inv = store.state().if_contains("invocation"); inv && inv->is_object())
    if (const auto* ex = inv->get_object().if_contains("executor"); ex && ex->is_object()) {
      const auto name = io::string_member(ex->get_object(), "name");
      if (s.executor.empty()) s.executor = name;
      if (s.shared_dir.empty() && s.executor == name) s.shared_dir = io::string_member(ex->get_object(), "shared_dir");
      if (s.pending_timeout.empty() && s.executor == name) s.pending_timeout = io::string_member(ex->get_object(), "pending_timeout");
    }
  // So does the cache it used: the same directory, off when it was off (unless told now).
  if (const auto* inv = store.state().if_contains("invocation"); inv && inv->is_object())
    if (const auto* c = inv->get_object().if_contains("cache"); c && c->is_object()) {
      const auto& cache = c->get_object();
      if (s.cache_dir.empty()) s.cache_dir = io::string_member(cache, "dir");
      s.no_cache = s.no_cache || (flag_of(cache, "off") && s.refresh_cache.empty());
      s.keep_worktrees = s.keep_worktrees || flag_of(cache, "keep_worktrees");
      if (const auto* max = cache.if_contains("max_bytes"); max && max->is_number() && s.cache_max_bytes == (std::uint64_t{1} << 30))
        s.cache_max_bytes = max->to_number<std::uint64_t>();
    }
  std::error_code ec;
  if (!fs::is_directory(s.recipe.working_dir, ec)) {
    std::fprintf(stderr, "arun: cannot resume: the session's working directory %s is gone\n",
                 io::printable_text(s.recipe.working_dir).c_str());
    return exit_usage;
  }
  auto& state = store.state();
  // A later resume keeps this one's --set values too, and its cache.
  if (auto* inv = state.if_contains("invocation"); inv && inv->is_object()) {
    inv->get_object()["sets"] = json::array(s.recipe.sets.begin(), s.recipe.sets.end());
    inv->get_object()["cache"] = cache_invocation(s);
    inv->get_object()["execution"] = execution_invocation(s);
    inv->get_object()["keep_going"] = s.keep_going;
  }
  if (auto* inv = state.if_contains("invocation"); inv && inv->is_object()) {
    json::array secrets;
    for (const auto& secret : input.secrets) secrets.push_back({{"name", secret.name}, {"source", secret.source}});
    inv->get_object()["secrets"] = std::move(secrets);
  }
  // So do its budget, limits and prices: a plain `arun resume ID` after one with
  // --max-cost must not fall back to the first run's budget.
  if (auto* inv = state.if_contains("invocation"); inv && inv->is_object())
    if (auto* agents = inv->get_object().if_contains("agents"); agents && agents->is_object()) {
      const auto& a = s.agents;
      auto& o = agents->get_object();
      o["limits"] = json::array(a.limits.begin(), a.limits.end());
      o["max_cost"] = a.max_cost;
      o["max_tokens"] = a.max_tokens;
      std::error_code abs_ec;
      o["prices"] = a.prices.empty() ? std::string() : fs::absolute(a.prices, abs_ec).lexically_normal().string();
    }
  const auto* resumes = state.if_contains("resumes");
  state["resumes"] = (resumes && resumes->is_int64() ? resumes->get_int64() : 0) + 1;
  if (!s.quiet && r.reload)
    std::fprintf(stderr,
                 "arun: resuming session %s with the recipe files as they are now (%zu changed); each of the %zu "
                 "finished instances is kept only if its step and inputs are unchanged\n",
                 r.session_id.c_str(), changed.size(), store.resumed_records());
  else if (!s.quiet)
    std::fprintf(stderr, "arun: resuming session %s (%zu finished instance%s kept)\n", r.session_id.c_str(),
                 store.resumed_records(), store.resumed_records() == 1 ? "" : "s");
  return execute_run(s, input, s.recipe.working_dir, r.session_id, &store);
}

int decide_command(const sessions_settings& given, const decision_settings& d) {
  const char* verb = d.approve ? "approve" : "deny";
  const auto named = find_named_session(given.session_dir, given.session_id);
  if (!named) return exit_usage;
  sessions_settings s = given;
  s.session_id = named->id;
  auto opened = io::session_store::open(named->root, s.session_id, false);
  if (auto* error = std::get_if<std::string>(&opened)) {
    std::fprintf(stderr, "arun: cannot %s: %s\n", verb, error->c_str());
    return exit_usage;
  }
  auto& store = *std::get<std::unique_ptr<io::session_store>>(opened);
  const auto done = record_decision(store, d);
  if (!done.error.empty()) {
    std::fprintf(stderr, "arun: cannot %s: %s\n", verb, done.error.c_str());
    return exit_usage;
  }
  std::string names;
  for (const auto& g : done.decided) names += (names.empty() ? "" : ", ") + g;
  std::fprintf(stderr, "arun: %s %s in session %s\n", d.approve ? "approved" : "denied", names.c_str(),
               s.session_id.c_str());
  if (!done.undecided.empty())
    std::fprintf(stderr, "arun: %zu more gate%s still wait%s for a decision (arun approve %s --step INSTANCE, or --all)\n",
                 done.undecided.size(), done.undecided.size() == 1 ? "" : "s", done.undecided.size() == 1 ? "s" : "",
                 s.session_id.c_str());
  if (d.approve)
    std::fprintf(stderr, "arun: continue it with: arun resume %s\n", s.session_id.c_str());
  else
    std::fprintf(stderr, "arun: arun resume %s applies the denial: the gate fails, and its on_error decides what "
                         "happens next\n", s.session_id.c_str());
  return exit_success;
}

// The listings are built in `text` and written in one go at the end, so a reader that stops
// early (`| head`) is told apart from a stdout that cannot be written (write_stdout).
// exit_success once `text` reached stdout, else exit_output_failed (said on stderr).
static int print_all(const std::string& text) { return write_stdout(text) ? exit_success : exit_output_failed; }

int sessions_list_command(const sessions_settings& s) {
  std::string text;
  const auto checked = io::checked_session_root(s.session_dir, io::trust_mode::look);
  if (!checked.ok()) {
    std::fprintf(stderr, "arun: %s\n", checked.error.c_str());
    return exit_usage;
  }
  const auto& root = checked.path;
  const auto sessions = list_sessions(root);
  if (s.output_format == "json") {
    json::array out;
    for (const auto& x : sessions)
      out.push_back(json::object{{"session_id", x.id},
                                 {"status", x.problem.empty() ? io::string_member(x.state, "status") : "unreadable"},
                                 {"recipe", io::string_member(x.state, "recipe_name")},
                                 {"updated", io::string_member(x.state, "updated")},
                                 {"progress", x.problem.empty() ? listed_progress(x) : x.problem}});
    return print_all(io::to_json_text(out) + "\n");
  }
  if (sessions.empty()) std::fprintf(stderr, "arun: no sessions in %s\n", root.c_str());
  for (const auto& x : sessions) {
    // What a session's files say is shown escaped: no state.json drives the terminal.
    const auto shown = [&x](std::string_view key, std::string fallback = {}) {
      return io::printable_text(io::string_member(x.state, key, std::move(fallback)));
    };
    if (!x.problem.empty()) {
      text += fmt::sprintf("%-24s %-17s %s\n", x.id.c_str(), "unreadable", io::printable_text(x.problem).c_str());
      continue;
    }
    text += fmt::sprintf("%-24s %-17s %-24s %s  %s\n", x.id.c_str(), shown("status").c_str(), shown("recipe_name").c_str(),
                         listed_progress(x).c_str(), shown("updated", io::string_member(x.state, "created")).c_str());
  }
  return print_all(text);
}

int sessions_show_command(const sessions_settings& given) {
  std::string text;
  const auto named = find_named_session(given.session_dir, given.session_id);
  if (!named) return exit_usage;
  sessions_settings s = given;
  s.session_id = named->id;
  const auto dir = named->dir();
  auto state = io::session_store::read_state(dir);
  if (auto* problem = std::get_if<std::string>(&state)) {
    std::fprintf(stderr, "arun: %s\n", problem->c_str());
    return exit_usage;
  }
  const auto& st = std::get<json::object>(state);
  // The events, read through the session's descriptor, never blocking (a FIFO planted as
  // events.jsonl is skipped): the last ones are shown, and a live run's are counted.
  const std::string events = events_of(dir);
  const bool live = io::session_is_live(dir);
  // A live run's state.json is a snapshot of its start: what runs now is in its events.
  io::live_status now;
  if (live) now.add_events(events);
  const auto wall_now = std::chrono::system_clock::now();
  if (s.output_format == "json") {
    if (!live || !now.active()) return print_all(io::to_json_text(st) + "\n");
    auto shown = st;
    shown["live"] = live_json(now, wall_now);
    return print_all(io::to_json_text(shown) + "\n");
  }
  // What the session's files say is shown escaped: no state.json or event drives the terminal.
  const auto shown = [&st](std::string_view key, std::string fallback = {}) {
    return io::printable_text(io::string_member(st, key, std::move(fallback)));
  };
  text += fmt::sprintf("session  %s\nstatus   %s%s\nrecipe   %s (%s)\nupdated  %s\nprogress %s\n",
                       s.session_id.c_str(), shown("status").c_str(), live ? " (held by a running arun)" : "",
                       shown("recipe_name").c_str(), shown("recipe_path").c_str(),
                       shown("updated", io::string_member(st, "created")).c_str(),
                       live && now.active() ? live_progress(now).c_str() : progress_of(st).c_str());
  if (live && now.active())
    text += fmt::sprintf("now      %s\n", io::printable_text(now.line(wall_now, 160)).c_str());
  if (const auto* output = st.if_contains("output"); output && !output->is_null())
    text += fmt::sprintf("output   %s\n", io::printable_text(io::value_line(*output, 200)).c_str());
  if (const auto error = io::string_member(st, "error"); !error.empty())
    text += fmt::sprintf("error    %s\n", io::printable_text(error.substr(0, error.find('\n'))).c_str());
  if (std::error_code ec; fs::is_directory(dir + "/logs", ec))
    text += fmt::sprintf("logs     arun logs %s [INSTANCE-GLOB]\n", s.session_id.c_str());
  // What failed, by name (the journal's last word on each instance): the first ten.
  {
    const auto failed = io::failed_in_session(dir);
    constexpr std::size_t shown_failures = 10;
    // A loop's or a call's record repeats the error of the instance inside that failed: said once.
    std::set<std::string, std::less<>> instances;
    for (const auto& f : failed) instances.insert(f.instance);
    std::vector<const arun::failed_instance*> own;
    for (const auto& f : failed)
      if (const auto origin = io::failure_origin(f.error); origin == f.instance || !instances.contains(origin))
        own.push_back(&f);
    for (std::size_t i = 0; i < own.size() && i < shown_failures; ++i)
      text += fmt::sprintf("failed   %s\n", io::printable_text(own[i]->error.empty() ? own[i]->instance : own[i]->error).c_str());
    if (own.size() > shown_failures)
      text += fmt::sprintf("failed   … and %zu more (arun logs %s --failed)\n", own.size() - shown_failures,
                           s.session_id.c_str());
  }
  for (const auto& gate : waiting_gates(st))
    text += fmt::sprintf("waiting  approval at %s: %s\n", io::printable_text(gate.step).c_str(),
                         io::printable_text(gate.prompt).c_str());
  // The last events, one line each; the file read through the session's descriptor, never
  // blocking (a FIFO planted as events.jsonl is skipped).
  std::vector<std::string> lines;
  {
    std::istringstream in(events);
    for (std::string line; std::getline(in, line);) {
      lines.push_back(std::move(line));
      if (lines.size() > 10) lines.erase(lines.begin());
    }
  }
  if (!lines.empty()) text += fmt::sprintf("last events:\n");
  for (const auto& line : lines) {
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (ec || !v.is_object()) continue;
    const auto& e = v.get_object();
    // What each event says: an output line's text, an end's status and error, a warning.
    std::string what = io::string_member(e, "status");
    if (io::string_member(e, "event") == "step_output")
      what = "| " + io::shortened_line(io::string_member(e, "line"), 160);
    else if (const auto error = io::string_member(e, "error"); !error.empty())
      what += ": " + io::shortened_line(error.substr(0, error.find('\n')), 160);
    else if (const auto message = io::string_member(e, "message"); !message.empty())
      what = io::shortened_line(message, 160);
    text += fmt::sprintf("  %s %-14s %s %s\n", io::printable_text(io::string_member(e, "ts")).c_str(),
                         io::printable_text(io::string_member(e, "event")).c_str(), io::printable_text(io::string_member(e, "step")).c_str(),
                         io::printable_text(what).c_str());
  }
  return print_all(text);
}

namespace {

// A session arun made: a real directory (not a symlink) of the user's, named as arun names
// sessions, with its `lock` file.
bool made_by_arun(const io::owned_dir& root, const std::string& id) {
  if (!io::valid_session_id(id)) return false;
  struct stat st {};
  if (::fstatat(root.fd(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return false;
  return ::fstatat(root.fd(), (id + "/lock").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

// What a Slurm run of the session left in SHARED/jobs/SESSION of its --shared-dir
// (docs/scale-out.md, "Job files"); empty, or why it stays.
static std::string remove_shared_job_files(const json::object& state, const std::string& id, const std::string& dir) {
  const auto* inv = state.if_contains("invocation");
  const auto* ex = inv && inv->is_object() ? inv->get_object().if_contains("executor") : nullptr;
  if (!ex || !ex->is_object() || io::string_member(ex->get_object(), "name") != "slurm") return {};
  const auto shared_dir = io::string_member(ex->get_object(), "shared_dir");
  if (shared_dir.empty() || !fs::path(shared_dir).is_absolute()) return {};
  return io::remove_slurm_session_files(shared_dir, id, dir + "/slurm-jobs");
}

namespace {

enum class removal { done, held, failed };

// Removes the session `id` below `root` (one made_by_arun) under its lock, so that no resume
// starts on it meanwhile: its isolated steps' trees unregistered first, its Slurm jobs' files
// on a --shared-dir elsewhere, then the directory. `held`: a running arun holds it, nothing
// is removed; `failed`: said on stderr. A dry run only takes the lock.
removal remove_session(const io::owned_dir& root, const std::string& id, const json::object& state, bool dry_run) {
  const auto dir = root.path() + "/" + id;
  const int lock = ::openat(root.fd(), (id + "/lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (lock >= 0 && ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return removal::held;
  }
  std::string problem;
  if (!dry_run) {
    for (const auto& tree : io::kept_session_trees(dir))
      std::fprintf(stderr, "arun: %s: removing its kept tree %s\n", id.c_str(), tree.c_str());
    // Removing the directories alone would leave the worktrees registered in their checkouts
    // (branches stay: they hold the work).
    for (const auto& p : io::remove_session_workspaces(dir))
      std::fprintf(stderr, "arun: warning: %s: %s\n", id.c_str(), p.c_str());
    // (In the session's own directory they go with it.)
    if (const auto files = remove_shared_job_files(state, id, dir); !files.empty())
      std::fprintf(stderr, "arun: %s: %s\n", id.c_str(), files.c_str());
    problem = root.remove(id);
  }
  if (lock >= 0) ::close(lock);
  if (problem.empty()) return removal::done;
  std::fprintf(stderr, "arun: cannot remove session %s: %s\n", id.c_str(), problem.c_str());
  return removal::failed;
}

}  // namespace

prune_report prune_sessions(const std::string& root, const prune_rule& rule, bool verbose) {
  prune_report report;
  // Everything removed is below the root's descriptor: no session name, and nothing in a
  // session, leads a removal out of it (docs/security.md, "Paths arun deletes or follows").
  auto opened = io::owned_dir::open(root, io::owned_dir::link::follow);
  if (auto* error = std::get_if<std::string>(&opened)) {
    std::error_code ec;
    if (fs::exists(root, ec)) std::fprintf(stderr, "arun: warning: not pruning sessions: %s\n", error->c_str());
    return report;
  }
  const auto& root_dir = std::get<io::owned_dir>(opened);
  const auto now = fs::file_time_type::clock::now();
  const auto limit = std::chrono::duration_cast<fs::file_time_type::duration>(
      std::chrono::duration<double>(rule.older_than_days.value_or(0) * 86400.0));
  // Age: the last time the session changed (state.json, else the directory); the count keeps
  // the most recently changed (ids order by the second a session started only). Only what is
  // surely a session goes: an id arun makes, a lock, a readable state (a damaged one can be
  // rebuilt, and may wait for approval); anything else under the root stays. Every run starts
  // with this prune, so a state is read only when the rule would remove its session: reading
  // all 200 kept sessions' state.json cost a short run more than its steps.
  struct dated_session {
    fs::file_time_type changed;
    std::string id, dir;
  };
  std::vector<dated_session> sessions;
  for (auto& id : io::session_ids(root)) {
    std::error_code ec;
    auto dir = (fs::path(root) / id).string();
    if (!made_by_arun(root_dir, id)) {
      if (verbose) std::fprintf(stderr, "arun: leaving %s alone (not a session)\n", dir.c_str());
      continue;
    }
    auto changed = fs::last_write_time(dir + "/state.json", ec);
    if (ec) changed = fs::last_write_time(dir, ec);
    if (!ec) sessions.push_back({changed, std::move(id), std::move(dir)});
  }
  std::stable_sort(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) { return a.changed > b.changed; });
  std::size_t index = 0;
  for (const auto& x : sessions) {
    const bool beyond_count = rule.keep_newest && index++ >= *rule.keep_newest;
    const bool too_old = rule.older_than_days && now - x.changed >= limit;
    if (!too_old && !beyond_count) continue;
    const auto state = io::session_store::read_state(x.dir);
    if (const auto* problem = std::get_if<std::string>(&state)) {
      if (verbose) std::fprintf(stderr, "arun: leaving %s alone (%s)\n", x.dir.c_str(), problem->c_str());
      continue;
    }
    if (io::string_member(std::get<json::object>(state), "status") == "waiting_approval") {
      ++report.kept;
      if (verbose) std::fprintf(stderr, "arun: keeping %s (waiting for approval)\n", x.id.c_str());
      continue;
    }
    // Kept worktrees and copies hold work no commit has (a failed step's edits): the automatic
    // prune never takes them; `arun sessions clean` does, when the user asks (docs/sessions.md).
    const auto trees = io::kept_session_trees(x.dir);
    if (rule.spare_kept_trees && !trees.empty()) {
      ++report.kept;
      report.spared.push_back(x.id);
      continue;
    }
    switch (remove_session(root_dir, x.id, std::get<json::object>(state), rule.dry_run)) {
      case removal::held:
        ++report.kept;
        if (verbose) std::fprintf(stderr, "arun: keeping %s (held by a running arun)\n", x.id.c_str());
        break;
      case removal::failed: break;
      case removal::done: report.removed.push_back(x.id); break;
    }
  }
  return report;
}

// `arun sessions clean ID`: that session alone, whatever its age, state or kept trees; the
// same checks as the prune's otherwise (made by arun, never one a running arun holds).
static int clean_one_session(const sessions_settings& s) {
  const auto named = find_named_session(s.session_dir, s.session_id);
  if (!named) return exit_usage;
  auto opened = io::owned_dir::open(named->root, io::owned_dir::link::follow);
  if (auto* error = std::get_if<std::string>(&opened)) {
    std::fprintf(stderr, "arun: cannot remove session %s: %s\n", named->id.c_str(), error->c_str());
    return exit_usage;
  }
  if (!made_by_arun(std::get<io::owned_dir>(opened), named->id)) {
    std::fprintf(stderr, "arun: %s is not a session directory arun made (an id of its own, with its lock); left alone\n",
                 named->dir().c_str());
    return exit_usage;
  }
  // A damaged state.json does not keep it: what it says is needed only for Slurm's job files.
  auto state = io::session_store::read_state(named->dir());
  const auto* readable = std::get_if<json::object>(&state);
  switch (remove_session(std::get<io::owned_dir>(opened), named->id, readable ? *readable : json::object(), s.dry_run)) {
    case removal::held:
      std::fprintf(stderr, "arun: cannot remove session %s: a running arun holds it\n", named->id.c_str());
      return exit_usage;
    case removal::failed: return exit_usage;
    case removal::done: break;
  }
  std::printf("%s %s\n", s.dry_run ? "would remove" : "removed", named->id.c_str());
  return exit_success;
}

int sessions_clean_command(const sessions_settings& s) {
  if (!s.session_id.empty()) return clean_one_session(s);
  prune_rule rule;
  rule.older_than_days = s.older_than_days;
  rule.dry_run = s.dry_run;
  const auto root = io::checked_session_root(s.session_dir, io::trust_mode::look);
  if (!root.ok()) {
    std::fprintf(stderr, "arun: %s\n", root.error.c_str());
    return exit_usage;
  }
  const auto report = prune_sessions(root.path, rule, true);
  for (const auto& id : report.removed) std::printf("%s %s\n", s.dry_run ? "would remove" : "removed", id.c_str());
  std::fprintf(stderr, "arun: %zu session(s) %s, %zu kept\n", report.removed.size(),
               s.dry_run ? "would be removed (--dry-run: nothing was)" : "removed", report.kept);
  return exit_success;
}

}  // namespace arun::cli
