// The content-keyed cache end to end (issue 19): a cached fan-out run twice starts no child
// the second time; a changed input runs only its item; two runs sharing the cache at once
// leave whole entries; --no-cache, --refresh-cache; `arun cache list|clear`; an agent fan-out
// with the fake agent; and `validate` placing a bad `cache:` field.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using arun::test::read_text;
using arun::test::result_json;
using arun::test::run_arun;

namespace {

struct cache_project {
  arun::test::temp_dir dir{"arun-e2e-cache"};
  fs::path sessions = dir.root / "sessions";
  fs::path cache = dir.root / "cache";
  fs::path ran = dir.root / "ran.txt";  // each instance that runs appends its item

  // A foreach of `n` items, `-j8`, each printing a line derived from its item and its file.
  std::string fan_out(int n, const std::string& extra_cache = "true") const {
    std::string items;
    for (int i = 0; i < n; ++i) items += (i ? ", " : "") + std::to_string(i);
    return dir.write("fan.yaml", "name: fan\nsteps:\n  - id: fan\n    foreach: [" + items + "]\n    parallel: true\n"
                                 "    command: echo {{item}} >> " + ran.string() + "; echo \"out {{item}} $(cat inputs/{{item}}.txt 2>/dev/null)\"\n"
                                 "    cache: " + extra_cache + "\n    output: outs\n");
  }
  std::vector<std::string> common() const {
    return {"--session-dir", sessions.string(), "--cache-dir", cache.string(), "-j", "8", "--output-format", "json"};
  }
  arun::test::arun_run arun(std::vector<std::string> args) const {
    const auto more = common();
    args.insert(args.end(), more.begin(), more.end());
    return run_arun(args, dir.root.string());
  }
  std::size_t runs() const {
    const auto text = read_text(ran);
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  boost::json::object cache_list() const {
    const auto r = run_arun({"cache", "list", "--cache-dir", cache.string(), "--output-format", "json"}, dir.root.string());
    REQUIRE(r.exit_code == 0);
    return boost::json::parse(r.out).as_object();
  }
};

const boost::json::object& first_step(const boost::json::object& result) {
  return result.at("step_results").as_array().at(0).as_object();
}

std::uint64_t cached_count(const boost::json::object& result) {
  const auto& it = first_step(result).at("iterations").as_object();
  const auto* c = it.if_contains("cached");
  return c ? c->to_number<std::uint64_t>() : 0;
}

}  // namespace

TEST_CASE("cache e2e: a 50-item fan-out run twice starts no child the second time and gives the same result") {
  cache_project p;
  const auto recipe = p.fan_out(50);
  const auto first = p.arun({recipe, "--log-level", "debug"});
  REQUIRE(first.exit_code == 0);
  CHECK(p.runs() == 50);
  const auto one = result_json(first);
  CHECK(cached_count(one) == 0);
  CHECK(p.cache_list().at("entries").as_array().size() == 50);

  const auto second = p.arun({recipe, "--log-level", "debug"});
  REQUIRE(second.exit_code == 0);
  CHECK(p.runs() == 50);  // nothing ran again
  const auto two = result_json(second);
  CHECK(cached_count(two) == 50);
  CHECK(two.at("context").at("outs") == one.at("context").at("outs"));
  CHECK(first_step(two).at("output") == first_step(one).at("output"));
  // arun's own log of the second session: not one child spawned.
  const auto session = two.at("session_id").as_string();
  const auto log = read_text(p.sessions / std::string(session) / "arun.log");
  CHECK(log.find("spawned pid") == std::string::npos);
  CHECK(read_text(p.sessions / std::string(one.at("session_id").as_string()) / "arun.log").find("spawned pid") !=
        std::string::npos);
  // The text summary says so too.
  const auto text = run_arun({recipe, "--session-dir", p.sessions.string(), "--cache-dir", p.cache.string()},
                             p.dir.root.string());
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("50 completed (50 cached)") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("cache e2e: one item's input file changed runs that item alone") {
  cache_project p;
  fs::create_directories(p.dir.root / "inputs");
  for (int i = 0; i < 10; ++i) p.dir.write("inputs/" + std::to_string(i) + ".txt", "v1\n");
  const auto recipe = p.fan_out(10, "{files: [\"inputs/{{item}}.txt\"]}");
  REQUIRE(p.arun({recipe}).exit_code == 0);
  CHECK(p.runs() == 10);
  p.dir.write("inputs/7.txt", "v2\n");
  const auto again = p.arun({recipe});
  REQUIRE(again.exit_code == 0);
  CHECK(p.runs() == 11);
  CHECK(read_text(p.ran).substr(read_text(p.ran).rfind('\n', read_text(p.ran).size() - 2) + 1) == "7\n");
  const auto result = result_json(again);
  CHECK(cached_count(result) == 9);
  CHECK(result.at("context").at("outs").as_array().at(7) == "out 7 v2");
}

TEST_CASE("cache e2e: two runs sharing the cache at once leave whole entries that a third run reuses") {
  cache_project p;
  const auto recipe = p.fan_out(50);
  arun::test::temp_dir logs{"arun-e2e-cache-pair"};
  fs::create_directories(logs.root / "a");
  fs::create_directories(logs.root / "b");
  // Run from the project directory, as the third run is: the working directory is in the key.
  auto args = std::vector<std::string>{recipe, "-C", p.dir.root.string()};
  const auto more = p.common();
  args.insert(args.end(), more.begin(), more.end());
  {
    arun::test::background_arun a(args, logs.root / "a");
    arun::test::background_arun b(args, logs.root / "b");
    CHECK(a.wait_exit(std::chrono::seconds(60)) == 0);
    CHECK(b.wait_exit(std::chrono::seconds(60)) == 0);
  }
  CHECK(p.runs() >= 50);  // each item ran once or twice, never torn
  const auto listed = p.cache_list();
  const auto& entries = listed.at("entries").as_array();
  CHECK(entries.size() == 50);
  for (const auto& e : entries) CHECK_FALSE(e.at("damaged").as_bool());
  // No temporary file of either writer is left.
  std::size_t temps = 0;
  for (const auto& f : fs::recursive_directory_iterator(p.cache))
    if (f.path().filename().string().starts_with(".tmp")) ++temps;
  CHECK(temps == 0);
  const auto before = p.runs();
  const auto third = p.arun({recipe});
  REQUIRE(third.exit_code == 0);
  CHECK(p.runs() == before);
  CHECK(cached_count(result_json(third)) == 50);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("cache e2e: no-cache runs everything and refresh-cache runs the named instances and replaces them") {
  cache_project p;
  const auto recipe = p.fan_out(6);
  REQUIRE(p.arun({recipe}).exit_code == 0);
  CHECK(p.runs() == 6);
  const auto none = p.arun({recipe, "--no-cache"});
  REQUIRE(none.exit_code == 0);
  CHECK(p.runs() == 12);
  CHECK(cached_count(result_json(none)) == 0);
  const auto refreshed = p.arun({recipe, "--refresh-cache", "fan[2]", "--refresh-cache", "fan[4]"});
  REQUIRE(refreshed.exit_code == 0);
  CHECK(p.runs() == 14);
  CHECK(cached_count(result_json(refreshed)) == 4);
  const auto all = p.arun({recipe, "--refresh-cache", "fan"});
  REQUIRE(all.exit_code == 0);
  CHECK(p.runs() == 20);
  // A name no cached step has is said, not refused.
  const auto typo = p.arun({recipe, "--refresh-cache", "fann"});
  CHECK(typo.exit_code == 0);
  CHECK(typo.err.find("--refresh-cache fann names no step with cache:") != std::string::npos);
}

TEST_CASE("cache e2e: arun cache list and clear show and remove entries by step age and recipe") {
  cache_project p;
  REQUIRE(p.arun({p.fan_out(12)}).exit_code == 0);
  const auto text = run_arun({"cache", "list", "--cache-dir", p.cache.string()}, p.dir.root.string());
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("KEY") != std::string::npos);
  CHECK(text.out.find("fan[11]") != std::string::npos);
  CHECK(text.out.find("12 cached outputs") != std::string::npos);
  const auto listed = p.cache_list();
  const auto& e = listed.at("entries").as_array().at(0).as_object();
  CHECK(e.at("recipe") == "fan");
  CHECK(e.at("key").as_string().size() == 64);
  CHECK(e.at("session").as_string().size() > 0);

  const auto dry = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--step", "fan[1*]", "--dry-run"},
                            p.dir.root.string());
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("would remove 3 cached outputs") != std::string::npos);  // fan[1], fan[10], fan[11]
  CHECK(p.cache_list().at("entries").as_array().size() == 12);
  const auto fresh = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--older-than", "1h"}, p.dir.root.string());
  CHECK(fresh.out.find("removed 0 cached outputs") != std::string::npos);
  const auto other = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--recipe", "other"}, p.dir.root.string());
  CHECK(other.out.find("removed 0 cached outputs") != std::string::npos);
  const auto some = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--step", "fan[1*]"}, p.dir.root.string());
  CHECK(some.out.find("removed 3 cached outputs") != std::string::npos);
  CHECK(p.cache_list().at("entries").as_array().size() == 9);
  // A step id picks every instance of the step.
  const auto by_step = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--step", "fan", "--dry-run"},
                                p.dir.root.string());
  CHECK(by_step.out.find("would remove 9 cached outputs") != std::string::npos);
  const auto all = run_arun({"cache", "clear", "--cache-dir", p.cache.string()}, p.dir.root.string());
  CHECK(all.out.find("removed 9 cached outputs") != std::string::npos);
  CHECK(p.cache_list().at("entries").as_array().empty());
  const auto bad = run_arun({"cache", "clear", "--cache-dir", p.cache.string(), "--older-than", "soon"}, p.dir.root.string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--older-than") != std::string::npos);
}

