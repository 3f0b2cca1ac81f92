// Agent steps end to end (docs/reference/recipe.md, "Agent steps", "Outputs"; docs/running.md,
// "Concurrency"; docs/agents.md) with tools/fake-agent standing in for the agent CLIs: the argv,
// stdin, environment and working directory of every preset, personas, huge prompts, timeouts, rate
// limits, the JSON reminder, rate_limiting, auto_stage and recovery_on_failure. The fake records
// each call in $FAKE_AGENT_STATE/calls.jsonl.
#include <catch2/catch.hpp>

#include "agents/amplihack_preset.hpp"
#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

const std::string fake_agent = std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent";
const std::string guard(arun::io::amplihack_no_reentry_guard);

// A project folder with a persona, a state folder for the fake, and a bin folder whose
// claude/copilot/codex/amplihack are the fake agent.
struct agent_project {
  temp_dir dir{"arun-e2e-agent"};
  std::string root = dir.root.string();
  std::string state = root + "/state";

  agent_project() {
    dir.write(".claude/agents/team/reviewer.md",
              "---\nmodel: persona-model\ndescription: reviews\n---\nYou are the careful reviewer persona.\n");
    fs::create_directories(root + "/bin");
    for (const char* name : {"claude", "copilot", "codex", "amplihack"})
      fs::create_symlink(fake_agent, root + "/bin/" + name);
    fs::create_directories(root + "/work");
  }

  std::vector<std::string> env(std::vector<std::string> more = {}) const {
    more.push_back("FAKE_AGENT_STATE=" + state);
    const bool own_path = std::any_of(more.begin(), more.end(), [](const std::string& kv) { return kv.starts_with("PATH="); });
    if (!own_path) more.push_back("PATH=" + root + "/bin:" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"));
    return more;
  }

  arun::test::arun_run run(const std::string& recipe_text, std::vector<std::string> args,
                           std::vector<std::string> more_env = {}) const {
    const auto path = dir.write("recipe.yaml", recipe_text);
    std::vector<std::string> argv = {path, "--output-format", "json", "-q", "-C", root};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_arun(argv, root, std::chrono::seconds(120), env(std::move(more_env)));
  }

  std::vector<json::object> calls() const { return arun::test::read_json_lines(state + "/calls.jsonl"); }
};

json::object result_of(const arun::test::arun_run& r) { return arun::test::result_json(r); }

const json::object& step_of(const json::object& result, const std::string& id) {
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id").as_string() == id) return s.as_object();
  FAIL("no step " << id);
  throw;
}

std::string str(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

std::vector<std::string> argv_of(const json::object& call) {
  std::vector<std::string> out;
  for (const auto& a : call.at("argv").as_array()) out.emplace_back(a.as_string());
  return out;
}

const std::string review_recipe = R"(name: review
context:
  topic: caching
steps:
  - id: ask
    agent: "team:reviewer"
    mode: ANALYZE
    working_dir: work
    prompt: |
      Review {{topic}} in {{working_directory}}.
      FAKE: reply-json {"verdict": "ok"}
    parse_json: true
    output: review
)";

}  // namespace

