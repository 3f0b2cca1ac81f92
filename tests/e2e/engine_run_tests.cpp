// The built `arun` running the recipe files in tests/e2e/recipes/ (both dialects): the JSON
// result on stdout (docs/reference/formats.md, "Run result"), exit codes, the events and audit
// files (docs/reference/formats.md, "Events"), dry runs, tags, working directories, retries,
// timeouts, parallel groups and interrupts. Every test that starts children checks that none is
// left. Timing bounds are generous on purpose.
#include <catch2/catch.hpp>

#include "process/process_table.hpp"
#include "process/supervisor.hpp"
#include "process_checks.hpp"
#include "arun_cli.hpp"
#include "background_arun.hpp"
#include "run_sync.hpp"
#include "executor/step_environment.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

using steady = std::chrono::steady_clock;

std::string recipe_file(const std::string& name) {
  return (fs::path(ARUN_SOURCE_DIR) / "tests" / "e2e" / "recipes" / name).string();
}

using arun::test::arun_run;
using arun::test::run_arun;

// A fresh directory, removed with the object.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("arun-e2e-run-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string str(const std::string& name = {}) const { return name.empty() ? path.string() : (path / name).string(); }
};

using arun::test::read_text;

double seconds(steady::duration d) { return std::chrono::duration<double>(d).count(); }

const std::vector<std::string> step_keys = {"step_id", "status",    "output", "error",    "duration",
                                            "attempts", "exit_code", "signal", "timed_out", "truncated"};

void check_step_shape(const json::object& s) {
  INFO("step: " << json::serialize(s));
  for (const auto& key : step_keys) CHECK(s.contains(key));
  CHECK(s.at("step_id").is_string());
  CHECK(s.at("status").is_string());
  CHECK(s.at("duration").is_number());
  CHECK(s.at("attempts").is_int64());
  CHECK(s.at("timed_out").is_bool());
  CHECK(s.at("truncated").is_bool());
  if (const auto* children = s.if_contains("children"))
    for (const auto& c : children->as_array()) check_step_shape(c.as_object());
}

// stdout must be exactly one JSON object (one line) with the keys of docs/reference/formats.md,
// "Run result".
json::object parse_result(const std::string& out) {
  INFO("stdout: " << out);
  REQUIRE_FALSE(out.empty());
  CHECK(out.back() == '\n');
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  json::value v;
  REQUIRE_NOTHROW(v = json::parse(out));
  REQUIRE(v.is_object());
  auto o = v.as_object();
  for (const char* key : {"recipe_name", "success", "status", "session_id", "duration", "output", "context", "step_results"})
    CHECK(o.contains(key));
  CHECK(o.at("success").is_bool());
  CHECK(o.at("context").is_object());
  CHECK(o.at("duration").is_number());
  CHECK(std::regex_match(std::string(o.at("session_id").as_string()), std::regex(R"(\d{8}-\d{6}-[0-9a-f]{6})")));
  for (const auto& s : o.at("step_results").as_array()) check_step_shape(s.as_object());
  return o;
}

std::vector<std::string> step_ids(const json::object& result) {
  std::vector<std::string> ids;
  for (const auto& s : result.at("step_results").as_array()) ids.emplace_back(s.at("step_id").as_string());
  return ids;
}

const json::object& step_of(const json::object& result, const std::string& id) {
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id") == json::value(id)) return s.as_object();
  FAIL("no step " << id << " in the result");
  throw std::logic_error("unreachable");
}

std::string str(const json::value& v) { return v.is_string() ? std::string(v.get_string()) : json::serialize(v); }

