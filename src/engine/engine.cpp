// The engine's entry point: one run on the caller's executor. The run's work is spawned
// apart from the caller's cancellation slot; a cancellation of the caller becomes the run's
// interrupt (stop starting work, terminate children, report), so a stop is never an exception.
#include <arun/engine.hpp>

#include "scheduler/step_executor.hpp"
#include "scheduler/task_group.hpp"

#include <arun/validation.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <ctime>

namespace arun {
namespace {

namespace asio = boost::asio;
using engine::steady;

// The read-only names of docs/reference/recipe.md, "Built-in variables"; `step` and `stage` are
// filled in per step.
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

run_status status_of(const engine::sequence_outcome& seq) {
  switch (seq.end) {
    case engine::flow::fatal: return run_status::failed;
    case engine::flow::cancelled: return run_status::cancelled;
    case engine::flow::suspend: return run_status::waiting_approval;
    case engine::flow::next:
    case engine::flow::skip_remaining:
    case engine::flow::kept_going: break;
  }
  // --keep-going ran the rest after a failure: the run still failed (docs/running.md).
  return seq.kept_going ? run_status::failed : run_status::completed;
}

asio::awaitable<void> run_recipe(engine::run_state& rs, const recipe& r, run_result& result) {
  const auto started = steady::now();
  result.started_at = std::chrono::system_clock::now();
  auto start = rs.make_event(event_kind::recipe_start);
  start.recipe_name = r.name;
  std::size_t top_level = r.steps.size();
  for (const auto& st : r.stages) top_level += st.steps.size();
  start.items = top_level;  // for a progress "[3/7]"
  rs.emit(start);

  const auto mode = rs.options.templates == template_mode::strict ? engine::undefined_mode::strict
                    : rs.options.templates == template_mode::lenient || r.lenient_templates
                        ? engine::undefined_mode::lenient
                        : engine::undefined_mode::normal;
  engine::recipe_frame frame{r, declared_names(r), mode, make_builtins(r, rs.options), "", 0, r.recursion.max_depth, {r.name}};
  frame.inherited.resources = r.resources;
  engine::step_executor top(rs, frame);
  engine::sequence_outcome seq;
  engine::context_export_cache exports;
  try {
    seq = co_await top.run_recipe(engine::scope{&result.context, nullptr, &exports}, "", rs.interrupt.get_token());
  } catch (...) {
    // An arun fault: stop the ticker so the run ends and the fault reaches the caller.
    rs.stop_heartbeats();
    rs.interrupt.request_stop();
    throw;
  }
  rs.stop_heartbeats();

  result.step_results = std::move(seq.results);
  result.status = status_of(seq);
  result.error = std::move(seq.error);
  // A run ended by a step's failure says which (the first line of its error: "step 'fan[3]':
  // exit code 1"), so a reader of the result or of state.json need not search the steps.
  if (result.status == run_status::failed && result.error.empty()) {
    const auto failed = [](const step_result& s) { return s.status == step_status::failed; };
    auto it = std::find_if(result.step_results.begin(), result.step_results.end(),
                           [&](const step_result& s) { return failed(s) && s.fatal; });
    if (it == result.step_results.end()) it = std::find_if(result.step_results.begin(), result.step_results.end(), failed);
    if (it != result.step_results.end())
      result.error = it->error.empty() ? "step '" + it->step_id + "' failed" : it->error.substr(0, it->error.find('\n'));
  }
  // Gates waited at only matter when the run stops to wait for them (a failure or a stop
  // elsewhere ends the run as that instead).
  if (result.status == run_status::waiting_approval) result.waiting = std::move(seq.waiting);
  // A stop that arrived while the last step was finishing still ends the run as cancelled.
  if (result.status == run_status::completed && rs.interrupt.stop_requested()) result.status = run_status::cancelled;
  // Steps left unstarted by the budget, not by a stop: the run is resumable with a larger one.
  if (result.status == run_status::cancelled && !rs.interrupt.stop_requested() && rs.spend.refused_count() > 0) {
    result.status = run_status::budget_exhausted;
    result.error = "the budget is reached (" + rs.spend.describe() + "): the steps not started run on a resume with a larger budget";
  }
  result.usage = rs.spend.totals();
  result.reused = std::move(rs.reused);
  result.changed = std::move(rs.changed);
  result.failed_again = std::move(rs.failed_again);
  // The denials the run ended on: a resume would meet them again (docs/sessions.md, Approvals).
  if (result.status == run_status::failed)
    for (auto& [gate, error] : rs.denied)
      if (error.substr(0, error.find('\n')) == result.error) result.denied.push_back(std::move(gate));
  if (r.output) {  // docs/reference/recipe.md, output: the named variable is the recipe's final output
    const auto* named = result.context.if_contains(*r.output);
    result.output = named ? *named : boost::json::value(nullptr);
  } else if (result.status == run_status::completed) {
    // The last step's output is the run's only when the run got to its end: a failed or
    // stopped run's "last output" is some earlier step's, which would read as the answer.
    result.output = std::move(seq.last_output);
  }
  result.duration = steady::now() - started;
  result.ended_at = result.started_at + std::chrono::duration_cast<std::chrono::system_clock::duration>(result.duration);
  auto finish = rs.make_event(event_kind::recipe_end);
  finish.recipe_name = r.name;
  finish.run = &result;
  rs.emit(finish);
}

// The run on a coroutine thread of its own, so that what it does with its cancellation state
// never touches the caller's.
asio::awaitable<run_result> run_detached(step_runner& runner, event_listener& listener, const recipe& r,
                                         run_options options) {
  // A cancelled caller must not make our own awaits throw: we turn it into the interrupt.
  co_await asio::this_coro::throw_if_cancelled(false);
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  const auto ex = co_await asio::this_coro::executor;
  run_result result;
  result.recipe_name = r.name;
  result.session_id = options.session_id;
  result.context = r.context;
  engine::run_state rs(runner, listener, std::move(options), r, ex);
  engine::task_group tasks(ex);
  tasks.spawn(run_recipe(rs, r, result));
  tasks.spawn(rs.heartbeats());
  bool interrupted = false;
  co_await tasks.join([&] {
    interrupted = true;
    rs.interrupt.request_stop();
  });
  // A stop that arrived while the last step was finishing still ends the run as cancelled.
  if (interrupted && result.status == run_status::completed) result.status = run_status::cancelled;
  co_return result;
}

}  // namespace

asio::awaitable<run_result> recipe_engine::run(const recipe& r, run_options options) {
  const auto ex = co_await asio::this_coro::executor;
  co_return co_await asio::co_spawn(ex, run_here(r, std::move(options)), asio::use_awaitable);
}

asio::awaitable<run_result> recipe_engine::run_here(const recipe& r, run_options options) {
  return run_detached(runner_, listener_, r, std::move(options));
}

}  // namespace arun
