// -k/--keep-going as `make -k` (docs/running.md, "Keep going"): after a failure the rest runs,
// what depends on the failed step (depends_on, or reading its output) is not run and names
// it, and the run ends failed. With the fake runner, in a DAG, a sequence, stages, loops.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <algorithm>

using namespace arun;
using arun::test::make;
using test::fake_runner;
using test::recorder;

namespace {

step bash(const std::string& id, const std::string& command, std::optional<std::string> output = {}) {
  step s;
  s.id = id;
  s.command = command;
  s.output = std::move(output);
  return s;
}

step after(step s, std::vector<std::string> deps) {
  s.depends_on = std::move(deps);
  return s;
}

run_result run(const recipe& r, bool keep_going, fake_runner& runner) {
  recorder events;
  run_options o;
  o.session_id = "sid";
  o.keep_going = keep_going;
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

const step_result& result_of(const run_result& r, const std::string& id) {
  const auto it = std::find_if(r.step_results.begin(), r.step_results.end(),
                               [&](const step_result& s) { return s.step_id == id; });
  REQUIRE(it != r.step_results.end());
  return *it;
}

bool started(const fake_runner& runner, const std::string& id) {
  return std::find(runner.started.begin(), runner.started.end(), id) != runner.started.end();
}

// fetch -> compile (fails) -> package -> deploy; lint on its own.
recipe build_dag() {
  auto r = make({bash("fetch", "out:src", "src"), bash("compile", "fail:2", "binary"),
                 bash("package", "out:pkg-{{binary}}", "pkg"), after(bash("deploy", "out:deployed"), {"package"}),
                 bash("lint", "sleep:20 out:clean")});
  r.execution = execution_mode::dag;
  return r;
}

// `s` looping over `items` as `as`.
step looping(step s, boost::json::array items, std::string as) {
  foreach_spec f;
  f.items = std::move(items);
  f.as = std::move(as);
  s.foreach = std::move(f);
  return s;
}

// A loop step `id` whose body is `steps` (its foreach set by looping()).
step body(const std::string& id, std::vector<step> steps) {
  step s;
  s.id = id;
  s.steps = std::move(steps);
  return s;
}

}  // namespace

TEST_CASE("keep-going in a dag: what does not depend on the failure runs, its dependents do not, the run fails") {
  fake_runner runner;
  const auto result = run(build_dag(), true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result.error == "step 'compile': exit code 2");
  CHECK(result_of(result, "fetch").status == step_status::completed);
  CHECK(result_of(result, "lint").status == step_status::completed);
  CHECK(result_of(result, "compile").status == step_status::failed);
  // Fatal for the journal: a resume runs it again, as it does a fatal failure.
  CHECK(result_of(result, "compile").fatal);
  const auto& package = result_of(result, "package");
  CHECK(package.status == step_status::not_run);
  CHECK(package.error == "step 'package': not run: it reads 'binary', and 'compile' failed");
  const auto& deploy = result_of(result, "deploy");
  CHECK(deploy.status == step_status::not_run);
  CHECK(deploy.error == "step 'deploy': not run: its dependency 'package' was not run ('compile' failed)");
  CHECK_FALSE(started(runner, "package"));
  CHECK_FALSE(started(runner, "deploy"));
}

TEST_CASE("without keep-going the same dag stops at the failure") {
  fake_runner runner;
  const auto result = run(build_dag(), false, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "package").status == step_status::not_run);
  CHECK(result_of(result, "package").error.empty());
}

TEST_CASE("keep-going leaves alone a step whose author decided: on_error continue tolerates, fail stops") {
  fake_runner runner;
  SECTION("on_error: continue: the failure is accepted, its dependents run, the run completes") {
    auto r = build_dag();
    r.steps[1].on_error = on_error_policy::continue_run;
    const auto result = run(r, true, runner);
    CHECK(result.status == run_status::completed);
    CHECK(result_of(result, "compile").status == step_status::failed);
    CHECK_FALSE(result_of(result, "compile").fatal);
    CHECK(result_of(result, "package").status == step_status::completed);
    CHECK(result_of(result, "deploy").status == step_status::completed);
  }
  SECTION("on_error: fail written out: the failure stops the run as it would without -k") {
    auto r = build_dag();
    r.steps[1].key_where.push_back({"on_error", 3, 5});
    const auto result = run(r, true, runner);
    CHECK(result.status == run_status::failed);
    CHECK(result_of(result, "package").status == step_status::not_run);
    CHECK(result_of(result, "package").error.empty());  // stopped, not held back
  }
}