// Every line of an events file: one JSON object with ts/event/session_id, step events with
// step/type; recipe_start first, recipe_end last (docs/reference/formats.md, "Events").
std::vector<json::object> read_events(const fs::path& file, const std::string& session_id) {
  std::vector<json::object> events;
  std::ifstream in(file);
  REQUIRE(in.good());
  std::string line;
  const std::regex rfc3339(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z)");
  while (std::getline(in, line)) {
    INFO("event line: " << line);
    json::value v;
    REQUIRE_NOTHROW(v = json::parse(line));
    REQUIRE(v.is_object());
    const auto& o = v.as_object();
    REQUIRE(o.contains("ts"));
    REQUIRE(o.contains("event"));
    REQUIRE(o.contains("session_id"));
    CHECK(std::regex_match(std::string(o.at("ts").as_string()), rfc3339));
    CHECK(o.at("session_id") == json::value(session_id));
    const std::string kind(o.at("event").as_string());
    if (kind != "recipe_start" && kind != "recipe_end" && kind != "warning") {
      REQUIRE(o.contains("step"));
      REQUIRE(o.contains("type"));
      CHECK_FALSE(o.at("step").as_string().empty());
      CHECK_FALSE(o.at("type").as_string().empty());
    }
    if (kind == "step_end") CHECK(o.contains("status"));
    events.push_back(o);
  }
  REQUIRE(events.size() >= 2);
  CHECK(events.front().at("event") == "recipe_start");
  CHECK(events.back().at("event") == "recipe_end");
  const auto count = [&](const char* kind) {
    return std::count_if(events.begin(), events.end(), [&](const json::object& e) { return e.at("event") == kind; });
  };
  CHECK(count("recipe_start") == 1);
  CHECK(count("recipe_end") == 1);
  return events;
}

// Index of the first event of `kind` for instance `step`, or -1.
long find_event(const std::vector<json::object>& events, const std::string& kind, const std::string& step) {
  for (std::size_t i = 0; i < events.size(); ++i)
    if (events[i].at("event") == json::value(kind) && events[i].contains("step") &&
        events[i].at("step") == json::value(step))
      return static_cast<long>(i);
  return -1;
}

const json::object* last_event(const std::vector<json::object>& events, const std::string& kind, const std::string& step) {
  const json::object* found = nullptr;
  for (const auto& e : events)
    if (e.at("event") == json::value(kind) && e.contains("step") && e.at("step") == json::value(step)) found = &e;
  return found;
}

}  // namespace

