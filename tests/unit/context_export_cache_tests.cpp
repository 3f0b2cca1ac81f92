// The context export is built once per version of the context and shared by the steps that
// run against it (scheduler/step_executor.hpp context_export_cache): every step still sees the
// context as it is when the step starts, through sequences, groups, loops, gates and
// sub-recipes.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <boost/json/parse.hpp>

#include <map>
#include <string>

using namespace arun;
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

struct one_recipe final : recipe_source {
  recipe child;
  loaded_recipe load(std::string_view, const recipe&) override {
    loaded_recipe out;
    out.value = std::make_shared<const recipe>(child);
    return out;
  }
};

run_result run(fake_runner& runner, const recipe& r, recipe_source* recipes = nullptr) {
  recorder events;
  recipe_engine eng(runner, events);
  run_options o;
  o.session_id = "sid";
  o.max_concurrent = 4;
  o.recipes = recipes;
  return test::run_sync(eng.run(r, std::move(o)));
}

// The environment additions the fake runner saw for `instance`, by name.
std::map<std::string, std::string> exports_of(const fake_runner& runner, const std::string& instance) {
  for (const auto& call : runner.calls)
    if (call.instance_id == instance) {
      std::map<std::string, std::string> m;
      for (const auto& v : call.exports) m[v.name] = v.value;
      return m;
    }
  FAIL("no call for " << instance);
  return {};
}

}  // namespace

TEST_CASE("each step exports the context as it is when the step starts, not as an earlier step saw it") {
  fake_runner runner;
  recipe r;
  r.name = "t";
  r.context = boost::json::parse(R"({"x": "zero", "list": [1, 2, 3]})").as_object();
  r.steps = {bash("first", "echo"), bash("set-one", "out:one", "x"), bash("second", "echo"),
             bash("set-two", "out:two", "x"), bash("set-new", "out:fresh", "added"), bash("third", "echo")};
  const auto result = run(runner, r);
  REQUIRE(result.success());
  CHECK(exports_of(runner, "first").at("RECIPE_VAR_x") == "zero");
  CHECK(exports_of(runner, "second").at("RECIPE_VAR_x") == "one");
  CHECK(exports_of(runner, "second").at("X") == "one");
  const auto third = exports_of(runner, "third");
  CHECK(third.at("RECIPE_VAR_x") == "two");
  CHECK(third.at("RECIPE_VAR_added") == "fresh");
  CHECK(third.at("RECIPE_VAR_list") == "[1,2,3]");
  CHECK_FALSE(exports_of(runner, "first").contains("RECIPE_VAR_added"));
}

TEST_CASE("iterations share the context's export, their loop variables and outputs hide its keys") {
  fake_runner runner;
  recipe r;
  r.name = "t";
  r.context = boost::json::parse(R"({"item": "context's", "items": ["a", "b", "c"], "shared": "s"})").as_object();
  auto loop = bash("each", "echo");
  foreach_spec f;
  f.items = boost::json::string("{{items}}");
  f.max_concurrent = 2;
  loop.foreach = f;
  r.steps = {loop, bash("set", "out:changed", "shared"), bash("after", "echo")};
  REQUIRE(run(runner, r).success());
  for (const auto& [i, item] : std::map<int, std::string>{{0, "a"}, {1, "b"}, {2, "c"}}) {
    const auto e = exports_of(runner, "each[" + std::to_string(i) + "]");
    CHECK(e.at("RECIPE_VAR_item") == item);
    CHECK(e.at("ITEM") == item);
    CHECK(e.at("RECIPE_VAR_shared") == "s");
    CHECK(e.at("RECIPE_VAR__loop_index") == std::to_string(i));
  }
  const auto after = exports_of(runner, "after");
  CHECK(after.at("RECIPE_VAR_shared") == "changed");
  CHECK(after.at("RECIPE_VAR_item") == "context's");  // the loop's variable is gone again
  CHECK_FALSE(after.contains("RECIPE_VAR__loop_index"));
}

TEST_CASE("a sub-recipe's steps export its own context, and the caller's export sees what it created") {
  fake_runner runner;
  one_recipe library;
  auto& child = library.child;
  child.name = "child";
  child.context = boost::json::parse(R"({"inner": "default"})").as_object();
  child.steps = {bash("in-before", "echo"), bash("make", "out:made", "created"), bash("in-after", "echo")};
  recipe r;
  r.name = "t";
  r.context = boost::json::parse(R"({"outer": "o"})").as_object();
  step call;
  call.id = "call";
  call.type = step_type::recipe;
  call.call.recipe = "child";
  r.steps = {bash("before", "echo"), call, bash("after", "echo")};
  const auto result = run(runner, r, &library);
  REQUIRE(result.success());
  CHECK(exports_of(runner, "call/in-before").at("RECIPE_VAR_outer") == "o");
  CHECK(exports_of(runner, "call/in-before").at("RECIPE_VAR_inner") == "default");
  CHECK_FALSE(exports_of(runner, "call/in-before").contains("RECIPE_VAR_created"));
  CHECK(exports_of(runner, "call/in-after").at("RECIPE_VAR_created") == "made");
  CHECK_FALSE(exports_of(runner, "before").contains("RECIPE_VAR_inner"));
  CHECK(exports_of(runner, "after").at("RECIPE_VAR_created") == "made");
}