TEST_CASE("keep-going in a sequence: later steps run, except those reading a failed step's output") {
  fake_runner runner;
  auto r = make({bash("a", "fail:1", "x"), bash("b", "out:b"), bash("c", "out:{{x}}", "y"), bash("d", "out:{{y}}"),
                 bash("e", "out:e")});
  const auto result = run(r, true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "b").status == step_status::completed);
  CHECK(result_of(result, "c").status == step_status::not_run);
  CHECK(result_of(result, "c").error == "step 'c': not run: it reads 'x', and 'a' failed");
  CHECK(result_of(result, "d").status == step_status::not_run);
  CHECK(result_of(result, "d").error == "step 'd': not run: it reads 'y', and 'c' was not run ('a' failed)");
  CHECK(result_of(result, "e").status == step_status::completed);
}

TEST_CASE("keep-going: a later step that writes the failed step's output again makes it readable") {
  fake_runner runner;
  auto r = make({bash("a", "fail:1", "x"), bash("again", "out:fresh", "x"), bash("reader", "out:{{x}}")});
  const auto result = run(r, true, runner);
  CHECK(result.status == run_status::failed);  // `a` still failed
  CHECK(result_of(result, "reader").status == step_status::completed);
  CHECK(result_of(result, "reader").output == "fresh");
}

TEST_CASE("keep-going across stages: a later stage's step reading a failed output is not run") {
  fake_runner runner;
  recipe r;
  r.name = "staged";
  stage one;
  one.name = "build";
  one.steps = {bash("compile", "fail:1", "binary"), bash("docs", "out:docs")};
  stage two;
  two.name = "ship";
  two.steps = {bash("package", "out:{{binary}}"), bash("notes", "out:notes")};
  r.stages = {one, two};
  const auto result = run(r, true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "docs").status == step_status::completed);
  CHECK(result_of(result, "package").status == step_status::not_run);
  CHECK(result_of(result, "notes").status == step_status::completed);
}

TEST_CASE("keep-going in a parallel group: the held-back member never starts, the others run") {
  fake_runner runner;
  auto a = bash("a", "fail:1", "x");
  auto g1 = bash("g1", "out:{{x}}");
  auto g2 = bash("g2", "sleep:10 out:g2");
  g1.parallel_group = g2.parallel_group = "g";
  const auto result = run(make({a, g1, g2}), true, runner);
  CHECK(result.status == run_status::failed);
  REQUIRE(result.step_results.size() == 3);
  CHECK(result.step_results[1].step_id == "g1");  // declaration order
  CHECK(result.step_results[1].status == step_status::not_run);
  CHECK(result.step_results[2].status == step_status::completed);
  CHECK_FALSE(started(runner, "g1"));
}

TEST_CASE("keep-going in a foreach: the other items run, the loop fails, a reader of its collect does not run") {
  fake_runner runner;
  runner.failures_left["out:2"] = 1;
  auto fan = bash("fan", "out:{{n}}");
  foreach_spec f;
  f.items = boost::json::array{1, 2, 3, 4};
  f.as = "n";
  f.max_concurrent = 2;
  f.collect = "all";
  fan.foreach = std::move(f);
  auto r = make({fan, bash("report", "out:{{all}}"), bash("other", "out:other")});
  const auto result = run(r, true, runner);
  CHECK(result.status == run_status::failed);
  const auto& loop = result_of(result, "fan");
  CHECK(loop.status == step_status::failed);
  REQUIRE(loop.iterations);
  CHECK(loop.iterations->completed == 3);
  CHECK(loop.iterations->failed == 1);
  CHECK(loop.error == "step 'fan': 1 of 4 items failed; the first: step 'fan[1]' (item: 2): exit code 1");
  CHECK(result_of(result, "report").status == step_status::not_run);
  CHECK(result_of(result, "other").status == step_status::completed);
  // Without -k the first failure stops the fan-out.
  fake_runner again;
  again.failures_left["out:2"] = 1;
  const auto stopped = run(r, false, again);
  CHECK(stopped.status == run_status::failed);
  CHECK(result_of(stopped, "other").status == step_status::not_run);
}

