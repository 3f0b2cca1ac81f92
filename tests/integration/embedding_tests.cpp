// arun embedded in a host program (DESIGN: the engine runs on the caller's io_context): two
// recipes run concurrently through arun::recipe_engine with the real process runner, on the
// host's single io_context, next to a host timer that must keep ticking.
#include <catch2/catch.hpp>

#include "process_checks.hpp"
#include "executor/process_step_runner.hpp"
#include "recipe/recipe_loader.hpp"
#include "executor/step_environment.hpp"

#include <arun/engine.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

using steady = std::chrono::steady_clock;

// Counts one run's leaf children as the engine reports them.
struct counting_listener final : arun::event_listener {
  std::string session;
  std::size_t starts = 0, completed = 0, in_flight = 0, peak = 0;
  bool wrong_session = false;
  std::function<void(std::size_t)> on_start;  // called with the number of starts so far

  void on_event(const arun::event& e) noexcept override {
    if (e.session_id != session) wrong_session = true;
    if (e.step_type != "bash") return;
    if (e.kind == arun::event_kind::step_start) {
      ++starts;
      peak = std::max(peak, ++in_flight);
      if (on_start) on_start(starts);
    } else if (e.kind == arun::event_kind::step_end) {
      --in_flight;
      if (e.result && e.result->status == arun::step_status::completed) ++completed;
    }
  }
};

std::string numbers(int n) {
  std::string text = "[";
  for (int i = 0; i < n; ++i) text += (i ? ", " : "") + std::to_string(i);
  return text + "]";
}

// A fan-out loaded from YAML text (the loader's path).
arun::recipe fanout_from_yaml(const std::string& name, int items, const std::string& command) {
  const std::string text = "name: " + name + "\nsteps:\n  - id: fan\n    foreach: " + numbers(items) +
                           "\n    parallel: true\n    command: " + command + "\n";
  auto loaded = arun::io::load_recipe_text(text, name + ".yaml");
  for (const auto& d : loaded.diagnostics) UNSCOPED_INFO(d.message);
  REQUIRE(loaded.value);
  return std::move(*loaded.value);
}

// The same, built in code (the embedding API's path).
arun::recipe fanout_in_code(const std::string& name, int items, const std::string& command) {
  arun::recipe r;
  r.name = name;
  arun::step s;
  s.id = "fan";
  s.type = arun::step_type::bash;
  s.command = command;
  arun::foreach_spec loop;
  boost::json::array list;
  for (int i = 0; i < items; ++i) list.push_back(i);
  loop.items = std::move(list);
  loop.max_concurrent = 0;  // parallel: true, the run's limit
  s.foreach = std::move(loop);
  r.steps.push_back(std::move(s));
  return r;
}

arun::io::runner_options runner_settings() {
  arun::io::runner_options o;
  o.base_dir = std::filesystem::temp_directory_path().string();
  o.kill_grace = 1s;
  o.inherited_env = arun::io::current_environment();
  return o;
}

arun::run_options options_for(const std::string& session, int max_concurrent) {
  arun::run_options o;
  o.session_id = session;
  o.max_concurrent = max_concurrent;
  o.working_dir = std::filesystem::temp_directory_path().string();
  return o;
}

// The host's own periodic work: ticks every 10 ms and records how late each tick was.
struct host_ticker {
  asio::steady_timer timer;
  bool stopped = false;
  std::size_t ticks = 0;
  steady::duration max_lag{};

  explicit host_ticker(asio::io_context& ctx) : timer(ctx) {}

  asio::awaitable<void> run() {
    while (!stopped) {
      const auto due = steady::now() + 10ms;
      timer.expires_at(due);
      auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      if (ec || stopped) break;
      max_lag = std::max(max_lag, steady::now() - due);
      ++ticks;
    }
  }

  void stop() {
    stopped = true;
    timer.cancel();
  }
};

