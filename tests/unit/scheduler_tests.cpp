// The scheduler with a fake step runner (no processes): groups, loops, DAG, the concurrency
// limit, retries, on_error, hooks, tags, sub-recipes, the journal, gates, the interrupt.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>
#include <arun/validation.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace arun;
using arun::test::make;
using test::fake_runner;
using test::recorder;

namespace {

step bash(const std::string& id, const std::string& command) {
  step s;
  s.id = id;
  s.command = command;
  return s;
}

run_options opts(int max_concurrent = 8) {
  run_options o;
  o.session_id = "sid";
  o.max_concurrent = max_concurrent;
  o.random_seed = 7;
  return o;
}

run_result run(step_runner& runner, event_listener& events, const recipe& r, run_options o = opts()) {
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

// Runs `r` and has its caller cancel it (`how`) after `after`: what an interrupt does. The run
// never ends in an exception.
std::optional<run_result> run_interrupted(step_runner& runner, event_listener& events, const recipe& r, run_options o,
                                          std::chrono::milliseconds after,
                                          boost::asio::cancellation_type how = boost::asio::cancellation_type::terminal) {
  boost::asio::io_context ctx;
  boost::asio::cancellation_signal stop;
  boost::asio::steady_timer soon(ctx, after);
  soon.async_wait([&](auto) { stop.emit(how); });
  recipe_engine eng(runner, events);
  std::optional<run_result> result;
  eng.async_run(ctx.get_executor(), r, std::move(o),
                boost::asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e, run_result v) {
                  CHECK_FALSE(e);
                  result = std::move(v);
                }));
  ctx.run();
  return result;
}

step grouped(step s, const std::string& group) {
  s.parallel_group = group;
  return s;
}

step foreach_of(step s, const std::string& items, int max_concurrent = 1) {
  foreach_spec f;
  f.items = boost::json::string(items);
  f.max_concurrent = max_concurrent;
  s.foreach = f;
  return s;
}

}  // namespace

TEST_CASE("parallel group members run together and see the context as it was when the group started") {
  fake_runner runner;
  recorder events;
  auto a = grouped(bash("a", "sleep:30 out:A"), "g");
  a.output = "x";
  auto b = grouped(bash("b", "sleep:5 out:{{x}}"), "g");
  b.output = "y";
  auto r = make({a, b, bash("after", "out:{{x}}-{{y}}")});
  r.context["x"] = "before";
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.peak == 2);
  CHECK(result.context.at("y") == "before");  // b saw the snapshot, not a's output
  CHECK(result.context.at("x") == "A");
  CHECK(result.output == "A-before");
  // b finished first, but results stay in declaration order.
  CHECK(runner.finished[0] == "b");
  CHECK(result.step_results[0].step_id == "a");
}

TEST_CASE("group outputs are merged in declaration order, not finishing order") {
  fake_runner runner;
  recorder events;
  auto a = grouped(bash("a", "sleep:1 out:first"), "g");
  a.output = "v";
  auto b = grouped(bash("b", "sleep:20 out:second"), "g");
  b.output = "v";
  const auto result = run(runner, events, make({b, a}));
  // b is declared first and finishes last; a is declared last, so its value wins.
  CHECK(result.context.at("v") == "first");
  const auto result2 = run(runner, events, make({a, b}));
  CHECK(result2.context.at("v") == "second");
}

TEST_CASE("a fatal failure in a group cancels the running members and fails the recipe after the group") {
  fake_runner runner;
  recorder events;
  auto r = make({grouped(bash("slow", "sleep:5000"), "g"), grouped(bash("bad", "sleep:10 fail:3"), "g"),
                 grouped(bash("quick", "out:ok"), "g"), bash("next", "out:never")});
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = run(runner, events, r);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));
  CHECK(result.status == run_status::failed);
  CHECK(result.step_results[0].status == step_status::cancelled);
  CHECK(result.step_results[1].status == step_status::failed);
  CHECK(result.step_results[1].fatal);
  CHECK(result.step_results[2].status == step_status::completed);
  CHECK(result.step_results[3].status == step_status::not_run);
  const auto ends = events.of(event_kind::step_end);
  CHECK(std::any_of(ends.begin(), ends.end(), [](const auto& e) { return e.step == "next" && e.status == "not_run"; }));
}

TEST_CASE("a non-fatal failure in a group lets the others finish") {
  fake_runner runner;
  recorder events;
  auto bad = grouped(bash("bad", "fail:1"), "g");
  bad.on_error = on_error_policy::continue_run;
  const auto result = run(runner, events, make({grouped(bash("slow", "sleep:30"), "g"), bad, bash("next", "out:n")}));
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[0].status == step_status::completed);
  CHECK(result.step_results[1].status == step_status::failed);
  CHECK(result.step_results[2].status == step_status::completed);
}

TEST_CASE("foreach collects iteration results in input order and never exceeds max_concurrent") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "sleep:{{item}} out:{{item}}"), "{{items}}", 3);
  s.foreach->collect = "all";
  auto r = make({s});
  r.context["items"] = boost::json::array{40, 10, 30, 5, 20, 1, 15};
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.peak == 3);
  CHECK(result.context.at("all") == boost::json::array{40, 10, 30, 5, 20, 1, 15});
  CHECK(result.step_results[0].output == result.context.at("all"));
  REQUIRE(result.step_results[0].iterations);
  CHECK(result.step_results[0].iterations->total == 7);
  CHECK(result.step_results[0].iterations->completed == 7);
  CHECK(runner.started[0] == "fan[0]");
  const auto starts = events.of(event_kind::step_start);
  REQUIRE_FALSE(starts.empty());
  CHECK(starts[0].step == "fan");
}