TEST_CASE("keep-going in a loop body: the failed iteration fails the loop, the other iterations run") {
  fake_runner runner;
  runner.failures_left["out:b-2"] = 1;
  const auto loop = looping(body("each", {bash("a", "out:a-{{n}}", "a_out"), bash("b", "out:b-{{n}}", "b_out"),
                                          bash("c", "out:{{b_out}}"), bash("d", "out:d-{{n}}")}),
                            {1, 2, 3}, "n");
  const auto result = run(make({loop}), true, runner);
  CHECK(result.status == run_status::failed);
  const auto& each = result_of(result, "each");
  CHECK(each.status == step_status::failed);
  REQUIRE(each.iterations);
  CHECK(each.iterations->completed == 2);
  CHECK(each.iterations->failed == 1);
  CHECK(started(runner, "each[1]/d"));      // the failed iteration went on past b
  CHECK_FALSE(started(runner, "each[1]/c"));  // but not to what reads b's output
  CHECK(started(runner, "each[2]/c"));      // and the next iteration is whole
}

TEST_CASE("keep-going in a while loop: the loop stops at the failed iteration, which the next would read") {
  fake_runner runner;
  runner.failures_left["out:tick"] = 1;
  auto s = bash("poll", "out:tick");
  while_spec w;
  w.condition = "true";
  w.max_iterations = 5;
  s.loop_while = w;
  const auto result = run(make({s, bash("independent", "out:i")}), true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "poll").status == step_status::failed);
  CHECK(runner.started.front() == "poll[0]");
  CHECK_FALSE(started(runner, "poll[1]"));
  CHECK(result_of(result, "independent").status == step_status::completed);
}

TEST_CASE("keep-going: a stage whose condition reads a failed output is not run, the later stages are") {
  fake_runner runner;
  recipe r;
  r.name = "staged";
  stage one;
  one.name = "one";
  one.steps = {bash("a", "fail:1", "aout")};
  stage two;
  two.name = "two";
  two.condition = "aout == 'new'";
  two.steps = {bash("c", "out:c", "cout")};
  stage three;
  three.name = "three";
  three.steps = {bash("e", "out:e"), bash("f", "out:{{cout}}")};
  r.stages = {one, two, three};
  r.context["aout"] = "old";
  const auto result = run(r, true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "c").status == step_status::not_run);
  CHECK(result_of(result, "c").error == "step 'c': not run: the condition of its stage 'two' reads 'aout', and 'a' failed");
  CHECK(result_of(result, "e").status == step_status::completed);
  CHECK(result_of(result, "f").status == step_status::not_run);  // it reads what c did not write
}

TEST_CASE("keep-going holds back only for what a step takes from others: its loop variable and its body's own outputs are its") {
  fake_runner runner;
  auto fan = bash("fan", "out:{{result}}");
  foreach_spec f;
  f.items = boost::json::array{1, 2};
  f.as = "result";  // named like the failed step's output, but its own
  fan.foreach = f;
  step fan2;
  fan2.id = "fan2";
  fan2.foreach = f;
  fan2.foreach->as = "n";
  fan2.steps = {bash("x", "out:x{{n}}", "result"), bash("y", "out:{{result}}")};  // writes result, then reads it
  const auto result = run(make({bash("compile", "fail:1", "result"), fan, fan2}), true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "fan").status == step_status::completed);
  CHECK(result_of(result, "fan2").status == step_status::completed);
}

