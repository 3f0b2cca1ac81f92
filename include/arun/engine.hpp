#pragma once
/// The engine: runs a recipe on the caller's io_context. Embedders co_await engine::run.

#include <arun/events.hpp>
#include <arun/recipe.hpp>
#include <arun/results.hpp>
#include <arun/step_runner.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>

namespace arun {

/// How references without a value behave (SPEC §5.2): `--lenient`, default, `--strict`.
enum class template_mode { lenient, normal, strict };

struct run_options {
  std::string session_id;  ///< reported in events and the result
  template_mode templates = template_mode::normal;  ///< a recipe's lenient_templates also applies
  std::string working_dir;  ///< shown as {{session.working_dir}} (the runner resolves paths itself)
};

class recipe_engine {
public:
  recipe_engine(step_runner& runner, event_listener& listener) noexcept
      : runner_(runner), listener_(listener) {}

  /// Runs every step of `r` and returns the result; never throws for recipe failures.
  /// `r` (and this engine, its runner and listener) must outlive the returned awaitable.
  /// Cancelling the awaiting coroutine (its cancellation slot) cancels the running step,
  /// marks the steps that did not start `not_run` and returns status `cancelled`.
  boost::asio::awaitable<run_result> run(const recipe& r, run_options options);

private:
  step_runner& runner_;
  event_listener& listener_;
};

/// A session id as SPEC §12 shows it: `20261121-134501-3f9a2c` (UTC time + 24 random bits).
std::string make_session_id(std::chrono::system_clock::time_point now, unsigned random_bits);

}  // namespace arun