TEST_CASE("foreach with parallel true uses the global limit and the global limit bounds every child") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "sleep:2"), "{{items}}", 0);
  auto r = make({s});
  boost::json::array items;
  for (int i = 0; i < 50; ++i) items.push_back(i);
  r.context["items"] = items;
  run(runner, events, r, opts(5));
  CHECK(runner.peak == 5);
  CHECK(runner.calls.size() == 50);
}

TEST_CASE("nested fan-out does not deadlock at max-concurrent 1 and iterations keep their outputs local") {
  fake_runner runner;
  recorder events;
  auto inner_body = bash("inner", "out:{{outer}}-{{item}}");
  inner_body.output = "pair";
  auto inner = foreach_of(inner_body, "{{letters}}", 4);
  inner.id = "inner_loop";
  inner.foreach->collect = "pairs";
  inner.type = step_type::bash;
  step outer;
  outer.id = "outer_loop";
  outer.type = step_type::loop;
  outer.foreach = foreach_spec{};
  outer.foreach->items = boost::json::string("{{numbers}}");
  outer.foreach->as = "outer";
  outer.foreach->max_concurrent = 3;
  outer.foreach->collect = "everything";
  auto last = bash("last", "out:{{pairs}}");
  last.output = "seen";
  outer.steps = {inner, last};
  auto r = make({outer});
  r.context["numbers"] = boost::json::array{1, 2, 3};
  r.context["letters"] = boost::json::array{"a", "b"};
  const auto result = run(runner, events, r, opts(1));
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.peak == 1);
  CHECK(runner.calls.size() == 9);
  // The iteration result is its last body step's output; body outputs stay in the iteration.
  CHECK(result.context.at("everything") ==
        boost::json::parse(R"([["1-a","1-b"],["2-a","2-b"],["3-a","3-b"]])"));
  CHECK_FALSE(result.context.contains("pairs"));
  CHECK_FALSE(result.context.contains("seen"));
  CHECK(std::find(runner.started.begin(), runner.started.end(), "outer_loop[2]/inner_loop[1]") != runner.started.end());
}

TEST_CASE("foreach on_error continue puts null in the failed slot") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "{{item}}"), "[\"out:1\", \"fail:2\", \"out:3\"]");
  s.on_error = on_error_policy::continue_run;
  s.output = "res";
  const auto result = run(runner, events, make({s}));
  CHECK(result.status == run_status::completed);
  CHECK(result.context.at("res") == boost::json::parse(R"([1,null,3])"));
  CHECK(result.step_results[0].iterations->failed == 1);
}

TEST_CASE("a fatal foreach iteration stops the loop and the run") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "{{item}}"), "[\"fail:4\", \"out:2\", \"out:3\"]");
  const auto result = run(runner, events, make({s, bash("after", "x")}));
  CHECK(result.status == run_status::failed);
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[0].iterations->failed == 1);
  CHECK(result.step_results[0].iterations->skipped == 0);
  CHECK(result.step_results[0].iterations->not_run == 2);  // never started: not "skipped"
  CHECK(result.step_results[1].status == step_status::not_run);
  CHECK(runner.calls.size() == 1);
}

TEST_CASE("skip_remaining in a loop ends it and skips the rest of the recipe with success") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "{{item}}"), "[\"out:1\", \"fail:2\", \"out:3\"]");
  s.on_error = on_error_policy::skip_remaining;
  const auto result = run(runner, events, make({s, bash("after", "x")}));
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[1].status == step_status::skipped);
  CHECK(runner.calls.size() == 2);
}

TEST_CASE("foreach refuses more items than max_iterations and non-lists") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "x"), "[1,2,3]");
  s.foreach->max_iterations = 2;
  auto result = run(runner, events, make({s}));
  CHECK(result.status == run_status::failed);
  CHECK_THAT(result.step_results[0].error, Catch::Contains("max_iterations (2)"));
  auto t = foreach_of(bash("fan", "x"), "{{v}}");
  auto r = make({t});
  r.context["v"] = "not a list";
  result = run(runner, events, r);
  CHECK_THAT(result.step_results[0].error, Catch::Contains("foreach needs a list"));
  CHECK(runner.calls.empty());
}

TEST_CASE("while loops run until the condition fails, with update_context, loop counters and break_when") {
  fake_runner runner;
  recorder events;
  step s;
  s.id = "w";
  s.type = step_type::loop;
  auto probe = bash("probe", "out:{{_loop_index}}");
  probe.output = "last";
  s.steps = {probe};
  while_spec w;
  w.condition = "{{last}} is None or {{last}} < 10";
  w.break_when = "{{_loop_iteration}} >= 4";
  w.update_context["seen"] = "{{last}}";
  s.loop_while = w;
  const auto result = run(runner, events, make({s}));
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.calls.size() == 4);  // break_when after the 4th iteration
  CHECK(result.context.at("last") == 3);
  CHECK(result.context.at("seen") == 3);
  CHECK_FALSE(result.context.contains("_loop_index"));
  CHECK(result.step_results[0].output == boost::json::array{0, 1, 2, 3});
}

TEST_CASE("a while loop that reaches max_while_iterations fails") {
  fake_runner runner;
  recorder events;
  step s = bash("w", "out:1");
  while_spec w;
  w.condition = "true";
  w.max_iterations = 3;
  s.loop_while = w;
  const auto result = run(runner, events, make({s}));
  CHECK(result.status == run_status::failed);
  CHECK(runner.calls.size() == 3);
  CHECK_THAT(result.step_results[0].error, Catch::Contains("max_while_iterations (3)"));
}

