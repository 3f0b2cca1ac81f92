// Agent fleets end to end with the fake agent standing in for claude and codex: per-provider
// limits adapting to the agent's rate limits, schema-checked replies with correction rounds,
// usage and cost from the CLIs' JSON output, budgets with resume, and transcripts.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

const std::string fake_agent = std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent";

// A project whose bin/claude and bin/codex are the fake agent, with its own sessions and
// fake-agent state.
struct fleet_project {
  temp_dir dir{"arun-e2e-fleet"};
  std::string root = dir.root.string();
  std::string state = root + "/state";
  std::string sessions = root + "/sessions";

  fleet_project() {
    fs::create_directories(root + "/bin");
    for (const char* name : {"claude", "codex"}) fs::create_symlink(fake_agent, root + "/bin/" + name);
  }

  // `arun ARGS --session-dir SESSIONS` (and -q, which only runs take).
  arun::test::arun_run arun(std::vector<std::string> args, bool quiet = true) const {
    args.insert(args.end(), {"--session-dir", sessions});
    if (quiet) args.emplace_back("-q");
    const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
    return run_arun(std::move(args), root, std::chrono::seconds(120),
                    {"FAKE_AGENT_STATE=" + state, "PATH=" + root + "/bin:" + path});
  }

  arun::test::arun_run run(const std::string& recipe_text, std::vector<std::string> args) const {
    const auto recipe = dir.write("recipe.yaml", recipe_text);
    args.insert(args.begin(), {recipe, "--output-format", "json"});
    return arun(std::move(args));
  }

  std::vector<json::object> calls() const { return arun::test::read_json_lines(state + "/calls.jsonl"); }

  // The events of the only session.
  std::vector<json::object> events() const {
    for (const auto& entry : fs::directory_iterator(sessions))
      if (entry.is_directory()) return arun::test::read_json_lines(entry.path() / "events.jsonl");
    return {};
  }
};

std::string str(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

std::string fan_out(int items, const std::string& directives, const std::string& extra = "") {
  std::string list;
  for (int i = 0; i < items; ++i) list += (i ? ", " : "") + std::to_string(i);
  return "name: fleet\nsteps:\n  - id: ask\n    foreach: [" + list +
         "]\n    parallel: true\n    agent: \"\"\n    prompt: |\n      item {{item}}\n      FAKE: key k{{item}}\n" +
         directives + extra;
}

}  // namespace

