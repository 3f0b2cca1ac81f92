#include <arun/engine.hpp>

#include "output_value.hpp"
#include "step_preparation.hpp"

#include <arun/validation.hpp>

#include <boost/asio/this_coro.hpp>

#include <ctime>

namespace arun {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

event make_event(event_kind kind, const run_options& options) {
  event e;
  e.kind = kind;
  e.session_id = options.session_id;
  return e;
}

event make_step_event(event_kind kind, const run_options& options, const step& s) {
  auto e = make_event(kind, options);
  e.step = s.id;
  e.step_type = "bash";
  return e;
}

std::optional<std::chrono::nanoseconds> effective_timeout(const step& s, const recipe& r) {
  const auto t = s.timeout ? s.timeout : r.default_step_timeout;
  // 0 means no limit (SPEC §3.1); so does anything beyond ~31 years, which would overflow.
  constexpr double longest_seconds = 1e9;
  if (!t || t->count() <= 0 || !(t->count() < longest_seconds)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(*t);
}

// Turns what the runner observed into the step's result (SPEC §3.6, §4).
step_result to_step_result(const step& s, leaf_outcome&& o) {
  step_result r;
  r.step_id = s.id;
  r.attempts = o.started ? 1 : 0;
  r.exit_code = o.exit_code;
  r.signal = o.signal;
  r.timed_out = o.timed_out;
  r.truncated = o.truncated;
  r.duration = o.duration;
  if (o.succeeded()) {
    r.status = step_status::completed;
    r.output = engine::output_value(o.stdout_text);
    return r;
  }
  r.status = o.cancelled ? step_status::cancelled : step_status::failed;
  r.error = "step '" + s.id + "': " + o.error;
  if (!o.snippet.empty()) r.error += "\n" + o.snippet;
  return r;
}

// SPEC §5.1's read-only names; `step` is filled in per step.
boost::json::object make_builtins(const recipe& r, const run_options& options) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const auto& wd = options.working_dir;
  const auto slash = wd.find_last_of('/');
  boost::json::object b;
  b["recipe"] = {{"name", r.name}, {"version", r.version}, {"description", r.description}};
  b["session"] = {{"id", options.session_id}, {"started", started}, {"working_dir", wd},
                  {"project", slash == std::string::npos ? wd : wd.substr(slash + 1)}};
  return b;
}

}  // namespace

asio::awaitable<run_result> recipe_engine::run(const recipe& r, run_options options) {
  const auto started = clock::now();
  run_result result;
  result.recipe_name = r.name;
  result.session_id = options.session_id;
  result.context = r.context;
  const auto declared = declared_names(r);
  const auto mode = options.templates == template_mode::strict ? engine::undefined_mode::strict
                    : options.templates == template_mode::lenient || r.lenient_templates ? engine::undefined_mode::lenient
                                                                                          : engine::undefined_mode::normal;

  auto builtins = make_builtins(r, options);
  auto start = make_event(event_kind::recipe_start, options);
  start.recipe_name = r.name;
  listener_.on_event(start);

  auto warn = [&](const step& s, const std::vector<std::string>& warnings) {
    for (const auto& w : warnings) {
      auto e = make_step_event(event_kind::warning, options, s);
      e.message = w;
      listener_.on_event(e);
    }
  };
  auto finish_step = [&](const step& s, step_result&& res) {
    result.step_results.push_back(std::move(res));
    auto end = make_step_event(event_kind::step_end, options, s);
    end.result = &result.step_results.back();
    listener_.on_event(end);
  };

  bool stopped = false;  // a fatal failure or a cancellation ended the run
  for (const auto& s : r.steps) {
    if (!stopped && (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      stopped = true;
      result.status = run_status::cancelled;
    }
    if (stopped) {
      step_result skipped;
      skipped.step_id = s.id;
      skipped.status = step_status::not_run;
      result.step_results.push_back(std::move(skipped));
      continue;
    }

    builtins["step"] = {{"id", s.id}, {"index", result.step_results.size()}};
    const engine::render_scope scope{result.context, &declared, mode, &builtins};
    const auto verdict = engine::check_condition(s, scope);
    warn(s, verdict.warnings);
    auto prepared = verdict.error.empty() && verdict.run ? engine::prepare_bash(s, scope) : engine::prepared_bash{};
    warn(s, prepared.warnings);
    const auto& refusal = !verdict.error.empty() ? verdict.error : prepared.error;
    if (!refusal.empty() || !verdict.run) {
      // The step never starts: its condition was false, or it could not be prepared.
      step_result res;
      res.step_id = s.id;
      res.status = refusal.empty() ? step_status::skipped : step_status::failed;
      res.error = refusal.empty() ? std::string() : "step '" + s.id + "': " + refusal;
      if (!refusal.empty()) {
        stopped = true;
        result.status = run_status::failed;
      }
      finish_step(s, std::move(res));
      continue;
    }

    listener_.on_event(make_step_event(event_kind::step_start, options, s));
    bash_invocation inv = std::move(prepared.invocation);
    inv.timeout = effective_timeout(s, r);
    inv.on_line = [this, &options, &s](output_stream stream, std::string_view line, bool cut) {
      auto e = make_step_event(event_kind::step_output, options, s);
      e.stream = stream;
      e.line = line;
      e.line_truncated = cut;
      listener_.on_event(e);
    };
    auto outcome = co_await runner_.run_bash(std::move(inv));
    auto step_res = to_step_result(s, std::move(outcome));

    if (step_res.status == step_status::completed) {
      result.output = step_res.output;
      if (s.output) result.context[*s.output] = step_res.output;
    } else {
      stopped = true;
      result.status = step_res.status == step_status::cancelled ? run_status::cancelled : run_status::failed;
    }
    finish_step(s, std::move(step_res));
  }

  if (r.output) {  // SPEC §2: the named variable is the recipe's final output
    const auto it = result.context.find(*r.output);
    result.output = it != result.context.end() ? it->value() : boost::json::value(nullptr);
  }
  // A stop requested while the last step was finishing still ends the run as cancelled.
  if (result.status == run_status::completed &&
      (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
    result.status = run_status::cancelled;
  result.duration = clock::now() - started;
  auto finish = make_event(event_kind::recipe_end, options);
  finish.recipe_name = r.name;
  finish.run = &result;
  listener_.on_event(finish);
  co_return result;
}

}  // namespace arun