TEST_CASE("dag execution starts a step when what it depends on has finished") {
  fake_runner runner;
  recorder events;
  auto slow = bash("slow", "sleep:40 out:S");
  slow.output = "s";
  auto fast = bash("fast", "out:F");
  auto uses = bash("uses", "out:{{s}}");  // waits for slow through the output it reads
  auto after_fast = bash("after_fast", "out:af");
  after_fast.depends_on = {"fast"};
  auto r = make({slow, uses, fast, after_fast});
  r.execution = execution_mode::dag;
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  const auto pos = [&](const std::string& id) {
    return std::find(runner.started.begin(), runner.started.end(), id) - runner.started.begin();
  };
  CHECK(pos("after_fast") < pos("uses"));
  CHECK(result.step_results[1].output == "S");
  CHECK(result.step_results[1].step_id == "uses");
}

TEST_CASE("a fatal failure in a dag stops what has not started") {
  fake_runner runner;
  recorder events;
  auto bad = bash("bad", "fail:1");
  auto later = bash("later", "out:x");
  later.depends_on = {"bad"};
  auto r = make({bad, later});
  r.execution = execution_mode::dag;
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::failed);
  CHECK(result.step_results[1].status == step_status::not_run);
}

TEST_CASE("retry waits with backoff between attempts and reports step_retry events") {
  fake_runner runner;
  recorder events;
  auto s = bash("flaky", "out:ok");
  runner.failures_left["out:ok"] = 2;
  retry_policy p;
  p.max_attempts = 3;
  p.initial_delay = 0.002;
  p.backoff = backoff_kind::exponential;
  s.retry = p;
  const auto result = run(runner, events, make({s}));
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[0].attempts == 3);
  const auto retries = events.of(event_kind::step_retry);
  REQUIRE(retries.size() == 2);
  CHECK(retries[0].attempt == 1);
  CHECK(retries[0].delay == std::chrono::milliseconds(2));
  CHECK(retries[1].delay == std::chrono::milliseconds(4));
}

TEST_CASE("retry on lists only the exit codes it names") {
  fake_runner runner;
  recorder events;
  auto s = bash("f", "fail:3");
  retry_policy p;
  p.initial_delay = 0.001;
  p.on = {2};
  s.retry = p;
  const auto result = run(runner, events, make({s}));
  CHECK(result.step_results[0].attempts == 1);
  s.command = "fail:2";
  const auto again = run(runner, events, make({s}));
  CHECK(again.step_results[0].attempts == 3);
}

TEST_CASE("on_error continue and output_exit_code keep the run going with the exit code stored") {
  fake_runner runner;
  recorder events;
  auto s = bash("f", "fail:7");
  s.on_error = on_error_policy::continue_run;
  s.output_exit_code = "code";
  s.output = "never";
  const auto result = run(runner, events, make({s, bash("next", "out:{{code}}")}));
  CHECK(result.status == run_status::completed);
  CHECK(result.context.at("code") == 7);
  CHECK_FALSE(result.context.contains("never"));
  CHECK(result.output == 7);
}

TEST_CASE("a condition error fails the step and a timeout is a failure with timed_out") {
  fake_runner runner;
  recorder events;
  auto bad = bash("c", "x");
  bad.condition = "len(1, 2, 3) +";
  bad.on_error = on_error_policy::continue_run;
  const auto result = run(runner, events, make({bad, bash("t", "timeout")}));
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[1].timed_out);
  CHECK(result.status == run_status::failed);
}

TEST_CASE("tags skip steps by include and exclude filters") {
  fake_runner runner;
  recorder events;
  auto slow = bash("slow", "a");
  slow.when_tags = {"slow"};
  auto fast = bash("fast", "b");
  fast.when_tags = {"fast"};
  auto o = opts();
  o.exclude_tags = {"slow"};
  auto result = run(runner, events, make({slow, fast, bash("plain", "c")}), o);
  CHECK(result.step_results[0].status == step_status::skipped);
  CHECK(result.step_results[1].status == step_status::completed);
  o = opts();
  o.include_tags = {"slow"};
  result = run(runner, events, make({slow, fast, bash("plain", "c")}), o);
  CHECK(result.step_results[0].status == step_status::completed);
  CHECK(result.step_results[1].status == step_status::skipped);
  CHECK(result.step_results[2].status == step_status::completed);
}

TEST_CASE("hooks run around steps with the step id and status") {
  fake_runner runner;
  recorder events;
  auto r = make({bash("good", "out:1"), bash("bad", "fail:2")});
  r.hooks.pre_step = "out:pre {{step.id}}";
  r.hooks.post_step = "out:post {{step.id}} {{step.status}}";
  r.hooks.on_error = "fail:9";
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::failed);
  std::vector<std::string> seen;
  for (const auto& c : runner.calls) seen.push_back(fake_runner::expand(c.command, c));
  CHECK(seen == std::vector<std::string>{"out:pre good", "out:1", "out:post good completed", "out:pre bad", "fail:2", "fail:9"});
  const auto warnings = events.of(event_kind::warning);
  REQUIRE(warnings.size() == 1);  // a failing hook is a warning
  CHECK_THAT(warnings[0].message, Catch::Contains("on_error hook failed"));
}