TEST_CASE("amplihack recipe: parallel group, continue_on_error, hooks and a sub-recipe found by name") {
  temp_dir dir;
  const auto r = run_arun({recipe_file("amplihack-basics.yaml"), "--set", "out_dir=" + dir.str(), "--output-format",
                           "json", "--events", dir.str("events.jsonl"), "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  const auto v = parse_result(r.out);
  CHECK(v.at("recipe_name") == "amplihack-basics");
  CHECK(v.at("success") == true);
  CHECK(v.at("status") == "completed");
  CHECK(v.at("error").is_null());
  // Every declared top-level step, in declaration order, whatever ran or not.
  CHECK(step_ids(v) == std::vector<std::string>{"greet", "left", "right", "flaky", "tagged-fast", "tagged-slow",
                                                "call", "summary"});
  CHECK(step_of(v, "greet").at("output") == "hello world");
  CHECK(step_of(v, "greet").at("exit_code") == 0);
  CHECK(step_of(v, "greet").at("attempts") == 1);
  CHECK(step_of(v, "left").at("output") == "left");
  CHECK(step_of(v, "right").at("output") == "right");
  // continue_on_error: the failure is reported and the run goes on.
  const auto& flaky = step_of(v, "flaky");
  CHECK(flaky.at("status") == "failed");
  CHECK(flaky.at("exit_code") == 3);
  CHECK(flaky.at("output").is_null());
  CHECK_THAT(str(flaky.at("error")), Catch::StartsWith("step 'flaky': exit code 3") && Catch::Contains("flaky broke"));
  // Without tag options every step runs, tagged or not.
  CHECK(step_of(v, "tagged-fast").at("status") == "completed");
  CHECK(step_of(v, "tagged-slow").at("status") == "completed");
  // The sub-recipe: its steps are the step's children, with instance ids call/<id>.
  const auto& call = step_of(v, "call");
  CHECK(call.at("status") == "completed");
  REQUIRE(call.contains("children"));
  const auto& children = call.at("children").as_array();
  REQUIRE(children.size() == 2);
  CHECK(children[0].at("step_id") == "call/hello");
  CHECK(children[0].at("status") == "completed");
  CHECK(children[0].at("output") == "child says hello world");  // the step's context overrode the child's default
  CHECK(children[1].at("step_id") == "call/count");
  CHECK(children[1].at("output") == 2);  // JSON-looking output is stored typed
  CHECK(call.at("output").at("child_result") == "child says hello world");
  CHECK(v.at("context").at("child_delta").at("child_result") == "child says hello world");
  // What the child created is merged back into the parent and used by the next step.
  CHECK(v.at("context").at("child_result") == "child says hello world");
  CHECK(step_of(v, "summary").at("output") == "left+right+child says hello world");
  CHECK(v.at("output") == "left+right+child says hello world");

  // Hooks: pre and post for every step that ran, on_error for the failure; none for skipped
  // steps, none inside the sub-recipe (which has no hooks of its own).
  const auto hooks = read_text(dir.path / "hooks.log");
  INFO("hooks.log:\n" << hooks);
  for (const char* line : {"pre greet\n", "post greet completed\n", "pre left\n", "post left completed\n", "pre right\n",
                           "post right completed\n", "pre flaky\n", "error flaky failed\n", "pre call\n",
                           "post call completed\n", "pre summary\n", "post summary completed\n"})
    CHECK_THAT(hooks, Catch::Contains(line));
  CHECK_THAT(hooks, !Catch::Contains("post flaky") && !Catch::Contains("call/hello"));
  CHECK(hooks.find("pre greet\n") < hooks.find("post greet completed\n"));

  const auto events = read_events(dir.path / "events.jsonl", std::string(v.at("session_id").as_string()));
  CHECK(events.front().at("recipe") == "amplihack-basics");
  CHECK(events.back().at("status") == "completed");
  CHECK(events.back().at("success") == true);
  for (const char* id : {"greet", "left", "right", "flaky", "call", "call/hello", "call/count", "summary"}) {
    INFO(id);
    CHECK(find_event(events, "step_start", id) >= 0);
    CHECK(find_event(events, "step_start", id) < find_event(events, "step_end", id));
  }
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_start", "call"))].at("type") == "recipe");
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_start", "call/hello"))].at("type") == "bash");
  // The child's steps run inside the call step.
  CHECK(find_event(events, "step_start", "call") < find_event(events, "step_start", "call/hello"));
  CHECK(find_event(events, "step_end", "call/count") < find_event(events, "step_end", "call"));
  const auto* greet_out = last_event(events, "step_output", "greet");
  REQUIRE(greet_out != nullptr);
  CHECK(greet_out->at("line") == "hello world");
  CHECK(greet_out->contains("stream"));
  const auto* flaky_end = last_event(events, "step_end", "flaky");
  REQUIRE(flaky_end != nullptr);
  CHECK(flaky_end->at("status") == "failed");
  CHECK(flaky_end->at("exit_code") == 3);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("when_tags: --include-tags runs only matching tagged steps, --exclude-tags skips matching ones") {
  temp_dir dir;
  const auto run_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {recipe_file("amplihack-basics.yaml"), "--set", "out_dir=" + dir.str(),
                                     "--output-format", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_arun(args);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 0);
    return parse_result(r.out);
  };
  auto v = run_with({"--include-tags", "fast"});
  CHECK(step_of(v, "tagged-fast").at("status") == "completed");
  CHECK(step_of(v, "tagged-slow").at("status") == "skipped");
  CHECK(step_of(v, "tagged-slow").at("attempts") == 0);
  CHECK(step_of(v, "greet").at("status") == "completed");  // untagged steps always run
  CHECK(step_of(v, "summary").at("status") == "completed");

  v = run_with({"--include-tags", "other,nightly"});  // any one tag matching is enough
  CHECK(step_of(v, "tagged-fast").at("status") == "skipped");
  CHECK(step_of(v, "tagged-slow").at("status") == "completed");

  v = run_with({"--exclude-tags", "nightly"});  // any one tag excluded skips the step
  CHECK(step_of(v, "tagged-fast").at("status") == "completed");
  CHECK(step_of(v, "tagged-slow").at("status") == "skipped");

  v = run_with({"--include-tags", "fast,slow", "--exclude-tags", "slow"});  // exclusion wins
  CHECK(step_of(v, "tagged-fast").at("status") == "completed");
  CHECK(step_of(v, "tagged-slow").at("status") == "skipped");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("amplifier recipe: retry, foreach, nested bodies, while loops, output_exit_code, parse_json and timeout") {
  temp_dir dir;
  const auto r = run_arun({recipe_file("amplifier-flow.yaml"), "--set", "work_dir=" + dir.str(), "--output-format",
                           "json", "--events", dir.str("events.jsonl"), "--kill-grace", "1", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  const auto v = parse_result(r.out);
  CHECK(v.at("status") == "completed");
  CHECK(step_ids(v) == std::vector<std::string>{"retry-me", "fan", "squares", "loop", "until", "exit-code", "json",
                                                "use-json", "too-slow", "last"});
  // Retry: two failed attempts, then success on the third (the counter file says so too).
  const auto& retry = step_of(v, "retry-me");
  CHECK(retry.at("status") == "completed");
  CHECK(retry.at("attempts") == 3);
  CHECK(retry.at("output") == "ok after 3");
  CHECK(read_text(dir.path / "attempts") == "3\n");

  // A looping leaf: outputs collected in input order, iteration counts.
  const auto& fan = step_of(v, "fan");
  CHECK(fan.at("status") == "completed");
  CHECK(fan.at("output") == json::parse(R"(["A.TXT","B.TXT","C.TXT","D.TXT"])"));
  CHECK(fan.at("iterations") == json::parse(R"({"total":4,"completed":4,"failed":0,"skipped":0})"));
  CHECK(v.at("context").at("upper") == fan.at("output"));

  // A nested body: the iteration's result is the last body step's output.
  const auto& squares = step_of(v, "squares");
  CHECK(squares.at("output") == json::parse(R"(["1^2=1","2^2=4","3^2=9"])"));
  CHECK(squares.at("iterations").at("completed") == 3);
  CHECK_FALSE(v.at("context").as_object().contains("sq"));  // body outputs stay inside the iteration

  // while with update_context: three iterations until counter reaches 3.
  const auto& loop = step_of(v, "loop");
  CHECK(loop.at("status") == "completed");
  CHECK(loop.at("output") == json::parse("[1,2,3]"));
  CHECK(loop.at("iterations") == json::parse(R"({"total":3,"completed":3,"failed":0,"skipped":0})"));
  CHECK(v.at("context").at("counter") == 3);
  // break_when ends a `while true` after the second iteration.
  const auto& until = step_of(v, "until");
  CHECK(until.at("status") == "completed");
  CHECK(until.at("output") == json::parse("[1,2]"));
  CHECK(until.at("iterations").at("total") == 2);

  // output_exit_code is set also when the step fails; on_error: continue goes on.
  const auto& code = step_of(v, "exit-code");
  CHECK(code.at("status") == "failed");
  CHECK(code.at("exit_code") == 4);
  CHECK(v.at("context").at("code") == 4);
  // parse_json finds the object inside surrounding text.
  CHECK(step_of(v, "json").at("output") == json::parse(R"({"name":"arun","items":[1,2]})"));
  CHECK(step_of(v, "use-json").at("output") == R"(arun [1,2] 4 ["A.TXT","B.TXT","C.TXT","D.TXT"])");
  // The timeout ends `sleep 100` (and its background sibling) long before it would.
  const auto& slow = step_of(v, "too-slow");
  CHECK(slow.at("status") == "failed");
  CHECK(slow.at("timed_out") == true);
  CHECK(slow.at("signal") == 15);
  CHECK(slow.at("exit_code").is_null());
  CHECK(slow.at("duration").to_number<double>() < 20.0);
  CHECK(step_of(v, "last").at("output") == "done");
  CHECK(v.at("output") == "done");
  CHECK(seconds(r.elapsed) < 40.0);

  const auto events = read_events(dir.path / "events.jsonl", std::string(v.at("session_id").as_string()));
  // Instance ids (docs/reference/formats.md, "Conventions"): loop iterations and their body steps.
  for (const char* id : {"fan[0]", "fan[3]", "squares[1]", "squares[1]/square", "squares[2]/show", "loop[0]/inner",
                         "loop[1]/inner", "loop[2]/inner", "until[1]/tick"}) {
    INFO(id);
    CHECK(find_event(events, "step_end", id) >= 0);
  }
  CHECK(find_event(events, "step_start", "fan[4]") < 0);
  CHECK(find_event(events, "step_start", "loop[3]") < 0);
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_start", "fan"))].at("type") == "loop");
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_start", "fan"))].at("items") == 4);
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_end", "fan[3]"))].at("type") == "bash");
  CHECK(events[static_cast<std::size_t>(find_event(events, "step_end", "loop[1]/inner"))].at("type") == "bash");
  // Two step_retry events, then the third start.
  std::vector<long> retry_attempts, start_attempts;
  for (const auto& e : events) {
    if (!e.contains("step") || e.at("step") != json::value("retry-me")) continue;
    if (e.at("event") == "step_retry") retry_attempts.push_back(e.at("attempt").as_int64());
    if (e.at("event") == "step_start") start_attempts.push_back(e.at("attempt").as_int64());
  }
  CHECK(retry_attempts == std::vector<long>{1, 2});
  CHECK(start_attempts == std::vector<long>{1, 2, 3});
  const auto* timed = last_event(events, "step_end", "too-slow");
  REQUIRE(timed != nullptr);
  CHECK(timed->at("timed_out") == true);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("execution dag: independent steps start together, dependants after their dependencies") {
  temp_dir dir;
  const auto r = run_arun({recipe_file("amplifier-dag.yaml"), "--output-format", "json", "--events",
                           dir.str("events.jsonl"), "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  const auto v = parse_result(r.out);
  CHECK(v.at("status") == "completed");
  // Results stay in declaration order whatever the execution order was.
  CHECK(step_ids(v) == std::vector<std::string>{"fetch-a", "fetch-b", "combine", "final", "by-output"});
  CHECK(step_of(v, "combine").at("output") == "ab");
  CHECK(step_of(v, "final").at("output") == "final ab");
  CHECK(step_of(v, "by-output").at("output") == "uses ab");

  const auto events = read_events(dir.path / "events.jsonl", std::string(v.at("session_id").as_string()));
  const auto at = [&](const char* kind, const char* id) { return find_event(events, kind, id); };
  // fetch-a and fetch-b (1 s each) both start before either ends.
  CHECK(at("step_start", "fetch-a") < at("step_end", "fetch-b"));
  CHECK(at("step_start", "fetch-b") < at("step_end", "fetch-a"));
  // combine waits for both (depends_on); final for combine; by-output for combine's output.
  CHECK(at("step_start", "combine") > at("step_end", "fetch-a"));
  CHECK(at("step_start", "combine") > at("step_end", "fetch-b"));
  CHECK(at("step_start", "final") > at("step_end", "combine"));
  CHECK(at("step_start", "by-output") > at("step_end", "combine"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("stages run in order, a stage condition skips its steps, context_validation is a pre-flight") {
  temp_dir dir;
  // No target: the pre-flight fails, nothing runs, exit 2, stdout empty, no events file.
  auto r = run_arun({recipe_file("amplifier-stages.yaml"), "--output-format", "json", "--events", dir.str("events.jsonl")});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("context variable 'target' must be set and non-empty"));
  CHECK_FALSE(fs::exists(dir.path / "events.jsonl"));
  // Whitespace is empty too.
  r = run_arun({recipe_file("amplifier-stages.yaml"), "--set", "target=  ", "--output-format", "json"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());

  r = run_arun({recipe_file("amplifier-stages.yaml"), "--set", "target=app", "--output-format", "json", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  auto v = parse_result(r.out);
  CHECK(step_ids(v) == std::vector<std::string>{"compile", "test", "deploy"});
  CHECK(step_of(v, "compile").at("output") == "compiled app");
  CHECK(step_of(v, "test").at("output") == "check 1");
  CHECK(step_of(v, "deploy").at("output") == "deploy compiled app in stage 2");
  CHECK(v.at("output") == "deploy compiled app in stage 2");

  r = run_arun({recipe_file("amplifier-stages.yaml"), "--set", "target=skipme", "--output-format", "json", "-q"});
  CHECK(r.exit_code == 0);
  v = parse_result(r.out);
  CHECK(step_of(v, "compile").at("status") == "completed");
  CHECK(step_of(v, "test").at("status") == "skipped");
  CHECK(step_of(v, "deploy").at("status") == "completed");
  CHECK_FALSE(v.at("context").as_object().contains("tested"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("relative working directories resolve below -C, also when -C itself is relative") {
  temp_dir dir;
  fs::create_directories(dir.path / "proj" / "sub" / "deeper");
  std::ofstream(dir.path / "proj" / "sub" / "deeper" / "marker.txt") << "marked\n";
  const auto proj = (dir.path / "proj").string();
  // arun runs in `dir`; -C proj is relative to it.
  auto r = run_arun({recipe_file("workdirs.yaml"), "-C", "proj", "--set", "data_dir=sub/deeper", "--output-format",
                     "json", "-q"},
                    dir.str());
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  const auto v = parse_result(r.out);
  CHECK(step_of(v, "top").at("output") == json::value(proj));
  CHECK(step_of(v, "sub").at("output") == json::value(proj + "/sub"));
  CHECK(step_of(v, "deeper").at("output") == "marked");
  CHECK(step_of(v, "from-context").at("output") == json::value(proj + "/sub/deeper"));
  // A missing working directory is a failure of the step (here non-fatal), not a spawn in the wrong place.
  const auto& missing = step_of(v, "missing");
  CHECK(missing.at("status") == "failed");
  CHECK(missing.at("attempts") == 0);
  CHECK_THAT(str(missing.at("error")), Catch::Contains("no-such-dir"));

  // context_validation `path` checks relative to -C: a missing path stops the run before it starts.
  r = run_arun({recipe_file("workdirs.yaml"), "-C", "proj", "--set", "data_dir=nope", "--output-format", "json"},
               dir.str());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("context variable 'data_dir'") && Catch::Contains("does not exist"));
  // A relative -C that does not exist is a usage error.
  r = run_arun({recipe_file("workdirs.yaml"), "-C", "nowhere", "--set", "data_dir=/"}, dir.str());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("the events file and the audit dir get the same JSON lines, the audit file named recipe-session.jsonl") {
  temp_dir dir;
  const auto audit = dir.path / "audit" / "nested";  // created when missing
  const auto r = run_arun({recipe_file("amplihack-basics.yaml"), "--set", "out_dir=" + dir.str(), "--output-format",
                           "json", "--events", dir.str("events.jsonl"), "--audit-dir", audit.string(), "-q"});
  CHECK(r.exit_code == 0);
  const auto v = parse_result(r.out);
  const std::string session(v.at("session_id").as_string());
  const auto audit_file = audit / ("amplihack-basics-" + session + ".jsonl");
  REQUIRE(fs::exists(audit_file));
  CHECK(std::distance(fs::directory_iterator(audit), fs::directory_iterator()) == 1);
  const auto from_events = read_events(dir.path / "events.jsonl", session);
  const auto from_audit = read_events(audit_file, session);
  CHECK(from_events.size() == from_audit.size());
  CHECK(read_text(dir.path / "events.jsonl") == read_text(audit_file));
  // --events truncates: a second run leaves only its own events.
  const auto again = run_arun({recipe_file("amplihack-basics.yaml"), "--set", "out_dir=" + dir.str(),
                               "--output-format", "json", "--events", dir.str("events.jsonl"), "-q"});
  CHECK(again.exit_code == 0);
  const auto second = parse_result(again.out);
  CHECK(second.at("session_id") != v.at("session_id"));
  const auto events = read_events(dir.path / "events.jsonl", std::string(second.at("session_id").as_string()));
  CHECK(events.size() == from_events.size());
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a dry run runs nothing, not even hooks, and exits 0") {
  temp_dir dir;
  const auto marker = dir.path / "made";
  auto r = run_arun({recipe_file("touch-file.yaml"), "--set", "marker=" + marker.string(), "--dry-run"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("dry run") && Catch::Contains("make"));
  r = run_arun({recipe_file("touch-file.yaml"), "--set", "marker=" + marker.string(), "--dry-run", "--output-format",
                "json", "--events", dir.str("events.jsonl")});
  CHECK(r.exit_code == 0);
  const auto plan = json::parse(r.out);
  CHECK(plan.at("dry_run") == true);
  CHECK(plan.at("steps").as_array().size() == 2);
  CHECK(plan.at("steps").at(0).at("step_id") == "make");
  CHECK_FALSE(fs::exists(marker));
  CHECK_FALSE(fs::exists(marker.string() + ".hook"));
  CHECK_FALSE(fs::exists(dir.path / "events.jsonl"));
  // The same recipe without --dry-run does create both files.
  r = run_arun({recipe_file("touch-file.yaml"), "--set", "marker=" + marker.string(), "-q"});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(marker));
  CHECK(fs::exists(marker.string() + ".hook"));
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("members of a parallel group really run at the same time") {
  temp_dir dir;
  const auto r = run_arun({recipe_file("parallel-overlap.yaml"), "--set", "stamp_dir=" + dir.str(),
                           "--output-format", "json", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  const auto v = parse_result(r.out);
  CHECK(step_ids(v) == std::vector<std::string>{"one", "two", "three", "after"});
  double latest_start = 0, earliest_end = 1e18;
  for (const char* id : {"one", "two", "three"}) {
    CHECK(step_of(v, id).at("status") == "completed");
    const double start = std::stod(read_text(dir.path / (std::string(id) + ".start")));
    const double end = std::stod(read_text(dir.path / (std::string(id) + ".end")));
    latest_start = std::max(latest_start, start);
    earliest_end = std::min(earliest_end, end);
  }
  // Overlap, not absolute timing: every member had started before any had finished.
  INFO("latest start " << std::fixed << latest_start << ", earliest end " << earliest_end);
  CHECK(latest_start < earliest_end);
  CHECK(step_of(v, "after").at("status") == "completed");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a fatal failure in a parallel group cancels the slow member at once and fails the run") {
  const auto r = run_arun({recipe_file("parallel-failfast.yaml"), "--output-format", "json", "--kill-grace", "1", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 1);
  // `slow` sleeps 60 s; fail-fast ends it about 0.5 s in (bound: 5x below the sleep).
  CHECK(seconds(r.elapsed) < 12.0);
  const auto v = parse_result(r.out);
  CHECK(v.at("status") == "failed");
  CHECK(v.at("success") == false);
  const auto& slow = step_of(v, "slow");
  CHECK(slow.at("status") == "cancelled");
  CHECK(slow.at("timed_out") == false);
  CHECK(slow.at("duration").to_number<double>() < 12.0);
  const auto& boom = step_of(v, "boom");
  CHECK(boom.at("status") == "failed");
  CHECK(boom.at("exit_code") == 9);
  CHECK_THAT(str(boom.at("error")), Catch::Contains("boom"));
  CHECK(step_of(v, "after").at("status") == "not_run");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("a step timeout kills its whole process tree, SIGTERM-ignoring grandchildren included") {
  const auto r = run_arun({recipe_file("timeout-tree.yaml"), "--output-format", "json", "--kill-grace", "1", "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);  // on_error: continue
  CHECK(seconds(r.elapsed) < 20.0);  // timeout 1 s + grace 1 s, the sleeps were 100 s
  const auto v = parse_result(r.out);
  const auto& tree = step_of(v, "tree");
  CHECK(tree.at("status") == "failed");
  CHECK(tree.at("timed_out") == true);
  CHECK(tree.at("attempts") == 1);
  CHECK_THAT(str(tree.at("error")), Catch::Contains("timed out"));
  CHECK(step_of(v, "after").at("output") == "after");
  CHECK(arun::test::leftover_processes().empty());
}

namespace {

using arun::test::background_arun;

std::size_t count_lines_with(const fs::path& file, const std::string& a, const std::string& b) {
  std::ifstream in(file);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line))
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) ++n;
  return n;
}

std::size_t running_sleeps() {
  std::size_t n = 0;
  for (const auto& e : arun::io::running_descendants(::getpid()))
    if (e.comm == "sleep") ++n;
  return n;
}

}  // namespace

TEST_CASE("SIGINT in the middle of a 100-way fan-out cancels every iteration, exits 130 and leaves no process") {
  // 100 at once, and 16 at a time (the other 84 must then never start).
  const int limit = GENERATE(100, 16);
  INFO("--max-concurrent " << limit);
  temp_dir dir;
  std::string items = "items=[";
  for (int i = 0; i < 100; ++i) items += (i ? "," : "") + std::to_string(i);
  items += "]";
  const auto events_file = dir.path / "events.jsonl";
  background_arun arun({recipe_file("fanout-sigint.yaml"), "--set", items, "--max-concurrent", std::to_string(limit),
                        "--output-format", "json", "--events", events_file.string(), "--kill-grace", "2",
                        "--progress", "plain"},
                       dir.path);
  // Wait (generously) until `limit` iterations have started and their sleeps (two each, one a
  // grandchild of the step's shell) are running.
  const auto expected = static_cast<std::size_t>(limit);
  const auto deadline = steady::now() + 90s;
  std::size_t started = 0, sleeps = 0;
  while (steady::now() < deadline) {
    started = count_lines_with(events_file, "\"event\":\"step_start\"", "\"step\":\"fan[");
    sleeps = running_sleeps();
    if (started >= expected && sleeps >= 2 * expected) break;
    std::this_thread::sleep_for(50ms);
  }
  INFO("iterations started: " << started << ", sleeps running: " << sleeps);
  REQUIRE(started == expected);
  REQUIRE(sleeps == 2 * expected);

  const auto sent = steady::now();
  REQUIRE(::kill(arun.pid, SIGINT) == 0);
  const auto status = arun.wait_exit(60s);
  const double took = seconds(steady::now() - sent);
  const auto err = read_text(arun.err);
  INFO("stderr (tail): " << err.substr(err.size() > 4000 ? err.size() - 4000 : 0));
  INFO("exit took " << took << " s");
  REQUIRE(status.has_value());
  CHECK(*status == 130);
  // The sleeps obey SIGTERM: stopping the steps takes well under a second; the bound is 5x+ the grace.
  CHECK(took < 20.0);
  CHECK_THAT(err, Catch::Contains("SIGINT received"));

  const auto v = parse_result(read_text(arun.out));
  CHECK(v.at("status") == "cancelled");
  CHECK(v.at("success") == false);
  CHECK(step_ids(v) == std::vector<std::string>{"fan", "after"});
  const auto& fan = step_of(v, "fan");
  CHECK(fan.at("status") == "cancelled");
  CHECK(fan.at("iterations").at("total") == 100);
  CHECK(fan.at("iterations").at("completed") == 0);
  CHECK(fan.at("iterations").at("failed") == 0);
  CHECK(step_of(v, "after").at("status") == "not_run");

  const auto events = read_events(events_file, std::string(v.at("session_id").as_string()));
  CHECK(events.back().at("status") == "cancelled");
  std::size_t starts = 0, cancelled = 0;
  for (const auto& e : events) {
    if (!e.contains("step") || !std::string_view(e.at("step").as_string()).starts_with("fan[")) continue;
    if (e.at("event") == "step_start") ++starts;
    if (e.at("event") == "step_end" && e.at("status") == "cancelled") ++cancelled;
  }
  CHECK(starts == expected);  // nothing started after the interrupt
  CHECK(cancelled == expected);
  CHECK(find_event(events, "step_start", "after") < 0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("SIGINT while a step waits to retry ends the wait at once and exits 130") {
  temp_dir dir;
  const auto events_file = dir.path / "events.jsonl";
  background_arun arun({recipe_file("retry-wait.yaml"), "--output-format", "json", "--events", events_file.string(), "-q"},
                       dir.path);
  const auto deadline = steady::now() + 60s;
  while (steady::now() < deadline && count_lines_with(events_file, "\"event\":\"step_retry\"", "\"step\":\"patient\"") == 0)
    std::this_thread::sleep_for(20ms);
  REQUIRE(count_lines_with(events_file, "\"event\":\"step_retry\"", "\"step\":\"patient\"") == 1);
  const auto sent = steady::now();
  REQUIRE(::kill(arun.pid, SIGINT) == 0);
  const auto status = arun.wait_exit(50s);
  REQUIRE(status.has_value());
  CHECK(*status == 130);
  CHECK(seconds(steady::now() - sent) < 12.0);  // the retry delay was 60 s
  const auto v = parse_result(read_text(arun.out));
  CHECK(v.at("status") == "cancelled");
  const auto& patient = step_of(v, "patient");
  CHECK(patient.at("status") == "cancelled");
  CHECK(patient.at("attempts") == 1);
  CHECK_THAT(str(patient.at("error")), Catch::Contains("cancelled while waiting to retry"));
  CHECK(step_of(v, "after").at("status") == "not_run");
  const auto events = read_events(events_file, std::string(v.at("session_id").as_string()));
  const auto* retry = last_event(events, "step_retry", "patient");
  REQUIRE(retry != nullptr);
  CHECK(retry->at("attempt") == 1);
  CHECK(retry->at("delay") == 60.0);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("every recipe in tests/e2e/recipes passes validate --strict") {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(ARUN_SOURCE_DIR) / "tests" / "e2e" / "recipes")) {
    if (entry.path().extension() != ".yaml") continue;
    const auto r = run_arun({"validate", "--strict", entry.path().string()});
    INFO(entry.path().string() << "\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    ++checked;
  }
  CHECK(checked >= 10);
}