TEST_CASE("fleet e2e: a provider limit holds and halves when the provider rate limits") {
  fleet_project p;
  // The provider refuses more than 2 calls at once; arun starts with 4 allowed.
  const auto r = p.run(fan_out(8, "      FAKE: provider-limit 2\n      FAKE: sleep 0.4\n"),
                       {"--agent-cli", "claude", "--limit", "claude=4", "-j", "8", "--rate-limit-delay", "0.2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto calls = p.calls();
  int admitted_peak = 0, limited = 0;
  for (const auto& c : calls) {
    if (c.at("rate_limited").as_bool())
      ++limited;
    else
      admitted_peak = std::max(admitted_peak, static_cast<int>(c.at("concurrent").as_int64()));
  }
  CHECK(limited > 0);
  CHECK(admitted_peak <= 2);
  int halvings = 0, peak_started = 0;
  for (const auto& e : p.events()) {
    if (str(e.at("event")) == "limit_changed" && str(e.at("reason")) == "rate limited") {
      ++halvings;
      CHECK(str(e.at("group")) == "claude");
      CHECK(e.at("limit").as_int64() <= 2);
    }
    if (str(e.at("event")) == "step_start" && e.contains("limit")) {
      const auto& l = e.at("limit").as_object();
      CHECK(str(l.at("group")) == "claude");
      peak_started = std::max(peak_started, static_cast<int>(l.at("running").as_int64()));
      CHECK(l.at("running").as_int64() <= 4);
    }
  }
  CHECK(halvings >= 1);
  CHECK(peak_started == 4);  // the configured limit was used before the provider pushed back
  CHECK(arun::test::leftover_processes().empty());

  SECTION("under the provider's own limit nothing is rate limited") {
    fleet_project q;
    const auto again = q.run(fan_out(6, "      FAKE: provider-limit 2\n      FAKE: sleep 0.3\n"),
                             {"--agent-cli", "claude", "--limit", "claude=2", "-j", "8"});
    REQUIRE(again.exit_code == 0);
    for (const auto& c : q.calls()) CHECK_FALSE(c.at("rate_limited").as_bool());
    CHECK(q.calls().size() == 6);
  }
}

TEST_CASE("fleet e2e: claude's rate limit with exit code 0 is retried") {
  fleet_project p;
  const auto r = p.run("name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      go\n"
                       "      FAKE: rate-limit 1\n      FAKE: rate-limit-exit0\n      FAKE: reply done\n",
                       {"--agent-cli", "claude", "--rate-limit-delay", "0.05"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(p.calls().size() == 2);
  const auto result = arun::test::result_json(r);
  CHECK(str(result.at("output")) == "done");
}

TEST_CASE("fleet e2e: a reply that fails its schema is corrected and one that keeps failing fails the step") {
  fleet_project p;
  p.dir.write("schemas/answer.json", R"({"type": "object", "required": ["answer"], "properties": {"answer": {"type": "integer"}}})");
  const std::string recipe = "name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      compute\n"
                             "      FAKE: schema-fail 2\n      FAKE: reply-json {\"answer\": 42}\n"
                             "    output_schema: schemas/answer.json\n    output: got\n";
  auto r = p.run(recipe, {"--agent-cli", "claude"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto calls = p.calls();
  REQUIRE(calls.size() == 3);
  const auto second = str(calls[1].at("stdin"));
  CHECK(second.find("## Your previous reply was not accepted") != std::string::npos);
  CHECK(second.find("answer") != std::string::npos);
  CHECK(second.find("schema-fail attempt 1") != std::string::npos);  // the reply it had given
  auto result = arun::test::result_json(r);
  CHECK(result.at("context").at("got").at("answer") == 42);
  const auto& step = result.at("step_results").at(0).as_object();
  CHECK(step.at("attempts") == 3);
  CHECK(step.at("usage").at("calls") == 3);

  fleet_project q;
  q.dir.write("schemas/answer.json", R"({"type": "object", "required": ["answer"]})");
  const auto file = q.dir.write("recipe.yaml", recipe + "    schema_retries: 1\n");
  r = q.arun({file, "--output-format", "json", "--agent-cli", "claude", "--progress", "plain"}, false);
  CHECK(r.exit_code == 1);
  result = arun::test::result_json(r);
  const auto error = str(result.at("step_results").at(0).at("error"));
  // The first problem on the first line, in jsonschema's words with its place: the lines that
  // show a failure's first line (progress, `error:`) show it.
  CHECK(error.substr(0, error.find('\n')) == "step 'a': output_schema (schemas/answer.json): the last of 2 replies "
                                             "does not conform: 'answer' is a required property at $");
  CHECK(r.err.find("failed in ") != std::string::npos);
  CHECK(r.err.find("does not conform: 'answer' is a required property at $\n") != std::string::npos);
  CHECK(q.calls().size() == 2);
  // Each reply is an attempt: the first reply failed, the second call is attempt 2.
  CHECK(r.err.find("a attempt 1 failed (output_schema: the reply does not conform ('answer' is a required property "
                   "at $); asking again (1 of 1))") != std::string::npos);
  CHECK(r.err.find("-> a (attempt 2)") != std::string::npos);
}

TEST_CASE("fleet e2e: usage and cost come from claude's JSON and codex's events") {
  fleet_project p;
  const std::string steps = "name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      go\n"
                            "      FAKE: usage 1000 200 300 40\n      FAKE: cost 0.05\n      FAKE: model sonnet-x\n"
                            "      FAKE: reply hello\n";
  auto r = p.run(steps, {"--agent-cli", "claude"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto result = arun::test::result_json(r);
  CHECK(str(result.at("output")) == "hello");
  const auto& u = result.at("step_results").at(0).at("usage").as_object();
  CHECK(str(u.at("provider")) == "claude");
  CHECK(str(u.at("model")) == "sonnet-x");
  CHECK(u.at("input") == 1000);
  CHECK(u.at("output") == 200);
  CHECK(u.at("cache_read") == 300);
  CHECK(u.at("cache_write") == 40);
  CHECK(u.at("cost_usd").to_number<double>() == Approx(0.05));
  const auto& totals = result.at("usage").at("totals").as_object();
  CHECK(totals.at("calls") == 1);
  CHECK(totals.at("cost_usd").to_number<double>() == Approx(0.05));

  // codex reports tokens, no cost; --prices gives it one.
  fleet_project q;
  q.dir.write("prices.yaml", "models:\n  codex: {input: 2, output: 10, cache_read: 1, cache_write: 2}\n");
  r = q.run("name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      go\n"
            "      FAKE: usage 1000 200 300\n      FAKE: reply hi there\n",
            {"--agent-cli", "codex"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  result = arun::test::result_json(r);
  CHECK(str(result.at("output")) == "hi there");
  const auto& cu = result.at("step_results").at(0).at("usage").as_object();
  CHECK(str(cu.at("provider")) == "codex");
  CHECK(cu.at("output") == 200);
  CHECK(cu.at("cache_read") == 300);
  CHECK(cu.at("input").to_number<double>() + cu.at("cache_read").to_number<double>() == 1300);
  CHECK(cu.at("cost_usd").is_null());  // never a made-up zero
  CHECK(result.at("usage").at("totals").at("calls_without_cost") == 1);

  fleet_project priced;
  priced.dir.write("prices.yaml", "models:\n  codex: {input: 2, output: 10, cache_read: 1, cache_write: 2}\n");
  r = priced.run("name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      go\n"
                 "      FAKE: usage 1000 200 300\n      FAKE: reply hi there\n",
                 {"--agent-cli", "codex", "--prices", priced.root + "/prices.yaml"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  result = arun::test::result_json(r);
  // 1000 in at $2/M, 200 out at $10/M, 300 cache reads at $1/M.
  CHECK(result.at("step_results").at(0).at("usage").at("cost_usd").to_number<double>() ==
        Approx((1000 * 2 + 200 * 10 + 300 * 1) / 1e6));
}

TEST_CASE("fleet e2e: a budget stops the fan-out with exit 6 and a resume with a larger one finishes it") {
  fleet_project p;
  auto recipe = fan_out(6, "      FAKE: cost 0.10\n      FAKE: usage 100 10\n");
  recipe.replace(recipe.find("parallel: true"), 14, "max_concurrent: 1");
  auto r = p.run(recipe, {"--agent-cli", "claude", "--max-cost", "0.25"});
  INFO(r.err);
  CHECK(r.exit_code == 6);
  auto result = arun::test::result_json(r);
  CHECK(str(result.at("status")) == "budget_exhausted");
  CHECK(p.calls().size() == 3);
  const auto id = str(result.at("session_id"));
  // The same budget again: nothing more starts.
  r = p.arun({"resume", id, "--output-format", "json"});
  CHECK(r.exit_code == 6);
  CHECK(p.calls().size() == 3);
  // A larger one, still short: one more item; the next resume keeps it.
  r = p.arun({"resume", id, "--output-format", "json", "--max-cost", "0.35"});
  CHECK(r.exit_code == 6);
  CHECK(p.calls().size() == 4);
  const auto state = json::parse(arun::test::read_text(fs::path(p.sessions) / id / "state.json")).as_object();
  CHECK(state.at("invocation").at("agents").at("max_cost").to_number<double>() == Approx(0.35));
  // A larger one: the rest runs, and the totals cover the whole session.
  r = p.arun({"resume", id, "--output-format", "json", "--max-cost", "1"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(p.calls().size() == 6);
  result = arun::test::result_json(r);
  CHECK(str(result.at("status")) == "completed");
  CHECK(result.at("usage").at("totals").at("calls") == 6);
  CHECK(result.at("usage").at("totals").at("cost_usd").to_number<double>() == Approx(0.6));
}

TEST_CASE("fleet e2e: past the budget no schema correction starts, and a resume counts the stopped instance's calls") {
  fleet_project p;
  // Every call costs $0.01; each item's first reply fails its schema.
  auto recipe = fan_out(3, "      FAKE: cost 0.01\n      FAKE: schema-fail 1\n      FAKE: reply-json {\"n\": 1}\n",
                        "    output_schema: {type: object, required: [n]}\n");
  recipe.replace(recipe.find("parallel: true"), 14, "max_concurrent: 1");
  auto r = p.run(recipe, {"--agent-cli", "claude", "--max-cost", "0.01"});
  INFO(r.err);
  CHECK(r.exit_code == 6);
  CHECK(p.calls().size() == 1);  // the first reply spent the budget: its correction did not start
  auto result = arun::test::result_json(r);
  const auto id = str(result.at("session_id"));
  const auto& ask = result.at("step_results").at(0).as_object();
  CHECK(ask.at("iterations").at("cancelled") == 1);
  // The same budget again: it is spent, so nothing starts, and arun says so.
  r = p.arun({"resume", id, "--output-format", "json"});
  CHECK(r.exit_code == 6);
  CHECK(p.calls().size() == 1);
  result = arun::test::result_json(r);
  CHECK(str(result.at("error")).find("$0.0100 spent of the $0.0100 budget") != std::string::npos);
  CHECK(result.at("usage").at("totals").at("cost_usd").to_number<double>() == Approx(0.01));
  // A larger one finishes it; the totals are every call the session made.
  r = p.arun({"resume", id, "--output-format", "json", "--max-cost", "1"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(p.calls().size() == 6);  // k0's second reply conforms; k1 and k2 need a correction each
  result = arun::test::result_json(r);
  CHECK(result.at("usage").at("totals").at("calls") == 6);
  CHECK(result.at("usage").at("totals").at("cost_usd").to_number<double>() == Approx(0.06));
}

TEST_CASE("fleet e2e: a budget is a ceiling across resumes when the budget stop cancels a failed call's retry") {
  fleet_project p;
  // Each attempt fails after spending $0.01; `retry` would try again.
  const std::string recipe = "name: t\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n      go\n"
                             "      FAKE: cost 0.01\n      FAKE: exit 1 broken\n"
                             "    retry: {max_attempts: 3, initial_delay: 0.1}\n";
  auto r = p.run(recipe, {"--agent-cli", "claude", "--max-cost", "0.01"});
  INFO(r.err);
  CHECK(r.exit_code == 6);
  CHECK(p.calls().size() == 1);
  const auto id = str(arun::test::result_json(r).at("session_id"));
  // Before: the cancelled instance's $0.01 was dropped, and each plain resume paid another call.
  for (int i = 0; i < 2; ++i) {
    r = p.arun({"resume", id, "--output-format", "json"});
    CHECK(r.exit_code == 6);
  }
  CHECK(p.calls().size() == 1);
  CHECK(arun::test::result_json(r).at("usage").at("totals").at("cost_usd").to_number<double>() == Approx(0.01));
}

TEST_CASE("fleet e2e: transcripts keep every call's prompt and reply with secrets masked") {
  fleet_project p;
  const auto recipe = "name: t\nsecrets: [token]\nsteps:\n  - id: a\n    agent: \"\"\n    prompt: |\n"
                      "      use {{token}} to compute\n      FAKE: schema-fail 1\n      FAKE: reply-json {\"n\": 1}\n"
                      "    output_schema: {type: object, required: [n]}\n";
  p.dir.write("recipe.yaml", recipe);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  const auto r = run_arun({p.root + "/recipe.yaml", "--agent-cli", "claude", "--output-format", "json", "--session-dir",
                p.sessions, "-q"},
               p.root, std::chrono::seconds(60),
               {"FAKE_AGENT_STATE=" + p.state, "PATH=" + p.root + "/bin:" + path, "token=s3cr3t-value"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto id = str(arun::test::result_json(r).at("session_id"));
  const auto shown = p.arun({"logs", id, "a", "--transcript"}, false);
  INFO(shown.err);
  REQUIRE(shown.exit_code == 0);
  const auto& text = shown.out;
  CHECK(text.find("== a · call 1 of 2") != std::string::npos);
  CHECK(text.find("== a · call 2 of 2") != std::string::npos);
  CHECK(text.find("--output-format json") != std::string::npos);
  CHECK(text.find("### prompt") != std::string::npos);
  CHECK(text.find("schema-fail attempt 1") != std::string::npos);       // the first reply
  CHECK(text.find("## Your previous reply was not accepted") != std::string::npos);  // the correction
  CHECK(text.find("{\"n\": 1}") != std::string::npos);                   // the last reply
  CHECK(text.find("usage: claude") != std::string::npos);
  CHECK(text.find("s3cr3t-value") == std::string::npos);
  CHECK(text.find("***") != std::string::npos);
  // An instance without a transcript is a usage error naming the ones there are.
  const auto none = p.arun({"logs", id, "nope", "--transcript"}, false);
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("agent instances: a") != std::string::npos);
}