namespace {

struct fake_library final : recipe_source {
  std::map<std::string, recipe> recipes;
  int loads = 0;
  loaded_recipe load(std::string_view name, const recipe&) override {
    ++loads;
    loaded_recipe out;
    auto it = recipes.find(std::string(name));
    if (it == recipes.end())
      out.error = "sub-recipe '" + std::string(name) + "' not found";
    else
      out.value = std::make_shared<const recipe>(it->second);
    return out;
  }
};

step call(const std::string& id, const std::string& name) {
  step s;
  s.id = id;
  s.type = step_type::recipe;
  s.call.recipe = name;
  return s;
}

}  // namespace

TEST_CASE("a sub-recipe gets the parent context and returns what it created or changed") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  auto child_step = bash("make", "out:{{base}}+{{extra}}");
  child_step.output = "made";
  auto child = make({child_step});
  child.name = "child";
  child.context["extra"] = "default";
  child.context["base"] = "child-default";
  lib.recipes["child"] = child;
  auto c = call("c", "child");
  c.output = "delta";
  c.call.context["extra"] = "{{given}}";
  auto r = make({c});
  r.context["base"] = "parent";
  r.context["given"] = "over";
  auto o = opts();
  o.recipes = &lib;
  const auto result = run(runner, events, r, o);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.started == std::vector<std::string>{"c/make"});
  CHECK(result.context.at("made") == "parent+over");
  CHECK(result.context.at("delta") == boost::json::object{{"made", "parent+over"}});
  CHECK_FALSE(result.context.contains("extra"));  // given to the child, not created by it
  REQUIRE(result.step_results[0].children.size() == 1);
  CHECK(result.step_results[0].children[0].step_id == "c/make");
}

TEST_CASE("a failing sub-recipe merges nothing and names its failed steps") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  auto ok = bash("ok", "out:1");
  ok.output = "partial";
  auto child = make({ok, bash("broken", "fail:5")});
  child.name = "child";
  lib.recipes["child"] = child;
  auto o = opts();
  o.recipes = &lib;
  const auto result = run(runner, events, make({call("c", "child")}), o);
  CHECK(result.status == run_status::failed);
  CHECK_FALSE(result.context.contains("partial"));
  CHECK_THAT(result.step_results[0].error, Catch::Contains("sub-recipe 'child' failed") && Catch::Contains("c/broken"));
}

TEST_CASE("a recipe that calls itself stops at max_depth with the call chain") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  auto self = make({call("again", "loop")});
  self.name = "loop";
  lib.recipes["loop"] = self;
  auto top = self;
  top.recursion.max_depth = 3;
  auto o = opts();
  o.recipes = &lib;
  const auto result = run(runner, events, top, o);
  CHECK(result.status == run_status::failed);
  CHECK_THAT(result.step_results[0].error, Catch::Contains("loop \u00d75"));
}

TEST_CASE("a deep failing recursion names its deepest failure once, not once per level") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  auto self = make({bash("work", "out:1"), call("down", "deep")});
  self.name = "deep";
  lib.recipes["deep"] = self;
  auto top = self;
  top.recursion.max_depth = 100;
  auto o = opts();
  o.recipes = &lib;
  const auto result = run(runner, events, top, o);
  CHECK(result.status == run_status::failed);
  const auto& error = result.step_results[1].error;
  const std::string deepest = "down" + [] {
    std::string tail;
    for (int i = 0; i < 100; ++i) tail += "/down";
    return tail;
  }();
  // step 'down': sub-recipe 'deep' failed: step 'down/…/down': recursion depth limit 100 reached: deep ×102
  CHECK(error == "step 'down': sub-recipe 'deep' failed: step '" + deepest +
                     "': recursion depth limit 100 reached: deep \u00d7102");
}

TEST_CASE("a failing sub-recipe lists at most five failures and counts the rest") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  std::vector<step> steps;
  for (int i = 0; i < 8; ++i) {
    auto b = bash("b" + std::to_string(i), "fail:1");
    b.on_error = on_error_policy::continue_run;
    steps.push_back(b);
  }
  steps.push_back(bash("last", "fail:2"));
  auto child = make(steps);
  child.name = "child";
  lib.recipes["child"] = child;
  auto o = opts();
  o.recipes = &lib;
  const auto result = run(runner, events, make({call("c", "child")}), o);
  CHECK(result.status == run_status::failed);
  CHECK_THAT(result.step_results[0].error, Catch::EndsWith("; and 4 more"));
}

TEST_CASE("max_total_steps counts every instance that runs") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "x"), "[1,2,3,4,5]");
  auto r = make({s});
  r.recursion.max_total_steps = 4;
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::failed);
  CHECK(runner.calls.size() == 4);  // the loop itself does not count, its iterations do
}

TEST_CASE("an interrupt in the middle of a fan-out cancels running children and reports not_run") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "sleep:10000"), "{{items}}", 0);
  auto r = make({s, bash("after", "x")});
  boost::json::array items;
  for (int i = 0; i < 100; ++i) items.push_back(i);
  r.context["items"] = items;
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = run_interrupted(runner, events, r, opts(8), std::chrono::milliseconds(50));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  REQUIRE(result);
  CHECK(result->status == run_status::cancelled);
  CHECK(runner.calls.size() == 8);
  CHECK(runner.in_flight == 0);
  CHECK(result->step_results[0].status == step_status::cancelled);
  CHECK(result->step_results[1].status == step_status::not_run);
}