TEST_CASE("agent presets: claude gets the persona the model and the prompt on stdin in the step's directory") {
  agent_project p;
  auto r = p.run(review_recipe, {"--agent-cli", "claude"},
                 {"CLAUDECODE=1", "AMPLIHACK_SESSION_DEPTH=2", "AMPLIHACK_TREE_ID=tree-7", "AMPLIHACK_MAX_DEPTH=5",
                  "AMPLIHACK_MAX_SESSIONS=9"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto result = result_of(r);
  CHECK(str(result.at("context").at("review").at("verdict")) == "ok");
  const auto calls = p.calls();
  REQUIRE(calls.size() == 1);
  const auto& c = calls[0];
  const auto wd = p.root + "/work";
  CHECK(argv_of(c) == std::vector<std::string>{p.root + "/bin/claude", "-p", "--output-format", "json", "--add-dir", wd,
                                               "--model", "persona-model", "--append-system-prompt",
                                               "You are the careful reviewer persona.\n"});
  CHECK(str(c.at("prompt_source")) == "stdin");
  CHECK(str(c.at("cwd")) == wd);
  const auto prompt = str(c.at("stdin"));
  CHECK(prompt.starts_with("MODE: ANALYZE\n\nReview caching in " + wd + "."));
  CHECK(prompt.ends_with("Proceed autonomously. Do not ask questions."));
  const auto& env = c.at("env").as_object();
  CHECK_FALSE(env.contains("CLAUDECODE"));
  CHECK(str(env.at("AMPLIHACK_SESSION_DEPTH")) == "3");
  CHECK(str(env.at("AMPLIHACK_TREE_ID")) == "tree-7");
  CHECK(str(env.at("AMPLIHACK_MAX_DEPTH")) == "5");
  CHECK(str(env.at("AMPLIHACK_MAX_SESSIONS")) == "9");
  CHECK(str(env.at("NONINTERACTIVE")) == "1");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent presets: copilot and codex carry the persona in the prompt and a step model wins") {
  agent_project p;
  const std::string recipe = R"(name: review
steps:
  - id: ask
    agent: "team:reviewer"
    model: step-model
    working_dir: work
    prompt: "Say hello."
)";
  // Every preset: the step's directory, CLAUDECODE gone, one session level deeper.
  auto check_common = [&](const json::object& call) {
    CHECK(str(call.at("cwd")) == p.root + "/work");
    const auto& env = call.at("env").as_object();
    CHECK_FALSE(env.contains("CLAUDECODE"));
    CHECK(str(env.at("AMPLIHACK_SESSION_DEPTH")) == "1");
  };
  const std::vector<std::string> parent_env = {"CLAUDECODE=1", "AMPLIHACK_SESSION_DEPTH=0"};
  SECTION("copilot") {
    auto r = p.run(recipe, {"--agent-cli", "copilot"}, parent_env);
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    check_common(calls[0]);
    const auto argv = argv_of(calls[0]);
    REQUIRE(argv.size() == 6);
    CHECK(argv[1] == "-p");
    CHECK(argv[2].starts_with("# Instructions\n\nYou are the careful reviewer persona.\n\n# Task\n\nSay hello."));
    CHECK(argv[3] == "--allow-all-tools");
    CHECK(argv[4] == "--model");
    CHECK(argv[5] == "step-model");
    CHECK(str(calls[0].at("prompt_source")) == "argv");
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.");
  }
  SECTION("codex") {
    auto r = p.run(recipe, {"--agent-cli", "codex"}, parent_env);
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    check_common(calls[0]);
    CHECK(str(calls[0].at("stdin")).starts_with("# Instructions\n\nYou are the careful reviewer persona.\n\n# Task\n\nSay hello."));
    CHECK(argv_of(calls[0]) == std::vector<std::string>{p.root + "/bin/codex", "exec", "--json", "--model", "step-model",
                                                          "-"});
    CHECK(str(calls[0].at("prompt_source")) == "stdin");
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.");
  }
  SECTION("fake runs tools/fake-agent in claude's shape") {
    auto r = p.run(recipe, {"--agent-cli", "fake"}, parent_env);
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    check_common(calls[0]);
    const auto argv = argv_of(calls[0]);
    CHECK(argv.front() == fake_agent);
    CHECK(str(calls[0].at("shape")) == "claude");
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.\n");
    CHECK(str(calls[0].at("model")) == "step-model");
  }
  SECTION("amplihack with copilot inside, chosen by ARUN_AGENT_CLI") {
    auto r = p.run(recipe, {}, {"ARUN_AGENT_CLI=amplihack:copilot", "CLAUDECODE=1", "AMPLIHACK_SESSION_DEPTH=0"});
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    check_common(calls[0]);
    const auto argv = argv_of(calls[0]);
    REQUIRE(argv.size() > 3);
    CHECK(argv[1] == "copilot");
    CHECK(argv[2] == "--");
    CHECK(str(calls[0].at("launcher")) == "copilot");
    CHECK(str(calls[0].at("shape")) == "copilot");
    CHECK(std::find(argv.begin(), argv.end(), "--allow-all-tools") != argv.end());
    // amplihack's additions: the no-re-entry guard after the persona, its session limits.
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.\n\n" + guard);
    const auto& env = calls[0].at("env").as_object();
    CHECK(str(env.at("AMPLIHACK_MAX_DEPTH")) == "6");
    CHECK(str(env.at("AMPLIHACK_MAX_SESSIONS")) == "10");
  }
  SECTION("amplihack with claude inside: the guard rides --append-system-prompt; its settings are honoured") {
    auto r = p.run(recipe, {"--agent-cli", "amplihack"},
                   {"AMPLIHACK_MAX_DEPTH=3", "AMPLIHACK_MAX_SESSIONS=4", "AMPLIHACK_NO_ALLOW_ALL_TOOLS=1"});
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    const auto argv = argv_of(calls[0]);
    CHECK(argv[1] == "claude");
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.\n\n" + guard);
    const auto& env = calls[0].at("env").as_object();
    CHECK(str(env.at("AMPLIHACK_MAX_DEPTH")) == "3");
    CHECK(str(env.at("AMPLIHACK_MAX_SESSIONS")) == "4");
  }
  SECTION("amplihack:copilot under AMPLIHACK_NO_ALLOW_ALL_TOOLS drops --allow-all-tools") {
    auto r = p.run(recipe, {"--agent-cli", "amplihack:copilot"}, {"AMPLIHACK_NO_ALLOW_ALL_TOOLS=1"});
    REQUIRE(r.exit_code == 0);
    const auto argv = argv_of(p.calls().at(0));
    CHECK(std::find(argv.begin(), argv.end(), "--allow-all-tools") == argv.end());
  }
  SECTION("plain copilot gets no guard and no amplihack limits") {
    auto r = p.run(recipe, {"--agent-cli", "copilot"});
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.");
    CHECK_FALSE(calls[0].at("env").as_object().contains("AMPLIHACK_MAX_DEPTH"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent presets: an agent command template gets the prompt and persona files and stdin") {
  agent_project p;
  const auto script = p.dir.write("mycli.sh", R"(#!/bin/bash
# Records its arguments, the two files and stdin, then replies.
{ printf '%s\n' "$@"; echo "--- prompt file"; cat "$2"; echo "--- system file"; cat "$4"; echo "--- stdin"; cat; } > "$FAKE_AGENT_STATE/custom.txt"
echo "custom reply"
)");
  fs::permissions(script, fs::perms::owner_all);
  fs::create_directories(p.state);
  auto r = p.run(R"(name: custom
steps:
  - id: ask
    agent: "team:reviewer"
    prompt: "Do the thing."
    output: answer
)",
                 {"--agent-command", script + " --in {prompt_file} --sys {system_prompt_file} --dir {working_dir} --model {model}"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(str(result_of(r).at("context").at("answer")) == "custom reply");
  std::ifstream in(p.state + "/custom.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto text = ss.str();
  CHECK(text.find("--in\n/") != std::string::npos);
  CHECK(text.find("--dir\n" + p.root + "\n--model\npersona-model\n") != std::string::npos);
  CHECK(text.find("--- prompt file\nDo the thing.\n\nProceed autonomously. Do not ask questions.--- system file\nYou are "
                  "the careful reviewer persona.\n--- stdin\nDo the thing.") != std::string::npos);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent prompts: a 5 MiB prompt reaches claude by stdin and copilot by file") {
  agent_project p;
  const std::string recipe = R"(name: big
steps:
  - id: make
    command: "head -c 5242880 /dev/zero | tr '\\0' 'a'"
    output: big
  - id: ask
    prompt: "{{big}}"
    output: answer
)";
  for (const char* cli : {"claude", "copilot"}) {
    INFO(cli);
    fs::remove_all(p.state);
    auto r = p.run(recipe, {"--agent-cli", cli});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].at("stdin_length").to_number<std::int64_t>() > 5 * 1024 * 1024);
    CHECK(str(calls[0].at("prompt_source")) == (std::string(cli) == "claude" ? "stdin" : "argv-file"));
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent timeouts: a TERM-ignoring agent and its grandchild are killed with no survivors") {
  agent_project p;
  auto r = p.run(R"(name: stuck
steps:
  - id: ask
    timeout: 1
    prompt: |
      Think forever.
      FAKE: spawn-grandchild
      FAKE: ignore-term
      FAKE: sleep 60
)",
                 {"--agent-cli", "fake", "--kill-grace", "0.5"});
  CHECK(r.exit_code == 1);
  const auto result = result_of(r);
  const auto& s = step_of(result, "ask");
  CHECK(str(s.at("status")) == "failed");
  CHECK(s.at("timed_out").as_bool());
  CHECK(str(s.at("error")).find("timed out after 1s") != std::string::npos);
  CHECK(r.elapsed < std::chrono::seconds(30));
  CHECK(arun::test::leftover_processes().empty());
}

// An agent step whose first two calls are rate limited.
const std::string rate_limited_twice = R"(name: limited
steps:
  - id: ask
    prompt: |
      Busy service.
      FAKE: rate-limit 2
      FAKE: reply done
    output: answer
)";

TEST_CASE("agent rate limits: amplihack's AMPLIHACK_RATELIMIT_* settings, the command line over them") {
  agent_project p;
  const std::string recipe = rate_limited_twice;
  const std::vector<std::string> amplihack_env = {"AMPLIHACK_RATELIMIT_MAX_RETRIES=2", "AMPLIHACK_RATELIMIT_BASE_DELAY_SECS=0",
                                                  "AMPLIHACK_RATELIMIT_FALLBACK_AUTO_MODEL=1"};
  SECTION("two retries, the last with model auto") {
    auto r = p.run(recipe, {"--agent-cli", "amplihack"}, amplihack_env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 3);
    CHECK(calls[0].at("model").is_null());
    CHECK(calls[1].at("model").is_null());
    CHECK(str(calls[2].at("model")) == "auto");
  }
  SECTION("--rate-limit-retries 1 wins: the one retry is the last, with model auto, and is still limited") {
    auto r = p.run(recipe, {"--agent-cli", "amplihack", "--rate-limit-retries", "1"}, amplihack_env);
    CHECK(r.exit_code == 1);
    const auto calls = p.calls();
    REQUIRE(calls.size() == 2);
    CHECK(str(calls[1].at("model")) == "auto");
  }
  SECTION("a setting that is not a number is ignored with a warning") {
    auto r = p.run(recipe, {"--agent-cli", "amplihack", "--rate-limit-delay", "0"}, {"AMPLIHACK_RATELIMIT_MAX_RETRIES=lots"});
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("AMPLIHACK_RATELIMIT_MAX_RETRIES='lots' is not a whole number from 0 to 100; ignored") != std::string::npos);
    CHECK(p.calls().size() == 3);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent rate limits: two rate-limited calls then success with awaited backoff") {
  agent_project p;
  const std::string recipe = rate_limited_twice;
  auto events = p.root + "/events.jsonl";
  auto r = p.run(recipe, {"--agent-cli", "fake", "--rate-limit-delay", "0.2", "--events", events});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(str(result.at("context").at("answer")) == "done");
  CHECK(step_of(result, "ask").at("attempts").as_int64() == 3);
  const auto calls = p.calls();
  REQUIRE(calls.size() == 3);
  // Exponential: 0.2 s, then 0.4 s between the calls (the fake records its own start).
  const auto start = [&](int i) { return calls[i].at("start").to_number<double>(); };
  CHECK(start(1) - start(0) >= 0.2);
  CHECK(start(2) - start(1) >= 0.4);
  std::ifstream in(events);
  int retries = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find("\"step_retry\"") != std::string::npos && line.find("rate limited") != std::string::npos) ++retries;
  CHECK(retries == 2);

  SECTION("the retries run out") {
    fs::remove_all(p.state);
    auto again = p.run(recipe, {"--agent-cli", "fake", "--rate-limit-delay", "0.05", "--rate-limit-retries", "1"});
    CHECK(again.exit_code == 1);
    CHECK(p.calls().size() == 2);
    CHECK(str(step_of(result_of(again), "ask").at("error")).find("429") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent rate limits: the recipe's backoff applies and a plain failure is not retried") {
  agent_project p;
  auto r = p.run(R"(name: limited
rate_limiting:
  backoff: {max_retries: 1, initial_delay: 0.05}
steps:
  - id: limited
    on_error: continue
    prompt: |
      Busy.
      FAKE: rate-limit 3
  - id: broken
    on_error: continue
    prompt: |
      Broken.
      FAKE: exit 2 something else went wrong
)",
                 {"--agent-cli", "fake"});
  CHECK(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(step_of(result, "limited").at("attempts").as_int64() == 2);
  CHECK(str(step_of(result, "limited").at("status")) == "failed");
  CHECK(step_of(result, "broken").at("attempts").as_int64() == 1);
  CHECK(p.calls().size() == 3);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent json: a reply without JSON is asked again once keeping persona model and timeout") {
  agent_project p;
  auto r = p.run(R"(name: json
steps:
  - id: ask
    agent: "team:reviewer"
    timeout: 60
    parse_json: true
    prompt: |
      Give JSON.
      FAKE: bad-json 1
      FAKE: reply-fenced {"n": 4}
    output: data
)",
                 {"--agent-cli", "fake"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(result.at("context").at("data").at("n").as_int64() == 4);
  CHECK(step_of(result, "ask").at("attempts").as_int64() == 2);
  const auto calls = p.calls();
  REQUIRE(calls.size() == 2);
  CHECK(str(calls[1].at("stdin")).find("IMPORTANT: your previous reply") != std::string::npos);
  CHECK(str(calls[0].at("stdin")).find("IMPORTANT") == std::string::npos);
  CHECK(calls[1].at("system_prompt") == calls[0].at("system_prompt"));
  CHECK(str(calls[1].at("model")) == "persona-model");
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent json: still no JSON is degraded or failed when required") {
  agent_project p;
  auto r = p.run(R"(name: json
steps:
  - id: soft
    parse_json: true
    prompt: |
      Soft.
      FAKE: bad-json 2
    output: soft_text
  - id: hard
    parse_json: true
    parse_json_required: true
    prompt: |
      Hard.
      FAKE: bad-json 2
    output: hard_text
)",
                 {"--agent-cli", "fake"});
  CHECK(r.exit_code == 1);
  const auto result = result_of(r);
  CHECK(str(step_of(result, "soft").at("status")) == "degraded");
  CHECK(str(result.at("context").at("soft_text")).find("could not produce the JSON") != std::string::npos);
  CHECK(str(step_of(result, "hard").at("status")) == "failed");
  CHECK_FALSE(result.at("context").as_object().contains("hard_text"));
  CHECK(p.calls().size() == 4);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent concurrency: a foreach of 8 agents at max-concurrent 8 runs them all at once") {
  agent_project p;
  auto r = p.run(R"(name: fan
context:
  items: [1, 2, 3, 4, 5, 6, 7, 8]
steps:
  - id: fan
    foreach: "{{items}}"
    parallel: true
    prompt: |
      Item {{item}}.
      FAKE: sleep 3
)",
                 {"--agent-cli", "fake", "--max-concurrent", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto calls = p.calls();
  REQUIRE(calls.size() == 8);
  double last_start = 0, first_end = 1e300;
  for (const auto& c : calls) {
    last_start = std::max(last_start, c.at("start").to_number<double>());
    first_end = std::min(first_end, c.at("end").to_number<double>());
  }
  CHECK(last_start < first_end);  // all eight were running at one moment
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent concurrency: max_concurrent_llm bounds agents and min_delay_ms spaces their starts") {
  agent_project p;
  auto r = p.run(R"(name: limited-fan
rate_limiting:
  max_concurrent_llm: 2
  min_delay_ms: 300
context:
  items: [1, 2, 3, 4, 5]
steps:
  - id: fan
    foreach: "{{items}}"
    parallel: true
    prompt: |
      Item {{item}}.
      FAKE: sleep 0.5
)",
                 {"--agent-cli", "fake", "--max-concurrent", "8", "--events", p.root + "/events.jsonl"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto calls = p.calls();
  REQUIRE(calls.size() == 5);
  for (const auto& call : calls) {
    const double t = call.at("start").to_number<double>();
    int running = 0;
    for (const auto& c : calls)
      if (c.at("start").to_number<double>() <= t && t < c.at("end").to_number<double>()) ++running;
    CHECK(running <= 2);
  }
  // The spacing is arun's: measured on its step_start events, not on the agents' own clocks
  // (an interpreter's start-up varies by 150 ms on a loaded machine).
  std::vector<double> starts;
  for (const auto& e : arun::test::read_json_lines(p.root + "/events.jsonl"))
    if (e.at("event").as_string() == "step_start" && e.at("step").as_string().starts_with("fan["))
      starts.push_back(arun::test::epoch_seconds(e.at("ts").as_string()));
  REQUIRE(starts.size() == 5);
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i) CHECK(starts[i] - starts[i - 1] >= 0.299);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent concurrency: a parallel group runs agent bash and recipe steps together") {
  agent_project p;
  p.dir.write("lib/slow.yaml", R"(name: slow
steps:
  - id: nap
    command: "date +%s.%N > {{stamp_dir}}/recipe.start; sleep 2; date +%s.%N > {{stamp_dir}}/recipe.end"
)");
  auto r = p.run(R"(name: mixed
context:
  stamp_dir: ")" + p.root + R"("
steps:
  - id: think
    parallel_group: all
    prompt: |
      Think.
      FAKE: sleep 2
  - id: shell
    parallel_group: all
    command: "date +%s.%N > {{stamp_dir}}/bash.start; sleep 2; date +%s.%N > {{stamp_dir}}/bash.end"
  - id: sub
    parallel_group: all
    recipe: lib/slow.yaml
)",
                 {"--agent-cli", "fake"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto stamp = [&](const std::string& name) {
    std::ifstream in(p.root + "/" + name);
    double v = 0;
    in >> v;
    return v;
  };
  const auto calls = p.calls();
  REQUIRE(calls.size() == 1);
  const double agent_start = calls[0].at("start").to_number<double>(), agent_end = calls[0].at("end").to_number<double>();
  const double latest_start = std::max({agent_start, stamp("bash.start"), stamp("recipe.start")});
  const double earliest_end = std::min({agent_end, stamp("bash.end"), stamp("recipe.end")});
  CHECK(latest_start < earliest_end);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent auto_stage: git add -A runs in the step's directory after the step") {
  agent_project p;
  auto r = p.run(R"(name: stage
steps:
  - id: init
    command: "git init -q repo && echo hi > repo/new.txt"
  - id: ask
    working_dir: repo
    auto_stage: true
    prompt: "Write code."
  - id: status
    working_dir: repo
    command: "git status --porcelain"
    output: status
  - id: ask-unstaged
    working_dir: repo
    prompt: "Write more."
  - id: other
    command: "echo more > repo/other.txt"
  - id: ask-again
    working_dir: repo
    prompt: "Write more."
  - id: status2
    working_dir: repo
    command: "git status --porcelain"
    output: status2
)",
                 {"--agent-cli", "fake"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto ctx = result_of(r).at("context").as_object();
  CHECK(str(ctx.at("status")) == "A  new.txt");
  CHECK(str(ctx.at("status2")).find("?? other.txt") != std::string::npos);

  SECTION("--auto-stage turns it on for every agent step") {
    auto all = p.run(R"(name: stage
steps:
  - id: more
    command: "echo x > repo/third.txt"
  - id: ask
    working_dir: repo
    prompt: "Write code."
  - id: status
    working_dir: repo
    command: "git status --porcelain"
    output: status
)",
                     {"--agent-cli", "fake", "--auto-stage"});
    REQUIRE(all.exit_code == 0);
    const auto status = str(result_of(all).at("context").at("status"));
    CHECK(status.find("A  third.txt") != std::string::npos);
    CHECK(status.find("A  other.txt") != std::string::npos);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent recovery: recovery_on_failure completes a failed sub-recipe only with the marker") {
  agent_project p;
  p.dir.write("lib/broken.yaml", "name: broken\nsteps:\n  - id: fail\n    command: \"echo nope >&2; exit 3\"\n");
  auto r = p.run(R"(name: recover
steps:
  - id: fixed
    recipe: lib/broken.yaml
    recovery_on_failure:
      agent: "team:reviewer"
      prompt: |
        Fix it.
        FAKE: reply Fixed the build.
        FAKE: reply STATUS: COMPLETE
    output: fix
  - id: unfixed
    recipe: lib/broken.yaml
    on_error: continue
    recovery_on_failure:
      prompt: |
        Try.
        FAKE: reply I could not fix it.
)",
                 {"--agent-cli", "fake"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto result = result_of(r);
  const auto& fixed = step_of(result, "fixed");
  CHECK(str(fixed.at("status")) == "completed");
  CHECK(str(result.at("context").at("fix")).ends_with("STATUS: COMPLETE"));
  const auto& unfixed = step_of(result, "unfixed");
  CHECK(str(unfixed.at("status")) == "failed");
  CHECK(str(unfixed.at("error")).find("did not end with STATUS: COMPLETE") != std::string::npos);
  const auto calls = p.calls();
  REQUIRE(calls.size() == 2);
  CHECK(str(calls[0].at("system_prompt")) == "You are the careful reviewer persona.\n");
  CHECK(str(calls[0].at("stdin")).find("exit code 3") != std::string::npos);  // the failure is in the prompt
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("agent errors: a missing CLI and a missing agent are clear") {
  agent_project p;
  SECTION("no such CLI on PATH for a step that must run: an error, once, and nothing runs") {
    auto r = p.run("name: x\nsteps:\n  - id: first\n    command: /bin/touch first-ran\n  - id: ask\n    prompt: hi\n",
                   {"--agent-cli", "codex"}, {"PATH=/nonexistent"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(":6:13: error: the agent CLI 'codex' (codex) is not installed or not on PATH, and step 'ask' "
                     "needs it, so nothing was run (looked in PATH=/nonexistent)") != std::string::npos);
    CHECK(r.err.find("help: install it, or choose another with --agent-cli or --agent-command") != std::string::npos);
    CHECK(r.out.empty());                       // no result that suggests a resume
    CHECK_FALSE(fs::exists(p.dir.root / "first-ran"));
    std::size_t said = 0;
    for (auto at = r.err.find("is not installed"); at != std::string::npos; at = r.err.find("is not installed", at + 1))
      ++said;
    CHECK(said == 1);
  }
  SECTION("no such CLI on PATH for a step a condition may skip: said before the first step runs, and the step fails "
          "with the same words") {
    auto r = p.run("name: x\nsteps:\n  - id: first\n    command: /bin/touch first-ran\n  - id: ask\n    prompt: hi\n"
                   "    condition: \"true\"\n",
                   {"--agent-cli", "codex"}, {"PATH=/nonexistent"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(":6:13: warning: the agent CLI 'codex' (codex) is not installed or not on PATH, and step 'ask' "
                     "needs it (looked in PATH=/nonexistent)") != std::string::npos);
    CHECK(r.err.find("help: install it, or choose another with --agent-cli or --agent-command") != std::string::npos);
    CHECK(str(step_of(result_of(r), "ask").at("error")).find("agent CLI 'codex' (codex) is not installed or not on PATH") !=
          std::string::npos);
  }
  SECTION("agent steps that tags leave out need no CLI: the run succeeds after the warning") {
    auto r = p.run("name: x\nsteps:\n  - id: build\n    command: echo built\n  - id: ask\n    prompt: hi\n"
                   "    when_tags: [ai]\n",
                   {"--agent-cli", "codex", "--exclude-tags", "ai"}, {"PATH=/usr/bin:/bin"});
    CHECK(r.exit_code == 0);
  }
  SECTION("a bad --agent-cli is a usage error") {
    auto r = p.run("name: x\nsteps:\n  - id: ask\n    prompt: hi\n", {"--agent-cli", "gpt"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("unknown agent CLI 'gpt'") != std::string::npos);
  }
  SECTION("a missing agent runs without its persona only with --allow-missing-agents") {
    const std::string recipe = "name: x\nsteps:\n  - id: ask\n    agent: team:nobody\n    prompt: hi\n";
    auto refused = p.run(recipe, {"--agent-cli", "fake"});
    CHECK(refused.exit_code == 2);
    auto allowed = p.run(recipe, {"--agent-cli", "fake", "--allow-missing-agents"});
    CHECK(allowed.exit_code == 0);
    REQUIRE(p.calls().size() == 1);
    CHECK(p.calls()[0].at("system_prompt").is_null());
  }
  SECTION("agents named in sub-recipes and recovery_on_failure are checked before anything runs") {
    const auto child = p.dir.write("lib/child.yaml", "name: child\nsteps:\n  - id: c\n    agent: ns:ghost\n    prompt: hi\n");
    auto r = p.run("name: x\nsteps:\n  - id: call\n    recipe: lib/child.yaml\n    recovery_on_failure:\n"
                   "      agent: ns:phantom\n",
                   {"--agent-cli", "fake"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(child + ":4:12: error: step 'c': agent 'ns:ghost' not found") != std::string::npos);
    CHECK(r.err.find(":6:7: error: recovery_on_failure of step 'call': agent 'ns:phantom' not found") != std::string::npos);
    CHECK_FALSE(fs::exists(p.state));  // nothing ran
  }
  CHECK(arun::test::leftover_processes().empty());
}
