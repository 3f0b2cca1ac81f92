// `timeout` on steps that contain other steps (docs/reference/recipe.md, "Timeouts"): a sub-recipe
// call (per attempt) and a loop with a `steps:` body. A leaf's timeout is the runner's business
// (SIGTERM, grace, SIGKILL on its process group); here the deadline stops the container's
// scope, which stops its children the same way. `default_step_timeout` applies to leaves
// only: a recipe-wide limit meant for one command must not cut a whole sub-recipe short.
#include "scheduler/step_executor.hpp"

#include <arun/value_format.hpp>

#include <boost/asio/steady_timer.hpp>

#include <memory>

namespace arun::engine {
namespace {

struct deadline_state {
  std::stop_source stop;
  bool expired = false;
};

std::optional<std::chrono::nanoseconds> own_timeout(const step& s) {
  constexpr double longest_seconds = 1e9;  // beyond ~31 years: no limit (and no overflow)
  if (!s.timeout || !(s.timeout->count() > 0) || !(s.timeout->count() < longest_seconds)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(*s.timeout);
}

}  // namespace

boost::asio::awaitable<instance_outcome> step_executor::run_container(container_kind kind, const step& s, scope sc,
                                                                      const std::string& instance, int attempt,
                                                                      std::stop_token stop) {
  switch (kind) {
    case container_kind::recipe_call: co_return co_await run_recipe_call(s, sc, instance, attempt, stop);
    case container_kind::foreach: co_return co_await run_foreach(s, sc, instance, stop);
    case container_kind::loop_while: break;
  }
  co_return co_await run_while(s, sc, instance, stop);
}

boost::asio::awaitable<instance_outcome> step_executor::run_with_deadline(container_kind kind, const step& s, scope sc,
                                                                          const std::string& instance, int attempt,
                                                                          std::stop_token stop) {
  const auto limit = own_timeout(s);
  if (!limit) co_return co_await run_container(kind, s, sc, instance, attempt, stop);
  // Shared with the timer's handler, which may run after this frame is gone.
  auto state = std::make_shared<deadline_state>();
  std::stop_callback forward(stop, [state] { state->stop.request_stop(); });
  boost::asio::steady_timer timer(rs_.executor, *limit);
  timer.async_wait([state](boost::system::error_code ec) {
    if (ec) return;
    state->expired = true;
    state->stop.request_stop();
  });
  auto o = co_await run_container(kind, s, sc, instance, attempt, state->stop.get_token());
  timer.cancel();
  const auto st = o.result.status;
  if (state->expired && st != step_status::completed && st != step_status::degraded) {
    o.result.status = step_status::failed;
    o.result.timed_out = true;
    o.result.error = "step '" + instance + "': timed out after " + format_number(s.timeout->count()) +
                     "s; the steps it was running were stopped";
    o.next = failure_flow(s, rs_.options.keep_going);
    o.updates = {};
    o.waiting.clear();  // the container failed: gates that waited inside it no longer do
  }
  co_return o;
}

}  // namespace arun::engine
