// The engine with a fake step runner: no processes.
#include <catch2/catch.hpp>

#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <limits>
#include <map>

using namespace arun;

namespace {

// Replies with a scripted outcome per command and records what it was asked to run.
class fake_runner final : public step_runner {
public:
  std::map<std::string, leaf_outcome> replies;
  std::vector<bash_invocation> calls;

  boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation inv) override {
    calls.push_back(inv);
    if (inv.on_line) inv.on_line(output_stream::out, "line of " + inv.instance_id, false);
    auto it = replies.find(inv.command);
    if (it != replies.end()) co_return it->second;
    leaf_outcome ok;
    ok.started = true;
    ok.exit_code = 0;
    ok.stdout_text = inv.command + "\n";
    co_return ok;
  }
};

struct recording_listener final : event_listener {
  std::vector<std::string> seen;
  void on_event(const event& e) noexcept override {
    std::string s(to_string(e.kind));
    if (!e.step.empty()) s += " " + e.step;
    if (e.kind == event_kind::step_output) s += " " + std::string(e.line);
    if (e.result) s += " " + std::string(to_string(e.result->status));
    if (e.run) s += " " + std::string(to_string(e.run->status));
    seen.push_back(s);
  }
};

recipe three_steps() {
  recipe r;
  r.name = "demo";
  for (const char* id : {"a", "b", "c"}) {
    step s;
    s.id = id;
    s.command = std::string("cmd-") + id;
    r.steps.push_back(s);
  }
  return r;
}

run_options sid_options() {
  run_options o;
  o.session_id = "sid";
  return o;
}

leaf_outcome failure(int code) {
  leaf_outcome o;
  o.started = true;
  o.exit_code = code;
  o.error = "exit code " + std::to_string(code);
  o.snippet = "boom";
  return o;
}

}  // namespace

TEST_CASE("steps run in order and the last output is the recipe's output") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  auto r = three_steps();
  r.steps[1].output = "b_out";
  runner.replies["cmd-b"] = [] {
    leaf_outcome o;
    o.started = true;
    o.exit_code = 0;
    o.stdout_text = " 42\n";
    return o;
  }();
  const auto result = test::run_sync(eng.run(r, sid_options()));
  CHECK(result.status == run_status::completed);
  CHECK(result.session_id == "sid");
  REQUIRE(runner.calls.size() == 3);
  CHECK(runner.calls[0].command == "cmd-a");
  CHECK(runner.calls[2].command == "cmd-c");
  CHECK(result.context.at("b_out") == 42);
  CHECK(result.output == "cmd-c");
  CHECK(result.step_results[1].output == 42);
  CHECK(events.seen == std::vector<std::string>{
                           "recipe_start", "step_start a", "step_output a line of a", "step_end a completed",
                           "step_start b", "step_output b line of b", "step_end b completed",
                           "step_start c", "step_output c line of c", "step_end c completed",
                           "recipe_end completed"});
}

TEST_CASE("a failed step fails the run and the steps after it are not_run") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  auto r = three_steps();
  r.steps[1].output = "never";
  runner.replies["cmd-b"] = failure(3);
  const auto result = test::run_sync(eng.run(r, {}));
  CHECK(result.status == run_status::failed);
  CHECK_FALSE(result.success());
  REQUIRE(result.step_results.size() == 3);
  CHECK(result.step_results[0].status == step_status::completed);
  CHECK(result.step_results[1].status == step_status::failed);
  CHECK(result.step_results[1].exit_code == 3);
  CHECK(result.step_results[1].error == "step 'b': exit code 3\nboom");
  CHECK(result.step_results[2].status == step_status::not_run);
  CHECK(result.step_results[2].step_id == "c");
  CHECK_FALSE(result.context.contains("never"));  // a failed step stores nothing
  CHECK(runner.calls.size() == 2);
}