TEST_CASE("a child that dies of a signal while the run is being interrupted is cancelled, never failed") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "dies-on-stop:10000"), "{{items}}", 0);
  s.on_error = on_error_policy::continue_run;  // a failed iteration would stay failed on resume
  auto r = make({s});
  r.context["items"] = boost::json::array{1, 2, 3, 4};
  const auto result = run_interrupted(runner, events, r, opts(8), std::chrono::milliseconds(50));
  REQUIRE(result);
  CHECK(result->status == run_status::cancelled);
  const auto& fan = result->step_results[0];
  REQUIRE(fan.iterations);
  CHECK(fan.iterations->failed == 0);
  std::size_t cancelled = 0;
  for (const auto& e : events.events)
    if (e.kind == event_kind::step_end && e.step.starts_with("fan[")) {
      CHECK(e.status == "cancelled");
      ++cancelled;
    }
  CHECK(cancelled == 4);
  // Without a stop, exiting as a shell does after SIGINT is a failure like any other.
  fake_runner plain;
  recorder quiet;
  const auto died = run(plain, quiet, make({bash("a", "fail:130")}));
  CHECK(died.step_results[0].status == step_status::failed);
}

namespace {

struct memory_journal final : run_journal {
  std::vector<std::string> recorded;
  std::map<std::string, finished_instance, std::less<>> done;
  void record(const step_result& r, const boost::json::object&) noexcept override { recorded.push_back(r.step_id); }
  const finished_instance* find(std::string_view id) const noexcept override {
    auto it = done.find(id);
    return it == done.end() ? nullptr : &it->second;
  }
};

struct scripted_approvals final : approval_handler {
  approval_reply reply;
  boost::asio::awaitable<approval_reply> decide(approval_request) override { co_return reply; }
};

}  // namespace

TEST_CASE("every finished instance is journaled and recorded instances are not run again") {
  fake_runner runner;
  recorder events;
  memory_journal journal;
  auto first = bash("first", "out:1");
  first.output = "one";
  finished_instance earlier;
  earlier.result.step_id = "first";
  earlier.result.status = step_status::completed;
  earlier.result.output = 1;
  earlier.context_delta["one"] = "from the journal";
  journal.done.emplace("first", earlier);
  auto o = opts();
  o.journal = &journal;
  const auto result = run(runner, events, make({first, foreach_of(bash("fan", "x"), "[1,2]")}), o);
  CHECK(runner.started == std::vector<std::string>{"fan[0]", "fan[1]"});
  CHECK(result.context.at("one") == "from the journal");
  CHECK(journal.recorded == std::vector<std::string>{"fan[0]", "fan[1]", "fan"});
}

TEST_CASE("gates suspend the run without a handler and follow the handler's decision") {
  fake_runner runner;
  recorder events;
  step gate;
  gate.id = "ok";
  gate.type = step_type::gate;
  gate.approval.required = true;
  gate.approval.prompt = "ship {{what}}?";
  auto r = make({gate, bash("after", "out:{{_approval_message}}")});
  r.context["what"] = "it";
  auto result = run(runner, events, r);
  CHECK(result.status == run_status::waiting_approval);
  REQUIRE(result.waiting.size() == 1);
  CHECK(result.waiting[0].step == "ok");
  CHECK(result.waiting[0].prompt == "ship it?");
  CHECK(result.step_results[1].status == step_status::not_run);

  scripted_approvals approvals;
  approvals.reply = {approval_verdict::approved, "go"};
  auto o = opts();
  o.approvals = &approvals;
  result = run(runner, events, r, o);
  CHECK(result.status == run_status::completed);
  CHECK(result.output == "go");

  approvals.reply = {approval_verdict::denied, "no"};
  result = run(runner, events, r, o);
  CHECK(result.status == run_status::failed);
  CHECK(result.denied == std::vector<std::string>{"ok"});  // the run ended on it: a resume meets it again
  // A denial the run did not end on names nothing: the loop absorbed its body's fatal denial
  // (on_error: continue), and a later failure ended the run.
  auto fan = foreach_of(bash("fan", ""), "[1]");
  fan.steps = {gate};
  fan.on_error = on_error_policy::continue_run;
  auto absorbed = make({fan, bash("bad", "fail:3")});
  result = run(runner, events, absorbed, o);
  CHECK(result.status == run_status::failed);
  CHECK(result.denied.empty());
  r.steps[0].approval.on_denied = on_error_policy::skip_remaining;
  result = run(runner, events, r, o);
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[1].status == step_status::skipped);
  CHECK(result.denied.empty());
}

namespace {

// Approves the gates it is told about; every other gate suspends (as with --no-input).
struct approve_listed final : approval_handler {
  std::set<std::string, std::less<>> approved;
  std::vector<std::string> asked;
  boost::asio::awaitable<approval_reply> decide(approval_request request) override {
    asked.push_back(request.step);
    if (approved.contains(request.step)) co_return approval_reply{approval_verdict::approved, "ok"};
    co_return approval_reply{};
  }
};

step gate_step(const std::string& id, const std::string& prompt) {
  step g;
  g.id = id;
  g.type = step_type::gate;
  g.approval.required = true;
  g.approval.prompt = prompt;
  return g;
}

std::vector<std::string> waiting_ids(const run_result& r) {
  std::vector<std::string> ids;
  for (const auto& w : r.waiting) ids.push_back(w.step);
  return ids;
}

}  // namespace

