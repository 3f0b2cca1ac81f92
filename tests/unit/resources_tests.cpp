// `resources:` values as text (time, extra options) and how one level's resources inherit
// from the enclosing level's.
#include <catch2/catch.hpp>

#include "recipe/resources_reader.hpp"

#include <arun/recipe.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using arun::inherit_resources;
using arun::step_resources;
using arun::io::parse_resource_time;
using arun::io::refused_extra_option;

namespace {

std::optional<long long> seconds_of(std::string_view text) {
  const auto t = parse_resource_time(text);
  if (!t) return std::nullopt;
  return t->count();
}

std::shared_ptr<const step_resources> make(step_resources r) { return std::make_shared<const step_resources>(std::move(r)); }

}  // namespace

TEST_CASE("resource time with units", "[resources]") {
  CHECK(seconds_of("45s") == 45);
  CHECK(seconds_of("90m") == 5400);
  CHECK(seconds_of("2h") == 7200);
  CHECK(seconds_of("1h30m") == 5400);
  CHECK(seconds_of("1d") == 86400);
  CHECK(seconds_of("1d2h3m4s") == 86400 + 7200 + 180 + 4);
}

TEST_CASE("resource time in the forms of Slurm's --time", "[resources]") {
  CHECK(seconds_of("30:00") == 1800);                         // MM:SS
  CHECK(seconds_of("1:30") == 90);                            // MM:SS
  CHECK(seconds_of("1:30:00") == 5400);                       // HH:MM:SS
  CHECK(seconds_of("2-3") == (2 * 24 + 3) * 3600);            // D-HH
  CHECK(seconds_of("2-3:15") == ((2 * 24 + 3) * 60 + 15) * 60);  // D-HH:MM
  CHECK(seconds_of("1-02:03:04") == ((24 + 2) * 60 + 3) * 60 + 4);  // D-HH:MM:SS
  CHECK(seconds_of("0-23:59:59") == 23 * 3600 + 59 * 60 + 59);
}

TEST_CASE("resource time refuses bare numbers and malformed text", "[resources]") {
  for (const char* text : {"30", "", "1:60", "1:60:00", "1:00:60", "1-24", "1-24:00", "abc", "1h 30m", "-5", "5x",
                           "h", "1:2:3:4", "1-", "-1:00", ":30", "30:", "1.5h", " 2h", "2h "}) {
    INFO("'" << text << "'");
    CHECK_FALSE(parse_resource_time(text).has_value());
  }
}

TEST_CASE("extra options arun sets itself or that have a field are refused with a reason", "[resources]") {
  CHECK(refused_extra_option("--account=lab").empty());
  CHECK(refused_extra_option("--qos=high").empty());
  CHECK(refused_extra_option("--exclusive").empty());
  CHECK_FALSE(refused_extra_option("--job-name=x").empty());
  CHECK_FALSE(refused_extra_option("--job-name").empty());
  CHECK(refused_extra_option("--mem=4G").find("resources.mem") != std::string::npos);
  CHECK(refused_extra_option("--time=1:00:00").find("resources.time") != std::string::npos);
  CHECK(refused_extra_option("--partition=gpu").find("resources.partition") != std::string::npos);
  CHECK(refused_extra_option("--cpus-per-task=4").find("resources.cpus") != std::string::npos);
  CHECK(refused_extra_option("--gpus=2").find("resources.gpus") != std::string::npos);
  CHECK(refused_extra_option("--licenses=x:1").find("resources.licenses") != std::string::npos);
  CHECK_FALSE(refused_extra_option("--array").empty());
  CHECK_FALSE(refused_extra_option("--array=1-10").empty());
  CHECK_FALSE(refused_extra_option("--output=/tmp/x").empty());
  CHECK_FALSE(refused_extra_option("--parsable").empty());
  // Only the option name counts: a longer option that starts the same is allowed.
  CHECK(refused_extra_option("--mem-per-cpu=2G").empty());
  CHECK(refused_extra_option("--time-min=10").empty());
}

TEST_CASE("inherit_resources with null sides", "[resources]") {
  const std::shared_ptr<const step_resources> none;
  CHECK(inherit_resources(none, none) == nullptr);
  step_resources r;
  r.cpus = 2;
  const auto one = make(r);
  const auto from_outer = inherit_resources(none, one);
  const auto from_inner = inherit_resources(one, none);
  CHECK(from_outer.get() == one.get());  // the same object, not a copy
  CHECK(from_inner.get() == one.get());
  CHECK(inherit_resources(one, one).get() == one.get());
}