TEST_CASE("a cancelled step cancels the run") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  leaf_outcome cancelled;
  cancelled.started = true;
  cancelled.cancelled = true;
  cancelled.signal = 15;
  cancelled.error = "cancelled";
  runner.replies["cmd-a"] = cancelled;
  const auto result = test::run_sync(eng.run(three_steps(), {}));
  CHECK(result.status == run_status::cancelled);
  CHECK(result.step_results[0].status == step_status::cancelled);
  CHECK(result.step_results[1].status == step_status::not_run);
}

TEST_CASE("step timeouts fall back to the recipe default and 0 means none") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  auto r = three_steps();
  r.default_step_timeout = std::chrono::duration<double>(7.5);
  r.steps[1].timeout = std::chrono::duration<double>(0);
  r.steps[2].timeout = std::chrono::duration<double>(2);
  test::run_sync(eng.run(r, {}));
  REQUIRE(runner.calls.size() == 3);
  CHECK(runner.calls[0].timeout == std::chrono::nanoseconds(7'500'000'000));
  CHECK_FALSE(runner.calls[1].timeout);
  CHECK(runner.calls[2].timeout == std::chrono::nanoseconds(2'000'000'000));
}

TEST_CASE("a step that could not start fails with attempts 0") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  leaf_outcome not_started;
  not_started.error = "working directory '/x' does not exist";
  runner.replies["cmd-a"] = not_started;
  const auto result = test::run_sync(eng.run(three_steps(), {}));
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[0].attempts == 0);
  CHECK(result.step_results[0].error == "step 'a': working directory '/x' does not exist");
}

TEST_CASE("timeouts too large to represent mean no limit") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  auto r = three_steps();
  r.steps[0].timeout = std::chrono::duration<double>(1e12);
  r.steps[1].timeout = std::chrono::duration<double>(std::numeric_limits<double>::infinity());
  test::run_sync(eng.run(r, {}));
  CHECK_FALSE(runner.calls[0].timeout);
  CHECK_FALSE(runner.calls[1].timeout);
}

TEST_CASE("a stop requested while the last step completes ends the run cancelled") {
  boost::asio::cancellation_signal stop;
  struct stopping_runner final : step_runner {
    boost::asio::cancellation_signal& stop;
    explicit stopping_runner(boost::asio::cancellation_signal& s) : stop(s) {}
    boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation) override {
      // Suspend once, as a real step does (a coroutine that never suspends makes co_spawn
      // post its completion, which a pending cancellation turns into an exception).
      co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
      stop.emit(boost::asio::cancellation_type::terminal);  // arrives as the step finishes
      leaf_outcome ok;
      ok.started = true;
      ok.exit_code = 0;
      co_return ok;
    }
  } runner(stop);
  recording_listener events;
  recipe_engine eng(runner, events);
  recipe r;
  r.name = "one";
  step only;
  only.id = "only";
  only.command = "x";
  r.steps.push_back(only);
  boost::asio::io_context ctx;
  std::optional<run_result> result;
  boost::asio::co_spawn(ctx, eng.run(r, {}),
                        boost::asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, run_result v) {
                          CHECK_FALSE(e);
                          result = std::move(v);
                        }));
  ctx.run();
  REQUIRE(result);
  CHECK(result->step_results[0].status == step_status::completed);
  CHECK(result->status == run_status::cancelled);
}

TEST_CASE("a value with a NUL byte in env fails the step before it runs") {
  fake_runner runner;
  recording_listener events;
  recipe_engine eng(runner, events);
  recipe r;
  r.name = "nul";
  r.context["x"] = boost::json::string(std::string("a\0b", 3));
  step s;
  s.id = "e";
  s.command = "echo";
  s.env = {{"X", "pre-{{x}}"}};
  r.steps.push_back(s);
  const auto result = test::run_sync(eng.run(r, {}));
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[0].error == "step 'e': env X: the rendered value contains a NUL byte");
  CHECK(runner.calls.empty());
}
