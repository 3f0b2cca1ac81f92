// Where leaves run and what they ask for, through the engine with a fake runner: a leaf's
// `resources` (its own over its recipe's and its calling steps'), `executor: local`, hooks
// kept local, and `cpus` as slots of the run's limit when leaves run on this machine.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <map>
#include <memory>
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

step parallel_foreach(step s, const std::string& items) {
  foreach_spec f;
  f.items = boost::json::string(items);
  f.max_concurrent = 0;  // the run's limit
  s.foreach = f;
  return s;
}

std::shared_ptr<const step_resources> asking(std::optional<int> cpus, std::string partition = {},
                                             std::map<std::string, int, std::less<>> licenses = {}) {
  step_resources r;
  r.cpus = cpus;
  r.partition = std::move(partition);
  r.licenses = std::move(licenses);
  return std::make_shared<const step_resources>(std::move(r));
}

recipe make(std::vector<step> steps) {
  recipe r;
  r.name = "t";
  r.steps = std::move(steps);
  r.context["items"] = boost::json::array{1, 2, 3, 4};
  return r;
}

run_result run(fake_runner& runner, const recipe& r, int max_concurrent, bool leaves_run_here = true,
               recipe_source* recipes = nullptr) {
  recorder events;
  run_options o;
  o.session_id = "sid";
  o.max_concurrent = max_concurrent;
  o.leaves_run_here = leaves_run_here;
  o.recipes = recipes;
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

struct one_child final : recipe_source {
  recipe child;
  loaded_recipe load(std::string_view, const recipe&) override {
    return {std::make_shared<const recipe>(child), {}};
  }
};

}  // namespace

TEST_CASE("placement: a leaf run here holds as many of the run's slots as it asks cpus") {
  fake_runner plain;
  CHECK(run(plain, make({parallel_foreach(bash("each", "sleep:20"), "{{items}}")}), 4).status == run_status::completed);
  CHECK(plain.peak == 4);  // the control: one slot each

  fake_runner weighted;
  auto heavy = parallel_foreach(bash("each", "sleep:20"), "{{items}}");
  heavy.resources = asking(2);
  CHECK(run(weighted, make({heavy}), 4).status == run_status::completed);
  CHECK(weighted.peak == 2);

  // More cpus than the limit: each instance takes every slot, and the run still ends.
  fake_runner greedy;
  heavy.resources = asking(16);
  CHECK(run(greedy, make({heavy}), 4).status == run_status::completed);
  CHECK(greedy.peak == 1);
}

TEST_CASE("placement: cpus are the cluster's to place unless the step stays local") {
  fake_runner cluster;
  auto heavy = parallel_foreach(bash("each", "sleep:20"), "{{items}}");
  heavy.resources = asking(2);
  CHECK(run(cluster, make({heavy}), 4, false).status == run_status::completed);
  CHECK(cluster.peak == 4);

  fake_runner kept_local;
  heavy.local_only = true;
  CHECK(run(kept_local, make({heavy}), 4, false).status == run_status::completed);
  CHECK(kept_local.peak == 2);
  REQUIRE(kept_local.calls.size() == 4);
  CHECK(kept_local.calls[0].placement.local_only);
}

TEST_CASE("placement: a leaf's resources are its own over its recipe's and its calling step's") {
  one_child lib;
  auto inner = bash("inner", "out:x");
  inner.resources = asking(4);
  lib.child.name = "child";
  lib.child.steps = {inner, bash("bare", "out:y")};
  lib.child.resources = asking(std::nullopt, "child-part");

  step call;
  call.id = "call";
  call.type = step_type::recipe;
  call.call.recipe = "child";
  call.resources = asking(1, "caller-part", {{"tok", 2}});
  call.local_only = true;
  auto top = make({bash("plain", "out:p"), call});
  top.resources = asking(std::nullopt, "top-part", {{"tok", 1}, {"other", 1}});

  fake_runner runner;
  REQUIRE(run(runner, top, 8, false, &lib).status == run_status::completed);
  REQUIRE(runner.calls.size() == 3);
  std::map<std::string, leaf_placement> by_id;
  for (const auto& c : runner.calls) by_id[c.instance_id] = c.placement;

  const auto& plain = by_id.at("plain");
  REQUIRE(plain.resources);
  CHECK(plain.resources->partition == "top-part");
  CHECK_FALSE(plain.local_only);

  // inner: cpus its own, partition the child recipe's, licenses the caller's over the top's.
  const auto& deep = by_id.at("call/inner");
  REQUIRE(deep.resources);
  CHECK(deep.resources->cpus == 4);
  CHECK(deep.resources->partition == "child-part");
  CHECK(deep.resources->licenses == std::map<std::string, int, std::less<>>{{"other", 1}, {"tok", 2}});
  CHECK(deep.local_only);  // the calling step's executor: local

  const auto& bare = by_id.at("call/bare");
  REQUIRE(bare.resources);
  CHECK(bare.resources->cpus == 1);
  CHECK(bare.resources->partition == "child-part");
}

TEST_CASE("placement: hooks run on arun's machine and take no resources") {
  auto r = make({bash("work", "out:w")});
  r.resources = asking(2, "p");
  r.hooks.pre_step = "out:hook";
  fake_runner runner;
  REQUIRE(run(runner, r, 8, false).status == run_status::completed);
  REQUIRE(runner.calls.size() == 2);
  CHECK(runner.calls[0].placement.local_only);  // the hook
  CHECK_FALSE(runner.calls[0].placement.resources);
  CHECK_FALSE(runner.calls[1].placement.local_only);
  REQUIRE(runner.calls[1].placement.resources);
  CHECK(runner.calls[1].placement.resources->partition == "p");
}