TEST_CASE("inherit_resources keeps the inner fields and fills the rest from the outer", "[resources]") {
  step_resources outer;
  outer.cpus = 8;
  outer.memory = "16G";
  outer.time = std::chrono::seconds(3600);
  outer.partition = "long";
  outer.gpus = "a100:2";
  step_resources inner;
  inner.cpus = 2;
  inner.partition = "short";
  const auto merged = inherit_resources(make(inner), make(outer));
  REQUIRE(merged);
  CHECK(merged->cpus == 2);
  CHECK(merged->partition == "short");
  CHECK(merged->memory == "16G");
  REQUIRE(merged->time);
  CHECK(merged->time->count() == 3600);
  CHECK(merged->gpus == "a100:2");

  step_resources inner2;
  inner2.memory = "1G";
  inner2.time = std::chrono::seconds(60);
  inner2.gpus = "1";
  const auto merged2 = inherit_resources(make(inner2), make(outer));
  CHECK(merged2->cpus == 8);
  CHECK(merged2->memory == "1G");
  CHECK(merged2->time->count() == 60);
  CHECK(merged2->gpus == "1");
  CHECK(merged2->partition == "long");
}

TEST_CASE("inherit_resources merges licenses with the inner count winning", "[resources]") {
  step_resources outer;
  outer.licenses = {{"claude", 3}, {"matlab", 1}};
  step_resources inner;
  inner.licenses = {{"claude", 1}, {"gurobi", 2}};
  const auto merged = inherit_resources(make(inner), make(outer));
  REQUIRE(merged);
  const std::map<std::string, int, std::less<>> expected = {{"claude", 1}, {"gurobi", 2}, {"matlab", 1}};
  CHECK(merged->licenses == expected);
  // The inputs are left as they were.
  CHECK(inner.licenses.size() == 2);
}

TEST_CASE("inherit_resources merges extra options by name with the outer ones first", "[resources]") {
  step_resources outer;
  outer.extra = {"--account=a", "--qos=x", "--exclusive"};
  step_resources inner;
  inner.extra = {"--account=b", "--constraint=skylake"};
  const auto merged = inherit_resources(make(inner), make(outer));
  REQUIRE(merged);
  const std::vector<std::string> expected = {"--qos=x", "--exclusive", "--account=b", "--constraint=skylake"};
  CHECK(merged->extra == expected);

  // A flag without '=' overrides an outer option of the same name with a value, and back.
  step_resources flag_inner;
  flag_inner.extra = {"--exclusive=user"};
  step_resources flag_outer;
  flag_outer.extra = {"--exclusive", "--requeue"};
  const auto merged2 = inherit_resources(make(flag_inner), make(flag_outer));
  const std::vector<std::string> expected2 = {"--requeue", "--exclusive=user"};
  CHECK(merged2->extra == expected2);

  // Only the whole name counts: --qos does not override --qos-extra.
  step_resources prefix_inner;
  prefix_inner.extra = {"--qos=y"};
  step_resources prefix_outer;
  prefix_outer.extra = {"--qos-extra=1"};
  const auto merged3 = inherit_resources(make(prefix_inner), make(prefix_outer));
  const std::vector<std::string> expected3 = {"--qos-extra=1", "--qos=y"};
  CHECK(merged3->extra == expected3);
}

TEST_CASE("inherit_resources lets the inner level's way of asking for memory or GPUs replace the outer one's",
          "[resources]") {
  auto with = [](std::string memory, std::string gpus, std::vector<std::string> extra) {
    arun::step_resources r;
    r.memory = std::move(memory);
    r.gpus = std::move(gpus);
    r.extra = std::move(extra);
    return std::make_shared<const arun::step_resources>(std::move(r));
  };
  // Inner --mem-per-cpu / --gres under an outer mem / gpus: the outer ones are dropped.
  auto merged = arun::inherit_resources(with("", "", {"--mem-per-cpu=2G", "--gres=gpu:1"}), with("100M", "2", {}));
  CHECK(merged->memory.empty());
  CHECK(merged->gpus.empty());
  CHECK(merged->extra == std::vector<std::string>{"--mem-per-cpu=2G", "--gres=gpu:1"});
  // Inner mem / gpus under an outer --mem-per-cpu / --gres: the inner fields win.
  merged = arun::inherit_resources(with("64G", "a100:4", {}), with("", "", {"--mem-per-cpu=2G", "--gres=gpu:1", "--qos=x"}));
  CHECK(merged->memory == "64G");
  CHECK(merged->gpus == "a100:4");
  CHECK(merged->extra == std::vector<std::string>{"--qos=x"});
}
