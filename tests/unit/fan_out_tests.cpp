// A foreach of one leaf handed to a runner that takes whole fan-outs (a cluster's job
// arrays): every item asks at once with the loop's share, the loop holds its throttle's
// slots and gives them back as its tail drains, and what would make a leaf wait for a slot
// of its own (hooks, an agent rate limit, a longer body, a leaf kept local), or must not start
// after an earlier item failed (a sequential loop, skip_remaining), keeps the usual
// one-slot-per-item start.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace arun;
using test::fake_runner;
using test::recorder;

namespace {

step bash(const std::string& id, const std::string& command) {
  step s;
  s.id = id;
  s.command = command;
  return s;
}

step looping(step s, const std::string& items, int max_concurrent = 0) {
  foreach_spec f;
  f.items = boost::json::string(items);
  f.max_concurrent = max_concurrent;
  s.foreach = f;
  return s;
}

recipe make(std::vector<step> steps, boost::json::array items) {
  recipe r;
  r.name = "t";
  r.steps = std::move(steps);
  r.context["items"] = std::move(items);
  return r;
}

run_result run(fake_runner& runner, const recipe& r, int max_concurrent, recorder* seen = nullptr) {
  recorder own;
  recorder& events = seen ? *seen : own;
  run_options o;
  o.session_id = "sid";
  o.max_concurrent = max_concurrent;
  o.leaves_run_here = false;
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

// The fan-out shares the runner was given, by loop id.
std::set<std::uint64_t> shares(const fake_runner& runner) {
  std::set<std::uint64_t> ids;
  for (const auto& c : runner.calls)
    if (c.placement.fan_out) ids.insert(c.placement.fan_out->id);
  return ids;
}

}  // namespace

TEST_CASE("fan-out: a foreach of one leaf asks for every item at once with its loop's share") {
  fake_runner runner;
  runner.fan_outs = true;
  const auto r = run(runner, make({looping(bash("each", "sleep:30 out:item-{{item}}"), "{{items}}", 2)},
                                  boost::json::array{1, 2, 3, 4, 5, 6}),
                     4);
  CHECK(r.status == run_status::completed);
  REQUIRE(runner.calls.size() == 6);
  // Not one per free slot: the runner got all six together and throttles them itself.
  CHECK(runner.peak == 6);
  for (const auto& c : runner.calls) {
    REQUIRE(c.placement.fan_out);
    CHECK(c.placement.fan_out->items == 6);
    CHECK(c.placement.fan_out->throttle == 2);  // the loop's max_concurrent, under the run's 4
  }
  CHECK(shares(runner).size() == 1);
  const auto& outputs = r.step_results.at(0).output.as_array();
  REQUIRE(outputs.size() == 6);
  CHECK(outputs[5] == "item-6");
}

TEST_CASE("fan-out: the throttle is the run's limit when the loop's own is larger or unset") {
  fake_runner runner;
  runner.fan_outs = true;
  step body = bash("each", "out:{{item}}");
  recipe r = make({looping(bash("all", "out:{{item}}"), "{{items}}", 0)}, boost::json::array{1, 2, 3});
  r.steps.front().steps.push_back(body);  // the `steps:` form with one leaf is handed off too
  r.steps.front().command.clear();
  CHECK(run(runner, r, 2).status == run_status::completed);
  REQUIRE(runner.calls.size() == 3);
  for (const auto& c : runner.calls) {
    REQUIRE(c.placement.fan_out);
    CHECK(c.placement.fan_out->throttle == 2);
  }
}

TEST_CASE("fan-out: the loop's slots go back to its siblings as its tail drains") {
  // Run limit 2: the loop of four items holds both slots while more than one item is
  // unfinished. Three items end at once; the sibling then gets the freed slot and runs while
  // the slow fourth item still does, and never while the loop could use both slots.
  fake_runner runner;
  runner.fan_outs = true;
  step loop = looping(bash("each", "{{item}}"), "{{items}}", 0);
  loop.parallel_group = "g";
  step sibling = bash("sibling", "out:sibling");
  sibling.parallel_group = "g";
  const auto r =
      run(runner, make({loop, sibling}, boost::json::array{"sleep:40", "sleep:40", "sleep:40", "sleep:600"}), 2);
  CHECK(r.status == run_status::completed);
  const auto at = [&](const std::vector<std::string>& order, const std::string& id) {
    return std::find(order.begin(), order.end(), id) - order.begin();
  };
  const auto sibling_started = at(runner.started, "sibling");
  REQUIRE(sibling_started == 4);  // after the loop's four leaves had asked
  // Three of the loop's leaves had finished before the sibling started; the slow one had not.
  CHECK(runner.finished.size() == 5);
  CHECK(at(runner.finished, "each[3]") == 4);
  CHECK(at(runner.finished, "sibling") == 3);
}

TEST_CASE("fan-out: a retried item asks again with its share and the loop still ends") {
  fake_runner runner;
  runner.fan_outs = true;
  runner.failures_left["flaky"] = 1;
  step each = looping(bash("each", "{{item}}"), "{{items}}", 0);
  retry_policy retry;
  retry.max_attempts = 2;
  retry.initial_delay = 0.001;
  each.retry = retry;
  const auto r = run(runner, make({each}, boost::json::array{"flaky", "steady"}), 2);
  CHECK(r.status == run_status::completed);
  REQUIRE(runner.calls.size() == 3);
  CHECK(runner.calls.back().placement.fan_out);
}

TEST_CASE("fan-out: what would make a leaf wait for a slot of its own keeps one start per slot") {
  fake_runner runner;
  runner.fan_outs = true;
  auto items = boost::json::array{"sleep:20", "sleep:20", "sleep:20", "sleep:20"};

  SECTION("a recipe with hooks") {
    recipe r = make({looping(bash("each", "{{item}}"), "{{items}}", 0)}, items);
    r.hooks.post_step = "true";
    CHECK(run(runner, r, 2).status == run_status::completed);
  }
  SECTION("a body of two steps") {
    step loop = looping(bash("each", ""), "{{items}}", 0);
    loop.command.clear();
    loop.steps = {bash("a", "{{item}}"), bash("b", "{{item}}")};
    CHECK(run(runner, make({loop}, items), 2).status == run_status::completed);
  }
  SECTION("a loop that runs one item at a time") {
    CHECK(run(runner, make({looping(bash("each", "{{item}}"), "{{items}}", 1)}, items), 2).status ==
          run_status::completed);
  }
  SECTION("a leaf whose failure skips the remaining items") {
    step loop = looping(bash("each", ""), "{{items}}", 0);
    loop.command.clear();
    loop.steps = {bash("one", "{{item}}")};
    loop.steps.front().on_error = on_error_policy::skip_remaining;
    CHECK(run(runner, make({loop}, items), 2).status == run_status::completed);
  }
  SECTION("a loop whose failed item skips the remaining ones") {
    step loop = looping(bash("each", ""), "{{items}}", 0);
    loop.command.clear();
    loop.steps = {bash("one", "{{item}}")};
    loop.on_error = on_error_policy::skip_remaining;
    CHECK(run(runner, make({loop}, items), 2).status == run_status::completed);
  }
  SECTION("a leaf kept on arun's machine") {
    step loop = looping(bash("each", "{{item}}"), "{{items}}", 0);
    loop.local_only = true;
    CHECK(run(runner, make({loop}, items), 2).status == run_status::completed);
  }
  SECTION("an agent leaf under max_concurrent_llm") {
    step loop = looping(bash("each", ""), "{{items}}", 0);
    loop.command.clear();
    loop.type = step_type::agent;
    loop.agent.prompt = "{{item}}";
    recipe r = make({loop}, items);
    r.rate_limiting.max_concurrent_llm = 2;
    CHECK(run(runner, r, 2).status == run_status::completed);
    CHECK(runner.agent_calls.size() == 4);
    for (const auto& c : runner.agent_calls) CHECK_FALSE(c.placement.fan_out);
  }
  CHECK(shares(runner).empty());
  CHECK(runner.peak <= 2);
}

TEST_CASE("fan-out: a leaf waiting in the runner's queue starts when the runner says it runs") {
  // each[0] waits 100 ms in the queue; each[1] runs at once and ends. Progress must show
  // each[1] running and done before each[0] starts, not both started at submission.
  fake_runner runner;
  runner.fan_outs = true;
  recorder events;
  const auto r = run(runner, make({looping(bash("each", "{{item}}"), "{{items}}", 0)},
                                  boost::json::array{"queued:100 out:a", "out:b"}),
                     4, &events);
  CHECK(r.status == run_status::completed);
  std::vector<std::string> order;
  for (const auto& e : events.events)
    if ((e.kind == event_kind::step_start || e.kind == event_kind::step_end) && e.step.starts_with("each["))
      order.push_back(std::string(e.kind == event_kind::step_start ? "start " : "end ") + e.step);
  const std::vector<std::string> expected = {"start each[1]", "end each[1]", "start each[0]", "end each[0]"};
  CHECK(order == expected);
}

TEST_CASE("a leaf placed on a cluster starts when its job runs and its duration leaves out its time queued") {
  // Two steps of a parallel group, each a job of its own: `slow` waits 150 ms in the queue,
  // `quick` runs at once. Progress shows quick started and done before slow starts; slow's
  // duration is its run, the 150 ms said apart as queued; quick queued nothing.
  fake_runner runner;
  runner.fan_outs = true;
  recorder events;
  auto slow = bash("slow", "queued:150 out:s");
  slow.parallel_group = "g";
  auto quick = bash("quick", "out:q");
  quick.parallel_group = "g";
  const auto r = run(runner, make({slow, quick}, boost::json::array{}), 4, &events);
  CHECK(r.status == run_status::completed);
  std::vector<std::string> order;
  for (const auto& e : events.events)
    if (e.kind == event_kind::step_start || e.kind == event_kind::step_end)
      order.push_back(std::string(e.kind == event_kind::step_start ? "start " : "end ") + e.step);
  const std::vector<std::string> expected = {"start quick", "end quick", "start slow", "end slow"};
  CHECK(order == expected);
  REQUIRE(r.step_results.size() == 2);
  const auto& s = r.step_results[0];
  REQUIRE(s.queued);
  CHECK(*s.queued == std::chrono::milliseconds(150));
  CHECK(s.duration < std::chrono::milliseconds(150));
  CHECK(s.ended_at - s.started_at >= std::chrono::milliseconds(150));  // the wall clock's, wait included
  CHECK_FALSE(r.step_results[1].queued);
}

TEST_CASE("a failed foreach iteration is named with its item, shortened and with control characters escaped") {
  fake_runner runner;
  runner.failures_left["check tests/test_x.py"] = 1;
  auto r = make({looping(bash("c", "check {{item}}"), "{{items}}", 1)}, {"tests/test_a.py", "tests/test_x.py"});
  auto result = run(runner, r, 1);
  REQUIRE(result.step_results.size() == 1);
  CHECK(result.step_results[0].error == "step 'c[1]' (item: tests/test_x.py): exit code 1");

  const std::string long_item = "line1\nline2\t" + std::string(70, 'x');
  fake_runner again;
  again.failures_left["check " + long_item] = 1;
  r = make({looping(bash("c", "check {{item}}"), "{{items}}", 1)}, {long_item});
  result = run(again, r, 1);
  CHECK(result.step_results[0].error ==
        "step 'c[0]' (item: line1\\nline2\\t" + std::string(48, 'x') + "…): exit code 1");
  // Not a string: its compact JSON.
  fake_runner objects;
  r = make({looping(bash("c", "fail:1"), "{{items}}", 1)}, {boost::json::object{{"a", 1}}});
  result = run(objects, r, 1);
  CHECK(result.step_results[0].error == "step 'c[0]' (item: {\"a\":1}): exit code 1\nboom");
}