double ms(steady::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

TEST_CASE("two recipes with 500 children in all run on one host io_context while a host timer keeps ticking") {
  asio::io_context ctx;
  arun::io::process_step_runner runner(runner_settings());
  counting_listener events_a, events_b;
  events_a.session = "embed-a-session";
  events_b.session = "embed-b-session";
  arun::recipe_engine engine_a(runner, events_a), engine_b(runner, events_b);
  const auto recipe_a = fanout_from_yaml("embed-a", 250, "sleep 0.01");
  const auto recipe_b = fanout_in_code("embed-b", 250, "true");

  host_ticker ticker(ctx);
  asio::co_spawn(ctx, ticker.run(), asio::detached);
  std::optional<arun::run_result> result_a, result_b;
  std::exception_ptr error_a, error_b;
  int finished = 0;
  auto done = [&] {
    if (++finished == 2) ticker.stop();
  };
  const auto started = steady::now();
  engine_a.async_run(ctx.get_executor(), recipe_a, options_for(events_a.session, 16),
                     [&](std::exception_ptr e, arun::run_result r) {
                       error_a = e;
                       result_a = std::move(r);
                       done();
                     });
  engine_b.async_run(ctx.get_executor(), recipe_b, options_for(events_b.session, 16),
                     [&](std::exception_ptr e, arun::run_result r) {
                       error_b = e;
                       result_b = std::move(r);
                       done();
                     });
  ctx.run();  // one thread: the host's, shared by both runs and the timer
  const auto took = steady::now() - started;

  REQUIRE_FALSE(error_a);
  REQUIRE_FALSE(error_b);
  REQUIRE(result_a);
  REQUIRE(result_b);
  for (const auto* r : {&*result_a, &*result_b}) {
    INFO(r->recipe_name << ": " << r->error);
    CHECK(r->success());
    CHECK(r->status == arun::run_status::completed);
    REQUIRE(r->step_results.size() == 1);
    const auto& fan = r->step_results[0];
    CHECK(fan.status == arun::step_status::completed);
    REQUIRE(fan.iterations);
    CHECK(fan.iterations->total == 250);
    CHECK(fan.iterations->completed == 250);
    CHECK(fan.output.as_array().size() == 250);
  }
  CHECK(result_a->session_id == "embed-a-session");
  CHECK(result_b->session_id == "embed-b-session");
  // 500 children in all, each run within its own limit of 16, each run's events its own.
  CHECK(events_a.starts + events_b.starts == 500);
  CHECK(events_a.completed == 250);
  CHECK(events_b.completed == 250);
  CHECK(events_a.peak <= 16);
  CHECK(events_b.peak <= 16);
  CHECK(events_a.peak > 1);  // it did fan out
  CHECK_FALSE(events_a.wrong_session);
  CHECK_FALSE(events_b.wrong_session);

  // The host's timer was served all along: at least some ticks, none late by a second.
  WARN("two runs, 500 children: " << ms(took) << " ms; host timer: " << ticker.ticks << " ticks, max lag "
                                  << ms(ticker.max_lag) << " ms");
  CHECK(ticker.ticks > 0);
  CHECK(ticker.max_lag < 1s);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("cancelling one of two embedded runs leaves the other running to success") {
  asio::io_context ctx;
  arun::io::process_step_runner runner(runner_settings());
  counting_listener events_a, events_b;
  events_a.session = "doomed";
  events_b.session = "survivor";
  arun::recipe_engine engine_a(runner, events_a), engine_b(runner, events_b);
  // A: 40 long sleeps (and a grandchild each), 16 at a time; B: 40 short sleeps, 4 at a time (~2 s).
  const auto recipe_a = fanout_in_code("doomed", 40, "sleep 30 & sleep 30");
  const auto recipe_b = fanout_from_yaml("survivor", 40, "sleep 0.2");

  asio::cancellation_signal cancel_a;
  std::optional<steady::time_point> cancelled_at;
  std::size_t b_starts_at_cancel = 0;
  // Once A's 16 children have started, the host cancels A (from a fresh handler, not from
  // inside the engine's event delivery).
  events_a.on_start = [&](std::size_t starts) {
    if (starts != 16) return;
    asio::post(ctx, [&] {
      cancelled_at = steady::now();
      b_starts_at_cancel = events_b.starts;
      cancel_a.emit(asio::cancellation_type::terminal);
    });
  };
  std::optional<arun::run_result> result_a, result_b;
  std::optional<steady::time_point> a_done, b_done;
  engine_a.async_run(ctx.get_executor(), recipe_a, options_for(events_a.session, 16),
                     asio::bind_cancellation_slot(cancel_a.slot(), [&](std::exception_ptr e, arun::run_result r) {
                       CHECK_FALSE(e);
                       result_a = std::move(r);
                       a_done = steady::now();
                     }));
  engine_b.async_run(ctx.get_executor(), recipe_b, options_for(events_b.session, 4),
                     [&](std::exception_ptr e, arun::run_result r) {
                       CHECK_FALSE(e);
                       result_b = std::move(r);
                       b_done = steady::now();
                     });
  ctx.run();

  REQUIRE(cancelled_at);
  REQUIRE(result_a);
  REQUIRE(result_b);
  // A stopped: cancelled, none of its sleeps finished, and quickly (the sleeps were 30 s).
  CHECK(result_a->status == arun::run_status::cancelled);
  CHECK_FALSE(result_a->success());
  REQUIRE(result_a->step_results.size() == 1);
  CHECK(result_a->step_results[0].status == arun::step_status::cancelled);
  CHECK(result_a->step_results[0].iterations->completed == 0);
  CHECK(events_a.starts == 16);  // nothing started after the cancellation
  CHECK(std::chrono::duration<double>(*a_done - *cancelled_at).count() < 10.0);
  // B went on and finished everything, also after A's cancellation.
  INFO("B had started " << b_starts_at_cancel << " of 40 children when A was cancelled");
  CHECK(result_b->success());
  REQUIRE(result_b->step_results.size() == 1);
  CHECK(result_b->step_results[0].iterations->completed == 40);
  CHECK(events_b.starts == 40);
  CHECK(b_starts_at_cancel < 40);
  CHECK(*b_done > *cancelled_at);
  CHECK(events_b.peak <= 4);
  CHECK(arun::test::leftover_processes().empty());
}