TEST_CASE("keep-going: an on_error fail written out in a loop body stops the run as it does without -k") {
  fake_runner runner;
  step loop;
  loop.id = "each";
  foreach_spec f;
  f.items = boost::json::array{1, 2, 3};
  f.as = "n";
  loop.foreach = std::move(f);
  auto strict = bash("strict", "fail:1");
  strict.key_where.push_back({"on_error", 9, 7});
  loop.steps = {strict};
  const auto result = run(make({loop, bash("after", "out:after")}), true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "each").fatal);
  CHECK(result_of(result, "after").status == step_status::not_run);
  CHECK_FALSE(started(runner, "after"));
}

TEST_CASE("keep-going: a while loop that failed leaves its body's outputs unwritten for the steps after it") {
  fake_runner runner;
  step poll;
  poll.id = "poll";
  while_spec w;
  w.condition = "true";
  w.max_iterations = 3;
  poll.loop_while = w;
  poll.steps = {bash("probe", "fail:1", "val")};
  const auto result = run(make({poll, bash("reader", "out:{{val}}"), bash("other", "out:o")}), true, runner);
  CHECK(result.status == run_status::failed);
  CHECK(result_of(result, "reader").status == step_status::not_run);
  CHECK(result_of(result, "reader").error == "step 'reader': not run: it reads 'val', and 'poll' failed");
  CHECK(result_of(result, "other").status == step_status::completed);
}

TEST_CASE("a loop names the innermost failed instances: an inner loop's items and body steps, with every item") {
  fake_runner runner;
  runner.failures_left["out:x-2-b"] = 1;
  runner.failures_left["out:x-3-a"] = 1;
  runner.failures_left["out:y-3-b"] = 1;
  const auto inner = looping(bash("inner", "out:{{outer}}-{{n}}-{{letter}}"), {"a", "b"}, "letter");
  const auto each = looping(body("each", {inner, bash("after", "out:after-{{n}}")}), {1, 2, 3}, "n");
  const auto top = looping(body("top", {each}), {"x", "y"}, "outer");
  const auto result = run(make({top}), true, runner);
  CHECK(result.status == run_status::failed);
  const auto& t = result_of(result, "top");
  REQUIRE(t.failed_instances.size() == 3);
  CHECK(t.failed_instances[0].instance == "top[0]/each[1]/inner[1]");
  CHECK(t.failed_instances[0].error == "step 'top[0]/each[1]/inner[1]' (items: x, 2, b): exit code 1");
  CHECK(t.failed_instances[1].instance == "top[0]/each[2]/inner[0]");
  CHECK(t.failed_instances[1].error == "step 'top[0]/each[2]/inner[0]' (items: x, 3, a): exit code 1");
  CHECK(t.failed_instances[2].instance == "top[1]/each[2]/inner[1]");
  // Without -k the first failure stops everything: the one failure is named the same way.
  fake_runner once;
  once.failures_left["out:x-2-b"] = 1;
  const auto stopped = run(make({top}), false, once);
  const auto& s = result_of(stopped, "top");
  REQUIRE(s.failed_instances.size() == 1);
  CHECK(s.failed_instances[0].instance == "top[0]/each[1]/inner[1]");
  CHECK(s.error == "step 'top[0]/each[1]/inner[1]' (items: x, 2, b): exit code 1");
}

TEST_CASE("a loop names the failures its completed iterations hold: an inner loop's items under on_error continue") {
  fake_runner runner;
  runner.failures_left["out:a-q"] = 1;
  runner.failures_left["out:b-q"] = 1;
  auto inner = looping(bash("inner", "out:{{x}}-{{z}}"), {"p", "q"}, "z");
  inner.on_error = on_error_policy::continue_run;
  const auto top = looping(body("top", {inner}), {"a", "b"}, "x");
  const auto result = run(make({top}), false, runner);
  CHECK(result.status == run_status::completed);
  const auto& t = result_of(result, "top");
  CHECK(t.status == step_status::completed);
  REQUIRE(t.failed_instances.size() == 2);
  CHECK(t.failed_instances[0].instance == "top[0]/inner[1]");
  CHECK(t.failed_instances[0].error == "step 'top[0]/inner[1]' (items: a, q): exit code 1");
  CHECK(t.failed_instances[1].instance == "top[1]/inner[1]");
}