TEST_CASE("cache e2e: an agent fan-out is asked once and its replies are reused") {
  cache_project p;
  const auto state = p.dir.root / "agent-state";
  fs::create_directories(state);
  const auto recipe = p.dir.write("agents.yaml", "name: agents\nsteps:\n  - id: ask\n    foreach: [a, b, c]\n"
                                                 "    parallel: true\n    agent: ''\n    prompt: \"FAKE: reply answer {{item}}\"\n"
                                                 "    cache: true\n    output: answers\n");
  auto with_agent = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--agent-cli", "fake", "--session-dir", p.sessions.string(), "--cache-dir",
                             p.cache.string(), "--output-format", "json"});
    return run_arun(args, p.dir.root.string(), std::chrono::seconds(90),
                    {"FAKE_AGENT_STATE=" + state.string(), "ARUN_FAKE_AGENT=" + std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent"});
  };
  const auto first = with_agent({recipe});
  REQUIRE(first.exit_code == 0);
  CHECK(arun::test::read_json_lines(state / "calls.jsonl").size() == 3);
  const auto second = with_agent({recipe});
  REQUIRE(second.exit_code == 0);
  CHECK(arun::test::read_json_lines(state / "calls.jsonl").size() == 3);
  const auto two = result_json(second);
  CHECK(cached_count(two) == 3);
  CHECK(two.at("context").at("answers") == result_json(first).at("context").at("answers"));
}

