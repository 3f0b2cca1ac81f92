// Agent steps in the engine with a fake runner (no processes): the prompt the runner gets,
// rate-limit retries and their interplay with `retry`, the parse_json reminder,
// rate_limiting's agent limit and spacing, recovery_on_failure's decision.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <boost/json/parse.hpp>

#include <chrono>
#include <memory>

using namespace arun;
using arun::test::make;
using test::fake_runner;
using test::recorder;

namespace {

step agent_step(const std::string& id, const std::string& prompt) {
  step s;
  s.id = id;
  s.type = step_type::agent;
  s.agent.prompt = prompt;
  return s;
}

run_options opts() {
  run_options o;
  o.session_id = "sid";
  o.working_dir = "/project";
  o.random_seed = 3;
  o.agents.rate_limit_delay = 0.001;  // rate-limit waits stay short in tests
  return o;
}

run_result run(fake_runner& runner, recorder& events, const recipe& r, run_options o = opts()) {
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

}  // namespace

TEST_CASE("agent engine: the prompt gets MODE the footer and working_directory unless the context has one") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", "out:hi from {{working_directory}} {{NONINTERACTIVE}}");
  a.agent.mode = "PLAN";
  a.agent.model = "m-{{size}}";
  a.working_dir = "sub";
  auto b = agent_step("b", "out:{{working_directory}}");
  b.output = "where";
  auto r = make({a, b});
  r.context["size"] = "xl";
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  REQUIRE(runner.agent_calls.size() == 2);
  const auto& first = runner.agent_calls[0];
  CHECK(first.prompt == "MODE: PLAN\n\nout:hi from /project/sub 1\n\nProceed autonomously. Do not ask questions.");
  CHECK(first.model == "m-xl");
  CHECK(first.working_dir == "sub");
  CHECK(result.context.at("where") == "/project");

  SECTION("a context value wins") {
    r.context["working_directory"] = "/elsewhere";
    fake_runner again;
    const auto second = run(again, events, r);
    CHECK(second.context.at("where") == "/elsewhere");
  }
}

TEST_CASE("agent engine: rate limits are retried by their own policy without using up retry") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", "out:done");
  a.retry = retry_policy{};
  a.retry->max_attempts = 2;
  a.retry->initial_delay = 0;
  runner.rate_limited_left["out:done"] = 3;  // more than retry's 2 attempts
  const auto result = run(runner, events, make({a}));
  REQUIRE(result.status == run_status::completed);
  CHECK(result.step_results[0].attempts == 4);
  CHECK(runner.agent_calls.size() == 4);
  const auto retries = events.of(event_kind::step_retry);
  REQUIRE(retries.size() == 3);
  for (const auto& e : retries) CHECK(e.message.starts_with("rate limited: "));
  // The delays double from --rate-limit-delay.
  CHECK(retries[1].delay == 2 * retries[0].delay);
}

TEST_CASE("agent engine: rate-limit retries end at the limit and a step retry naming rate_limit takes over") {
  fake_runner runner;
  recorder events;
  auto o = opts();
  o.agents.rate_limit_retries = 1;
  runner.rate_limited_left["out:x"] = 5;
  auto result = run(runner, events, make({agent_step("a", "out:x")}), o);
  CHECK(result.status == run_status::failed);
  CHECK(runner.agent_calls.size() == 2);

  fake_runner own;
  auto s = agent_step("a", "out:x");
  s.retry = retry_policy{};
  s.retry->max_attempts = 3;
  s.retry->initial_delay = 0;
  s.retry->on = {retry_trigger::rate_limit};
  own.rate_limited_left["out:x"] = 5;
  result = run(own, events, make({s}), o);
  CHECK(result.status == run_status::failed);
  CHECK(own.agent_calls.size() == 3);  // the step's 3 attempts, not 1 + 1
}

TEST_CASE("agent engine: the last rate-limit retry uses the fallback model, earlier ones the step's") {
  fake_runner runner;
  recorder events;
  auto o = opts();
  o.agents.rate_limit_retries = 2;
  o.agents.rate_limit_fallback_model = "auto";
  auto a = agent_step("a", "out:x");
  a.agent.model = "big";
  runner.rate_limited_left["out:x"] = 2;
  const auto result = run(runner, events, make({a}), o);
  CHECK(result.status == run_status::completed);
  REQUIRE(runner.agent_calls.size() == 3);
  CHECK(runner.agent_calls[0].model == "big");
  CHECK(runner.agent_calls[1].model == "big");
  CHECK(runner.agent_calls[2].model == "auto");
  const auto retries = events.of(event_kind::step_retry);
  REQUIRE(retries.size() == 2);
  CHECK(retries[1].message.ends_with("; the last retry uses model auto"));
}