TEST_CASE("a gate under a fan-out suspends the run at every instance's gate, never skips it") {
  fake_runner runner;
  recorder events;
  SECTION("foreach: every iteration reaches its gate; the waiting gates are listed in item order") {
    step fan;
    fan.id = "fan";
    fan.type = step_type::loop;
    auto ship = bash("ship", "out:shipped {{item}}");
    ship.output = "shipped";
    fan.steps = {bash("work", "sleep:5 out:{{item}}"), gate_step("review", "Ship {{item}}?"), ship};
    fan = foreach_of(fan, R"(["a","b","c"])", 2);
    fan.foreach->collect = "all";
    auto r = make({fan, bash("after", "out:after")});
    approve_listed approvals;
    approvals.approved = {"fan[1]/review"};
    auto o = opts();
    o.approvals = &approvals;
    const auto result = run(runner, events, r, o);
    CHECK(result.status == run_status::waiting_approval);
    CHECK(waiting_ids(result) == std::vector<std::string>{"fan[0]/review", "fan[2]/review"});
    CHECK(result.waiting[0].prompt == "Ship a?");
    CHECK(result.step_results[0].status == step_status::not_run);
    REQUIRE(result.step_results[0].iterations);
    CHECK(result.step_results[0].iterations->completed == 1);
    CHECK(result.step_results[0].iterations->waiting == 2);
    CHECK(result.step_results[0].iterations->skipped == 0);
    CHECK(result.step_results[1].status == step_status::not_run);
    // Every item's work ran up to its gate; only the approved item shipped; `after` waits.
    auto started = runner.started;
    std::sort(started.begin(), started.end());
    CHECK(started == std::vector<std::string>{"fan[0]/work", "fan[1]/ship", "fan[1]/work", "fan[2]/work"});
  }
  SECTION("a parallel group: every gated member waits while the others finish") {
    auto r = make({grouped(gate_step("left", "L?"), "g"), grouped(bash("mid", "out:m"), "g"),
                   grouped(gate_step("right", "R?"), "g"), bash("after", "out:after")});
    const auto result = run(runner, events, r);
    CHECK(result.status == run_status::waiting_approval);
    CHECK(waiting_ids(result) == std::vector<std::string>{"left", "right"});
    CHECK(result.step_results[1].status == step_status::completed);
    CHECK(result.step_results[3].status == step_status::not_run);
  }
  SECTION("a failure that ends the run wins over a gate waiting next to it: the run failed") {
    auto bad = grouped(bash("bad", "fail:1"), "g");
    auto r = make({grouped(gate_step("left", "L?"), "g"), bad});
    const auto result = run(runner, events, r);
    CHECK(result.status == run_status::failed);
    CHECK(result.waiting.empty());
  }
  SECTION("a while loop stops at the iteration whose gate waits: the next depends on it") {
    step w;
    w.id = "w";
    w.type = step_type::loop;
    w.steps = {bash("probe", "out:{{_loop_index}}"), gate_step("more", "Again?")};
    while_spec spec;
    spec.condition = "true";
    spec.max_iterations = 5;
    w.loop_while = spec;
    approve_listed approvals;
    approvals.approved = {"w[0]/more"};
    auto o = opts();
    o.approvals = &approvals;
    const auto result = run(runner, events, make({w}), o);
    CHECK(result.status == run_status::waiting_approval);
    CHECK(waiting_ids(result) == std::vector<std::string>{"w[1]/more"});
    CHECK(approvals.asked == std::vector<std::string>{"w[0]/more", "w[1]/more"});
    REQUIRE(result.step_results[0].iterations);
    CHECK(result.step_results[0].iterations->waiting == 1);
  }
}

TEST_CASE("long steps report heartbeats") {
  fake_runner runner;
  recorder events;
  auto o = opts();
  o.heartbeat = std::chrono::milliseconds(20);
  run(runner, events, make({bash("long", "sleep:150")}), o);
  const auto beats = events.of(event_kind::step_heartbeat);
  CHECK(beats.size() >= 2);
  CHECK(beats.size() <= 8);
  for (const auto& b : beats) CHECK(b.step == "long");
}

TEST_CASE("stages run in order with stage built-ins and skip on a false stage condition") {
  fake_runner runner;
  recorder events;
  recipe r;
  r.name = "staged";
  stage one;
  one.name = "build";
  one.steps = {bash("b", "out:{{stage.name}}")};
  stage two;
  two.name = "deploy";
  two.condition = "false";
  two.steps = {bash("d", "x")};
  r.stages = {one, two};
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[0].output == "build");
  CHECK(result.step_results[1].status == step_status::skipped);
}

TEST_CASE("a foreach of ten thousand items fits the default limits and keeps at most its workers in flight") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "out:{{item}}"), "{{items}}", 0);
  s.foreach->collect = "all";
  auto r = make({s});
  boost::json::array items;
  for (int i = 0; i < 10000; ++i) items.push_back(i);
  r.context["items"] = items;
  const auto result = run(runner, events, r, opts(64));
  REQUIRE(result.status == run_status::completed);
  CHECK(result.step_results[0].iterations->completed == 10000);
  CHECK(runner.peak == 64);
  CHECK(result.context.at("all").as_array().back() == 9999);
}

TEST_CASE("dag order ignores words inside condition string literals and refuses reference cycles") {
  fake_runner runner;
  recorder events;
  auto prepare = bash("prepare", "out:p");
  prepare.condition = "mode == 'fast'";  // 'fast' is text, not a reference to the output below
  auto measure = bash("measure", "out:m");
  measure.depends_on = {"prepare"};
  measure.output = "fast";
  auto r = make({prepare, measure});
  r.context["mode"] = "fast";
  r.execution = execution_mode::dag;
  const auto fine = run(runner, events, r);
  CHECK(fine.status == run_status::completed);

  auto a = bash("a", "out:{{b}}x");
  a.output = "a";
  auto b = bash("b", "out:{{a}}y");
  b.output = "b";
  auto cyclic = make({a, b});
  cyclic.execution = execution_mode::dag;
  const auto refused = validate_recipe(cyclic);
  REQUIRE(refused.size() == 1);
  CHECK_THAT(refused[0].message, Catch::Contains("wait for each other") && Catch::Contains("a -> b -> a"));
  const auto result = run(runner, events, cyclic);  // the scheduler never waits forever either
  CHECK(result.status == run_status::failed);
  CHECK_THAT(result.error, Catch::Contains("a -> b -> a"));
}