TEST_CASE("cache e2e: validate places a bad cache field") {
  cache_project p;
  const auto recipe = p.dir.write("bad.yaml", "name: bad\nsteps:\n  - id: a\n    command: echo hi\n"
                                              "    cache:\n      max_age: tomorrow\n      scopes: recipe\n");
  const auto r = run_arun({"validate", recipe}, p.dir.root.string());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad.yaml:6:16: error: 'max_age'") != std::string::npos);
  CHECK(r.err.find("bad.yaml:7:7") != std::string::npos);
  CHECK(r.err.find("scopes") != std::string::npos);
}

TEST_CASE("cache e2e: a resume uses the cache directory of its run and a --no-cache run stays without one") {
  cache_project p;
  const auto recipe = p.dir.write("resume.yaml", "name: resume\nsteps:\n  - id: fan\n    foreach: [1, 2, 3]\n"
                                                 "    parallel: true\n    command: echo {{item}} >> " + p.ran.string() +
                                                     "; echo {{item}}\n    cache: true\n"
                                                 "  - id: gate\n    command: test -e " + (p.dir.root / "go").string() + "\n");
  const auto first = run_arun({recipe, "--session-dir", p.sessions.string(), "--cache-dir", p.cache.string(), "-q"},
                              p.dir.root.string());
  CHECK(first.exit_code == 1);
  CHECK(p.runs() == 3);
  std::string session;
  for (const auto& e : fs::directory_iterator(p.sessions)) session = e.path().filename().string();
  p.dir.write("go", "");
  // --reload runs the fan-out again (its step changed): from the run's cache, not the default one.
  p.dir.write("resume.yaml", read_text(recipe) + "  - id: more\n    command: echo more\n");
  const auto resumed = run_arun({"resume", session, "--reload", "--session-dir", p.sessions.string(), "-q", "--output-format", "json"},
                                p.dir.root.string());
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(p.runs() == 3);
  CHECK_FALSE(fs::exists(fs::path(std::getenv("XDG_CACHE_HOME")) / "arun" / "results"));

  // A run with --no-cache: its resume neither reads nor writes the cache.
  cache_project q;
  const auto off = q.dir.write("off.yaml", "name: off\nsteps:\n  - id: a\n    command: echo a >> " + q.ran.string() +
                                             "; echo a\n    cache: true\n  - id: gate\n    command: test -e " +
                                             (q.dir.root / "go").string() + "\n");
  CHECK(run_arun({off, "--session-dir", q.sessions.string(), "--cache-dir", q.cache.string(), "--no-cache", "-q"},
                 q.dir.root.string()).exit_code == 1);
  std::string off_session;
  for (const auto& e : fs::directory_iterator(q.sessions)) off_session = e.path().filename().string();
  q.dir.write("go", "");
  CHECK(run_arun({"resume", off_session, "--session-dir", q.sessions.string(), "-q"}, q.dir.root.string()).exit_code == 0);
  CHECK_FALSE(fs::exists(q.cache / "results"));
}