TEST_CASE("agent engine: an ordinary failure is not a rate limit and bash steps are never rate limited") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", "fail:2");
  step b;
  b.id = "b";
  b.command = "fail:1";
  b.on_error = on_error_policy::continue_run;
  a.on_error = on_error_policy::continue_run;
  const auto result = run(runner, events, make({a, b}));
  CHECK(result.step_results[0].attempts == 1);
  CHECK(result.step_results[1].attempts == 1);
  CHECK(events.of(event_kind::step_retry).empty());
}

TEST_CASE("agent engine: parse_json asks once more with the reminder and keeps the model and timeout") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", "out:{\"n\": 1}");
  a.parse_json = true;
  a.output = "data";
  a.agent.model = "m1";
  a.timeout = seconds_d(30);
  runner.no_json_left["out:{\"n\": 1}"] = 1;
  const auto result = run(runner, events, make({a}));
  REQUIRE(result.status == run_status::completed);
  CHECK(result.context.at("data").at("n") == 1);
  REQUIRE(runner.agent_calls.size() == 2);
  CHECK(runner.agent_calls[1].prompt.ends_with("no Markdown code fence."));
  CHECK(runner.agent_calls[1].prompt.starts_with(runner.agent_calls[0].prompt));
  CHECK(runner.agent_calls[1].model == "m1");
  CHECK(runner.agent_calls[1].timeout == runner.agent_calls[0].timeout);
  CHECK(runner.agent_calls[1].timeout == std::chrono::seconds(30));
  CHECK(result.step_results[0].attempts == 2);

  SECTION("still prose: degraded, or failed when required") {
    fake_runner twice;
    twice.no_json_left["out:{\"n\": 1}"] = 2;
    auto degraded = run(twice, events, make({a}));
    CHECK(degraded.step_results[0].status == step_status::degraded);
    CHECK(degraded.context.at("data") == "Sorry, no JSON today.");
    fake_runner required;
    required.no_json_left["out:{\"n\": 1}"] = 2;
    a.parse_json_required = true;
    auto failed = run(required, events, make({a}));
    CHECK(failed.step_results[0].status == step_status::failed);
    CHECK(required.agent_calls.size() == 2);
  }
}

TEST_CASE("agent engine: max_concurrent_llm bounds agents only and min_delay_ms spaces their starts") {
  fake_runner runner;
  recorder events;
  std::vector<step> steps;
  for (int i = 0; i < 6; ++i) {
    auto s = agent_step("a" + std::to_string(i), "sleep:40 out:ok");
    s.parallel_group = "g";
    steps.push_back(s);
    step b;
    b.id = "b" + std::to_string(i);
    b.command = "sleep:40 out:ok";
    b.parallel_group = "g";
    steps.push_back(b);
  }
  auto r = make(steps);
  r.rate_limiting.max_concurrent_llm = 2;
  r.rate_limiting.min_delay_ms = 5;
  const auto started = std::chrono::steady_clock::now();
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.agent_peak == 2);
  CHECK(runner.peak >= 6);  // the six bash members were not held back by the agent limit
  // Five gaps of at least 5 ms between six agent starts.
  CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(25));
}

TEST_CASE("agent engine: recovery_on_failure counts only a reply ending with STATUS COMPLETE") {
  struct lib final : recipe_source {
    recipe child;
    lib() {
      child.name = "child";
      step s;
      s.id = "boom";
      s.command = "fail:3";
      child.steps = {s};
    }
    loaded_recipe load(std::string_view, const recipe&) override {
      loaded_recipe out;
      out.value = std::make_shared<const recipe>(child);
      return out;
    }
  } library;
  auto call = [](const std::string& id, const std::string& reply) {
    step s;
    s.id = id;
    s.type = step_type::recipe;
    s.call.recipe = "child";
    s.output = id + "_out";
    s.on_error = on_error_policy::continue_run;
    s.call.recovery_on_failure = boost::json::object{{"prompt", reply}};
    return s;
  };
  fake_runner runner;
  recorder events;
  auto o = opts();
  o.recipes = &library;
  const auto result = run(runner, events, make({call("good", "out:STATUS: COMPLETE"), call("bad", "out:gave up")}), o);
  REQUIRE(result.step_results.size() == 2);
  CHECK(result.step_results[0].status == step_status::completed);
  CHECK(result.context.at("good_out") == "STATUS: COMPLETE");
  CHECK(result.step_results[1].status == step_status::failed);
  CHECK(result.step_results[1].error.find("did not end with STATUS: COMPLETE") != std::string::npos);
  REQUIRE(runner.agent_calls.size() == 2);
  CHECK(runner.agent_calls[0].instance_id == "good/recovery_on_failure");
  CHECK(runner.agent_calls[0].prompt.find("exit code 3") != std::string::npos);
}