TEST_CASE("a slot handed over as a sibling fails fast does not start its child") {
  fake_runner runner;
  recorder events;
  auto r = make({grouped(bash("a", "sleep:20 fail:1"), "g"), grouped(bash("b", "sleep:2000"), "g"),
                 grouped(bash("c", "sleep:2000"), "g")});
  const auto result = run(runner, events, r, opts(1));
  CHECK(result.status == run_status::failed);
  CHECK(runner.calls.size() == 1);  // b and c waited for the only slot and never started
  CHECK(result.step_results[1].status == step_status::cancelled);
  CHECK(result.step_results[2].status == step_status::cancelled);
}

TEST_CASE("a large group prepares its bash members only as slots come free, and starts them in order") {
  fake_runner runner;
  recorder events;
  std::vector<step> steps;
  // {{later}} is declared (the last step sets it) but unset during the group: rendering a
  // member warns, which shows when the member was prepared.
  for (int i = 0; i < 12; ++i) steps.push_back(grouped(bash("m" + std::to_string(i), "sleep:1 out:{{later}}"), "g"));
  auto last = bash("last", "out:x");
  last.output = "later";
  steps.push_back(last);
  const auto result = run(runner, events, make(steps), opts(2));
  REQUIRE(result.status == run_status::completed);
  std::vector<std::string> expected;
  for (int i = 0; i < 12; ++i) expected.push_back("m" + std::to_string(i));
  expected.push_back("last");
  CHECK(runner.started == expected);
  CHECK(runner.peak == 2);
  // Two slots, four workers: m11 is prepared only after m0 has finished, not at the start.
  std::size_t m0_end = 0, m11_warning = 0;
  for (std::size_t k = 0; k < events.events.size(); ++k) {
    const auto& e = events.events[k];
    if (e.kind == event_kind::step_end && e.step == "m0") m0_end = k;
    if (e.kind == event_kind::warning && e.step == "m11") m11_warning = k;
  }
  REQUIRE(m0_end > 0);
  CHECK(m11_warning > m0_end);
}

TEST_CASE("members of a group stopped before a worker took them end cancelled, with their step_end") {
  fake_runner runner;
  recorder events;
  std::vector<step> steps = {grouped(bash("a", "sleep:5 fail:1"), "g")};
  for (int i = 0; i < 8; ++i) steps.push_back(grouped(bash("m" + std::to_string(i), "sleep:5"), "g"));
  const auto result = run(runner, events, make(steps), opts(1));
  CHECK(result.status == run_status::failed);
  REQUIRE(result.step_results.size() == 9);
  for (std::size_t i = 1; i < 9; ++i) {
    INFO(result.step_results[i].step_id);
    CHECK(result.step_results[i].status == step_status::cancelled);
  }
  std::set<std::string> ended;
  for (const auto& e : events.of(event_kind::step_end)) ended.insert(e.step);
  CHECK(ended.size() == 9);
}

TEST_CASE("group members that retry wait out their delays together, not a few at a time") {
  fake_runner runner;
  recorder events;
  std::vector<step> steps;
  for (int i = 0; i < 6; ++i) {
    auto m = grouped(bash("m" + std::to_string(i), "fail:1"), "g");
    m.retry = retry_policy{.max_attempts = 2, .backoff = backoff_kind::constant, .initial_delay = 0.1};
    m.on_error = on_error_policy::continue_run;
    steps.push_back(m);
  }
  run(runner, events, make(steps), opts(1));
  REQUIRE(runner.started.size() == 12);
  // Every first attempt comes before any retry: no member's wait held up the others.
  const std::set<std::string> first(runner.started.begin(), runner.started.begin() + 6);
  CHECK(first.size() == 6);
}

TEST_CASE("group members a stop reached before they started settle by their tags, the others end cancelled") {
  fake_runner runner;
  recorder events;
  std::vector<step> steps = {grouped(bash("a", "sleep:5 fail:1"), "g"), grouped(bash("b", "sleep:500"), "g")};
  for (int i = 0; i < 4; ++i) {
    auto m = grouped(bash("t" + std::to_string(i), "sleep:5"), "g");
    m.when_tags = {i % 2 ? "wanted" : "other"};
    steps.push_back(m);
  }
  steps.front().when_tags = steps[1].when_tags = {"wanted"};
  auto o = opts(1);
  o.include_tags = {"wanted"};
  const auto result = run(runner, events, make(steps), o);
  CHECK(result.status == run_status::failed);
  REQUIRE(result.step_results.size() == 6);
  CHECK(result.step_results[1].status == step_status::cancelled);  // waited for the slot in vain
  CHECK(result.step_results[2].status == step_status::skipped);    // tag "other"
  CHECK(result.step_results[3].status == step_status::cancelled);
  CHECK(result.step_results[4].status == step_status::skipped);
  CHECK(result.step_results[5].status == step_status::cancelled);
  CHECK(events.of(event_kind::step_end).size() == 6);
}

TEST_CASE("on_error continue cannot swallow the max_total_steps limit") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "x"), "[1,2,3,4,5,6]");
  s.on_error = on_error_policy::continue_run;
  auto r = make({s});
  r.recursion.max_total_steps = 3;
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::failed);
  CHECK(runner.calls.size() == 3);
}

namespace {

struct throwing_runner final : step_runner {
  boost::asio::awaitable<leaf_outcome> run_bash(bash_invocation) override {
    co_await boost::asio::post(co_await boost::asio::this_coro::executor, boost::asio::use_awaitable);
    throw std::runtime_error("runner fault");
  }
};

}  // namespace

TEST_CASE("an arun fault inside a run reaches the caller instead of hanging the run") {
  throwing_runner runner;
  recorder events;
  recipe_engine eng(runner, events);
  CHECK_THROWS_WITH(test::run_sync(eng.run(make({bash("a", "x")}), opts())), "runner fault");
}

TEST_CASE("a partial cancellation of the caller stops the run too") {
  fake_runner runner;
  recorder events;
  const auto r = make({bash("long", "sleep:5000")});  // the recipe must outlive the run
  const auto result = run_interrupted(runner, events, r, opts(), std::chrono::milliseconds(30),
                                      boost::asio::cancellation_type::partial);
  REQUIRE(result);
  CHECK(result->status == run_status::cancelled);
}

TEST_CASE("timeout on a sub-recipe call or a loop with a steps body stops what it runs") {
  fake_runner runner;
  recorder events;
  fake_library lib;
  auto child = make({bash("slow", "sleep:5000")});
  child.name = "child";
  lib.recipes["child"] = child;
  auto c = call("c", "child");
  c.timeout = std::chrono::duration<double>(0.05);
  c.on_error = on_error_policy::continue_run;
  step loop;
  loop.id = "loop";
  loop.type = step_type::loop;
  loop.foreach = foreach_spec{};
  loop.foreach->items = boost::json::array{1, 2};
  loop.steps = {bash("inner", "sleep:5000")};
  loop.timeout = std::chrono::duration<double>(0.05);
  auto o = opts();
  o.recipes = &lib;
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = run(runner, events, make({c, loop}), o);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[0].timed_out);
  CHECK_THAT(result.step_results[0].error, Catch::Contains("timed out after"));
  CHECK(result.step_results[1].status == step_status::failed);
  CHECK(result.step_results[1].timed_out);
  CHECK(result.status == run_status::failed);
}

TEST_CASE("retry on a loop with a steps body and parallel_group under dag are warned about") {
  step loop;
  loop.id = "loop";
  loop.type = step_type::loop;
  loop.foreach = foreach_spec{};
  loop.foreach->items = boost::json::array{1};
  loop.steps = {bash("inner", "x")};
  loop.retry = retry_policy{};
  auto g = grouped(bash("g", "x"), "grp");
  auto r = make({loop, g});
  r.execution = execution_mode::dag;
  const auto found = validate_recipe(r);
  REQUIRE(found.size() == 2);
  CHECK(found[0].level == severity::warning);
  CHECK_THAT(found[0].message, Catch::Contains("'retry' on loop step 'loop' has no effect"));
  CHECK_THAT(found[1].message, Catch::Contains("'parallel_group' of step 'g' has no effect under execution: dag"));
}

TEST_CASE("a foreach over an empty list is skipped, with a warning, and its collect is the empty list") {
  fake_runner runner;
  recorder events;
  auto s = foreach_of(bash("fan", "{{item}}"), "[]");
  s.foreach->collect = "got";
  const auto result = run(runner, events, make({s, bash("after", "x")}));
  CHECK(result.status == run_status::completed);
  CHECK(result.step_results[0].status == step_status::skipped);
  CHECK(result.step_results[0].iterations->total == 0);
  CHECK(result.context.at("got") == boost::json::array{});
  CHECK(result.step_results[1].status == step_status::completed);
  CHECK(runner.calls.size() == 1);  // only `after`
  bool warned = false;
  for (const auto& e : events.events)
    warned = warned || (e.kind == event_kind::warning && e.message.find("no items") != std::string::npos);
  CHECK(warned);
}

TEST_CASE("a loop's result names its failed iterations in item order, whatever order they failed in") {
  fake_runner runner;
  recorder events;
  // Item 0 fails last (after 40 ms), the others before it: the list still starts with it.
  auto s = foreach_of(bash("fan", "sleep:{{item}} fail:{{item}}"), "{{items}}", 0);
  s.on_error = on_error_policy::continue_run;
  auto r = make({s});
  r.context["items"] = boost::json::array{40, 5, 1, 2};
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::completed);
  CHECK(runner.finished.back() == "fan[0]");
  const auto& failed = result.step_results[0].failed_instances;
  REQUIRE(failed.size() == 4);
  CHECK(failed[0].instance == "fan[0]");
  CHECK(failed[0].error == "step 'fan[0]' (item: 40): exit code 40");
  CHECK(failed[1].instance == "fan[1]");
  CHECK(failed[3].instance == "fan[3]");
  // A while loop's too, in the order they ran.
  auto poll = bash("poll", "fail:7");
  poll.on_error = on_error_policy::continue_run;
  while_spec w;
  w.condition = "_loop_index < 3";
  w.max_iterations = 5;
  poll.loop_while = w;
  const auto polled = run(runner, events, make({poll}));
  const auto& failed_polls = polled.step_results[0].failed_instances;
  REQUIRE(failed_polls.size() == 3);
  CHECK(failed_polls[0].instance == "poll[0]");
  CHECK(failed_polls[2].instance == "poll[2]");
}
