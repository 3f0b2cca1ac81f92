// The example recipes in recipes/patterns/ (code review, investigation, consensus) run end to
// end with the fake agent (--agent-cli fake) and their personas from recipes/patterns/agents:
// the final output and context each pattern promises, the step statuses (conditions choosing
// one of two final steps), and what the agents received, read back from the fake's record
// file $FAKE_AGENT_STATE/calls.jsonl (persona, prompt, how many calls, which ran at once).
// Timing checks are lower bounds or overlaps of 0.5 s sleeps, generous on purpose.
#include <catch2/catch.hpp>

#include "arun_cli.hpp"
#include "process_checks.hpp"
#include "temp_dir.hpp"
#include "test_paths.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
namespace json = boost::json;
using arun::test::run_arun;
using arun::test::temp_dir;

namespace {

const std::string patterns_dir = std::string(ARUN_SOURCE_DIR) + "/recipes/patterns";
const std::string fake_agent = std::string(ARUN_SOURCE_DIR) + "/tools/fake-agent";

// One run of a pattern recipe with the fake agent: a fresh FAKE_AGENT_STATE per object.
struct pattern_run {
  temp_dir dir{"arun-e2e-patterns"};
  std::string root = dir.root.string();
  std::string state = root + "/fake-state";

  // arun RECIPE --agent-cli fake --agent-dir recipes/patterns/agents --output-format json -q
  // ARGS..., started in `working_dir` (default: the temp dir, so nothing lands in the checkout).
  arun::test::arun_run run(const std::string& recipe, std::vector<std::string> args = {},
                           std::string working_dir = {}) const {
    std::vector<std::string> argv = {patterns_dir + "/" + recipe, "--agent-cli", "fake", "--agent-dir",
                                     patterns_dir + "/agents", "--output-format", "json", "-q"};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
    const std::vector<std::string> env = {"FAKE_AGENT_STATE=" + state, "ARUN_FAKE_AGENT=" + fake_agent};
    auto r = run_arun(argv, working_dir.empty() ? root : working_dir, std::chrono::seconds(120), env);
    check_report(r, working_dir.empty() ? root : working_dir, env);
    return r;
  }

  // `arun report` of the run's session (docs/report-and-dashboard.md): it reads every shipped
  // pattern's session, with the run's status.
  static void check_report(const arun::test::arun_run& r, const std::string& working_dir,
                           const std::vector<std::string>& env) {
    boost::system::error_code ec;
    const auto result = json::parse(r.out, ec);
    if (ec || !result.is_object() || !result.as_object().contains("session_id")) return;
    const std::string id(result.at("session_id").as_string());
    const auto report = run_arun({"report", id, "--output-format", "json"}, working_dir, std::chrono::seconds(60), env);
    INFO("arun report " << id << ": " << report.err);
    REQUIRE(report.exit_code == 0);
    const auto doc = json::parse(report.out).as_object();
    CHECK(doc.at("session").at("status") == result.at("status"));
  }

  // Every call the fake agent recorded, in the order the calls ended.
  std::vector<json::object> calls() const { return arun::test::read_json_lines(state + "/calls.jsonl"); }
};

json::object result_of(const arun::test::arun_run& r) { return arun::test::result_json(r); }

std::string str(const json::value& v) { return v.is_string() ? std::string(v.as_string()) : json::serialize(v); }

const json::object& step_of(const json::object& result, const std::string& id) {
  for (const auto& s : result.at("step_results").as_array())
    if (s.at("step_id").as_string() == id) return s.as_object();
  FAIL("no step " << id);
  throw;
}

// "id status" of every top-level step, in declaration order.
std::vector<std::string> statuses(const json::object& result) {
  std::vector<std::string> out;
  for (const auto& s : result.at("step_results").as_array())
    out.push_back(str(s.at("step_id")) + " " + str(s.at("status")));
  return out;
}

// The calls whose persona (system_prompt) starts with `persona_start`.
std::vector<json::object> calls_of(const std::vector<json::object>& calls, const std::string& persona_start) {
  std::vector<json::object> out;
  for (const auto& c : calls)
    if (c.at("system_prompt").is_string() && str(c.at("system_prompt")).starts_with(persona_start)) out.push_back(c);
  return out;
}

double start_of(const json::object& c) { return c.at("start").to_number<double>(); }
double end_of(const json::object& c) { return c.at("end").to_number<double>(); }

// The largest number of calls that were running at the same moment.
int max_overlap(const std::vector<json::object>& calls) {
  std::vector<std::pair<double, int>> edges;  // (time, +1 start / -1 end); ends sort first
  for (const auto& c : calls) {
    edges.emplace_back(start_of(c), 1);
    edges.emplace_back(end_of(c), -1);
  }
  std::sort(edges.begin(), edges.end());
  int running = 0, most = 0;
  for (const auto& edge : edges) most = std::max(most, running += edge.second);
  return most;
}

double latest_end(const std::vector<json::object>& calls) {
  double t = 0;
  for (const auto& c : calls) t = std::max(t, end_of(c));
  return t;
}

double earliest_start(const std::vector<json::object>& calls) {
  double t = 1e300;
  for (const auto& c : calls) t = std::min(t, start_of(c));
  return t;
}

bool has_directive_starting(const json::object& call, const std::string& text) {
  for (const auto& d : call.at("directives").as_array())
    if (str(d).starts_with(text)) return true;
  return false;
}

const std::string footer = "Proceed autonomously. Do not ask questions.";

}  // namespace

TEST_CASE("pattern recipes: code-review counts the agent's findings by severity and requests changes") {
  pattern_run p;

  SECTION("the sample diff") {
    auto r = p.run("code-review.yaml");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = result_of(r);
    CHECK(result.at("success") == json::value(true));
    CHECK(str(result.at("status")) == "completed");
    CHECK(str(result.at("output")) ==
          "REQUEST_CHANGES: 1 high, 2 medium and 1 low finding(s). The rewrite of find_user reintroduces SQL "
          "injection; load_settings leaks its file handle.");
    CHECK(statuses(result) == std::vector<std::string>{"collect-diff completed", "review completed",
                                                       "tally completed", "request-changes completed",
                                                       "approve skipped"});
    // The fenced JSON was found in the first reply: no "return only JSON" reminder.
    CHECK(step_of(result, "review").at("attempts") == json::value(1));

    const auto& ctx = result.at("context").as_object();
    CHECK(ctx.at("verdict") == result.at("output"));
    CHECK(str(ctx.at("diff")).starts_with("diff --git a/src/users.py b/src/users.py\n"));
    CHECK(ctx.at("counts") == json::parse(R"({"high":1,"medium":2,"low":1,"total":4})"));
    const auto& findings = ctx.at("review").at("findings").as_array();
    REQUIRE(findings.size() == 4);
    CHECK(str(findings[0].at("severity")) == "high");
    CHECK(str(findings[0].at("file")) == "src/users.py");
    CHECK(findings[0].at("line") == json::value(39));

    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    const auto& c = calls[0];
    CHECK(c.at("exit_code") == json::value(0));
    CHECK(str(c.at("system_prompt")).starts_with("You are a careful senior code reviewer."));
    CHECK(str(c.at("system_prompt_source")) == "flag");
    CHECK(c.at("model").is_null());  // the persona sets no model
    const auto prompt = str(c.at("stdin"));
    CHECK(prompt.starts_with("Review this change."));
    CHECK(prompt.find(R"x(+    rows = db.execute(f"SELECT id, name FROM users WHERE name = '{name}'"))x") !=
          std::string::npos);
    CHECK(prompt.ends_with(footer));
    CHECK(has_directive_starting(c, "reply-fenced {\"findings\": [{\"severity\": \"high\""));
  }

  SECTION("use_git reviews the uncommitted change of the working directory") {
    const auto repo = p.root + "/repo";
    fs::create_directories(repo);
    const auto setup = "cd '" + repo +
                       "' && git init -q && printf 'a\\nb\\n' > f.txt && git add f.txt"
                       " && git -c user.name=arun-test -c user.email=arun-test@example.invalid -c commit.gpgsign=false"
                       " commit -q -m init && printf 'a\\nB changed\\n' > f.txt";
    REQUIRE(std::system(setup.c_str()) == 0);
    auto r = p.run("code-review.yaml", {"--set", "use_git=true"}, repo);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = result_of(r);
    const auto diff = str(result.at("context").at("diff"));
    CHECK(diff.starts_with("diff --git a/f.txt b/f.txt\n"));
    CHECK(diff.ends_with("-b\n+B changed"));
    const auto calls = p.calls();
    REQUIRE(calls.size() == 1);
    CHECK(str(calls[0].at("stdin")).find(" a\n-b\n+B changed\n") != std::string::npos);
    CHECK(str(calls[0].at("cwd")) == fs::canonical(repo).string());
    // The rehearsed review is the same whatever the diff, and so is the verdict.
    CHECK(str(result.at("output")).starts_with("REQUEST_CHANGES: 1 high,"));
  }

  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("pattern recipes: investigation checks every hypothesis two at a time and concludes") {
  pattern_run p;

  SECTION("the sample incident: one hypothesis is supported") {
    auto r = p.run("investigation.yaml");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = result_of(r);
    CHECK(result.at("success") == json::value(true));
    CHECK(statuses(result) == std::vector<std::string>{"gather-evidence completed", "hypothesise completed",
                                                       "test-hypotheses completed", "rank completed",
                                                       "conclude completed", "no-root-cause skipped"});

    const auto& output = result.at("output").as_object();
    CHECK(str(output.at("status")) == "root cause found");
    CHECK(str(output.at("root_cause")) == "H2");
    CHECK(str(output.at("confidence")) == "high");
    CHECK(output.at("ruled_out") == json::parse(R"(["H1"])"));
    CHECK(output.at("still_open") == json::parse(R"(["H3"])"));
    CHECK(output.at("next_steps").as_array().size() == 3);

    const auto& ctx = result.at("context").as_object();
    CHECK(ctx.at("conclusion") == result.at("output"));
    CHECK(ctx.at("hypotheses").as_array().size() == 3);
    // One verdict per hypothesis, collected in the order of the list, each from its own probe.
    const auto& verdicts = ctx.at("verdicts").as_array();
    REQUIRE(verdicts.size() == 3);
    const std::vector<std::tuple<std::string, std::string, int>> expected = {
        {"H1", "refuted", 0}, {"H2", "supported", 4}, {"H3", "inconclusive", 1}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
      INFO("verdict " << i << ": " << json::serialize(verdicts[i]));
      CHECK(str(verdicts[i].at("id")) == std::get<0>(expected[i]));
      CHECK(str(verdicts[i].at("verdict")) == std::get<1>(expected[i]));
      CHECK(verdicts[i].at("evidence_lines") == json::value(std::get<2>(expected[i])));
    }
    CHECK(ctx.at("ranking") == json::parse(R"({"supported":["H2"],"inconclusive":["H3"],"refuted":["H1"]})"));
    // The probe's output is local to its iteration.
    CHECK_FALSE(ctx.contains("probe"));

    const auto& loop = step_of(result, "test-hypotheses");
    CHECK(loop.at("iterations") == json::parse(R"({"total":3,"completed":3,"failed":0,"skipped":0})"));
    CHECK(loop.at("output") == ctx.at("verdicts"));
    // Three 0.5 s verifiers, two at a time: two rounds.
    CHECK(loop.at("duration").to_number<double>() >= 0.95);

    const auto calls = p.calls();
    CHECK(calls.size() == 5);
    const auto investigator = calls_of(calls, "You are an incident investigator.");
    const auto verifiers = calls_of(calls, "You are a skeptical verifier.");
    REQUIRE(investigator.size() == 2);
    REQUIRE(verifiers.size() == 3);
    // One verifier call per hypothesis, each given its hypothesis and its own probe's count.
    for (const auto& e : expected) {
      const auto& id = std::get<0>(e);
      const auto& lean = std::get<1>(e);
      const int hits = std::get<2>(e);
      INFO("hypothesis " << id);
      const auto n = std::count_if(verifiers.begin(), verifiers.end(), [&](const json::object& c) {
        const auto prompt = str(c.at("stdin"));
        return prompt.find("Hypothesis " + id + ": ") != std::string::npos &&
               prompt.find("Mechanical pre-check: " + std::to_string(hits) + " log line(s)") != std::string::npos &&
               has_directive_starting(c, "reply-json {\"id\": \"" + id + "\", \"verdict\": \"" + lean + "\"");
      });
      CHECK(n == 1);
    }
    for (const auto& c : verifiers) {
      CHECK(c.at("exit_code") == json::value(0));
      CHECK(str(c.at("stdin")).ends_with(footer));
    }
    CHECK(max_overlap(verifiers) == 2);
    // The hypotheses came before every verifier, the conclusion after all of them.
    const auto& first = start_of(investigator[0]) < start_of(investigator[1]) ? investigator[0] : investigator[1];
    const auto& last = start_of(investigator[0]) < start_of(investigator[1]) ? investigator[1] : investigator[0];
    CHECK(end_of(first) <= earliest_start(verifiers));
    CHECK(start_of(last) >= latest_end(verifiers));
    CHECK(str(first.at("stdin")).starts_with("Symptom: p95 latency of POST /checkout"));
    CHECK(str(last.at("stdin")).find("Verdicts: [{\"id\":\"H1\",\"verdict\":\"refuted\"") != std::string::npos);
  }

  SECTION("a quiet log: every hypothesis is refuted and bash writes the conclusion") {
    auto r = p.run("investigation.yaml", {"--set", "incident_log=14:00:00 INFO all quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = result_of(r);
    CHECK(str(step_of(result, "conclude").at("status")) == "skipped");
    CHECK(str(step_of(result, "no-root-cause").at("status")) == "completed");
    CHECK(result.at("output") ==
          json::parse(R"({"status":"no root cause found","root_cause":null,"still_open":[],)"
                      R"("ruled_out":["H1","H2","H3"]})"));
    const auto& ctx = result.at("context").as_object();
    CHECK(str(ctx.at("evidence")) == "(no warnings or errors in the log)");
    CHECK(ctx.at("ranking") == json::parse(R"({"supported":[],"inconclusive":[],"refuted":["H1","H2","H3"]})"));
    const auto calls = p.calls();
    CHECK(calls.size() == 4);  // the hypotheses and three verifiers; no conclusion agent
    CHECK(calls_of(calls, "You are a skeptical verifier.").size() == 3);
  }

  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("pattern recipes: consensus asks three personas at once and the chair follows the majority") {
  pattern_run p;

  SECTION("two yes and one no") {
    auto r = p.run("consensus.yaml");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto result = result_of(r);
    CHECK(result.at("success") == json::value(true));
    CHECK(statuses(result) == std::vector<std::string>{"ask-architect completed", "ask-security completed",
                                                       "ask-pragmatist completed", "tally completed",
                                                       "decide completed", "no-decision skipped"});
    // Bare JSON, a fenced block and JSON inside a sentence: each found in the first reply.
    for (const char* id : {"ask-architect", "ask-security", "ask-pragmatist"}) {
      INFO(id);
      CHECK(step_of(result, id).at("attempts") == json::value(1));
    }

    const auto& output = result.at("output").as_object();
    CHECK(str(output.at("decision")) == "yes");
    CHECK(str(output.at("votes")) == "2 yes, 1 no, 0 abstain");
    CHECK(output.at("conditions").as_array().size() == 2);
    CHECK(str(output.at("dissent")).starts_with("pragmatist:"));

    const auto& ctx = result.at("context").as_object();
    CHECK(ctx.at("decision") == result.at("output"));
    CHECK(str(ctx.at("architect_vote").at("vote")) == "yes");
    CHECK(str(ctx.at("security_vote").at("vote")) == "yes");
    CHECK(str(ctx.at("pragmatist_vote").at("vote")) == "no");
    CHECK(ctx.at("pragmatist_vote").at("conditions") == json::parse("[]"));
    CHECK(ctx.at("tally") == json::parse(R"({"yes":2,"no":1,"abstain":0,"failed":0,"outcome":"yes","unanimous":false})"));

    const auto calls = p.calls();
    CHECK(calls.size() == 4);
    const auto architect = calls_of(calls, "You are a software architect");
    const auto security = calls_of(calls, "You are a security engineer");
    const auto pragmatist = calls_of(calls, "You are a pragmatic delivery lead");
    const auto chair = calls_of(calls, "You chair a review panel.");
    REQUIRE(architect.size() == 1);
    REQUIRE(security.size() == 1);
    REQUIRE(pragmatist.size() == 1);
    REQUIRE(chair.size() == 1);
    const std::vector<json::object> panel = {architect[0], security[0], pragmatist[0]};
    const auto question = str(ctx.at("question"));
    for (const auto& c : panel) {
      INFO("persona: " << str(c.at("system_prompt")));
      CHECK(str(c.at("system_prompt_source")) == "flag");
      CHECK(str(c.at("stdin")).starts_with(question + "\n"));
      CHECK(str(c.at("stdin")).ends_with(footer));
      CHECK(c.at("exit_code") == json::value(0));
    }
    // The three panelists ran at the same time (each sleeps 0.5 s), the chair after them.
    CHECK(max_overlap(panel) == 3);
    CHECK(start_of(chair[0]) >= latest_end(panel));
    const auto chair_prompt = str(chair[0].at("stdin"));
    CHECK(chair_prompt.starts_with("Question: " + question));
    CHECK(chair_prompt.find("- pragmatist: {\"vote\":\"no\",") != std::string::npos);
    CHECK(chair_prompt.find(R"(Tally: {"yes":2,"no":1,"abstain":0,"failed":0,"outcome":"yes","unanimous":false})") !=
          std::string::npos);
    CHECK(has_directive_starting(chair[0], "reply-json {\"decision\": \"yes\", \"votes\": \"2 yes, 1 no, 0 abstain\""));
  }

  SECTION("when every panelist crashes the tally fails and so does the run: no decision without a vote") {
    // The question reaches every panelist's prompt, so this directive makes all three fail.
    auto r = p.run("consensus.yaml", {"--set", "question=Is this a test?\nFAKE: exit 3 panelist crashed"});
    INFO(r.err);
    REQUIRE(r.exit_code == 1);
    const auto result = result_of(r);
    CHECK(result.at("success") == json::value(false));
    CHECK(statuses(result) == std::vector<std::string>{"ask-architect failed", "ask-security failed",
                                                       "ask-pragmatist failed", "tally failed", "decide not_run",
                                                       "no-decision not_run"});
    for (const char* id : {"ask-architect", "ask-security", "ask-pragmatist"}) {
      INFO(id);
      CHECK(step_of(result, id).at("exit_code") == json::value(3));
    }
    CHECK(str(step_of(result, "tally").at("error")).find("no panelist answered") != std::string::npos);
    const auto& ctx = result.at("context").as_object();
    CHECK_FALSE(ctx.contains("architect_vote"));  // a failed step stores no output
    CHECK_FALSE(ctx.contains("decision"));
    const auto calls = p.calls();
    CHECK(calls.size() == 3);  // no chair
    for (const auto& c : calls) CHECK(c.at("exit_code") == json::value(3));
  }

  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("pattern fleet-triage: schema-checked fan-out under provider limits with usage and a budget") {
  pattern_run p;
  auto r = p.run("fleet-triage.yaml");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  CHECK(statuses(result) == std::vector<std::string>{"triage completed", "label completed", "tally completed"});
  CHECK(json::serialize(result.at("output")) == R"({"triaged":6,"high":2})");
  // Issue 103's first reply lacked the schema's fields: one correction round.
  const auto calls = p.calls();
  CHECK(calls.size() == 7);
  int corrections = 0, peak = 0;
  for (const auto& c : calls) {
    if (str(c.at("stdin")).find("## Your previous reply was not accepted") != std::string::npos) ++corrections;
    peak = std::max(peak, static_cast<int>(c.at("concurrent").as_int64()));
  }
  CHECK(corrections == 1);
  CHECK(peak <= 4);  // limits: {fake: 4}
  const auto& totals = result.at("usage").at("totals").as_object();
  CHECK(totals.at("calls") == json::value(7));
  CHECK(totals.at("input").as_int64() == 7 * 1200);
  CHECK(totals.at("cost_usd").to_number<double>() > 0);

  SECTION("a smaller budget stops the fan-out before every item started") {
    pattern_run q;
    auto stopped = q.run("fleet-triage.yaml", {"--max-cost", "0.001"});
    CHECK(stopped.exit_code == 6);
    CHECK(str(result_of(stopped).at("status")) == "budget_exhausted");
    CHECK(q.calls().size() < 7);
  }
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("pattern cached-review: a second run asks no agent and an edited change is asked alone") {
  pattern_run p;
  const auto cache = p.root + "/cache";
  auto run = [&](std::vector<std::string> more) {
    more.insert(more.end(), {"--cache-dir", cache});
    return p.run("cached-review.yaml", std::move(more));
  };
  auto first = run({});
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  const auto one = result_of(first);
  CHECK(json::serialize(one.at("context").at("verdicts")) == R"({"approve":3,"reject":1})");
  CHECK(p.calls().size() == 4);

  auto second = run({});
  REQUIRE(second.exit_code == 0);
  const auto two = result_of(second);
  CHECK(p.calls().size() == 4);  // every reply came from the cache
  CHECK(step_of(two, "review").at("iterations").at("cached") == json::value(4));
  CHECK(two.at("context").at("reviews") == one.at("context").at("reviews"));

  // A new guidelines version is another key for every change: all are asked again.
  auto bumped = run({"--set", "guidelines_version=2027-01"});
  REQUIRE(bumped.exit_code == 0);
  CHECK(p.calls().size() == 8);
  CHECK(arun::test::leftover_processes().empty());
}

TEST_CASE("pattern parallel-fixes: three agents in worktrees each leave one commit on their own branch") {
  pattern_run p;
  const auto repo = p.root + "/checkout";
  fs::create_directories(repo);
  const auto setup = std::system(("cd '" + repo + "' && git init -q && echo base > README.md && git add README.md && "
                                  "git -c user.name=t -c user.email=t@t commit -qm base").c_str());
  REQUIRE(setup == 0);
  auto r = p.run("parallel-fixes.yaml", {}, repo);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto result = result_of(r);
  const auto session = str(result.at("session_id"));
  const auto branches = str(result.at("context").at("branches"));
  for (const auto* line : {"/fix/0: config/login.conf", "/fix/1: export/encoding.conf", "/fix/2: api/paging.conf"})
    CHECK(branches.find("arun/" + session + std::string(line)) != std::string::npos);
  CHECK_FALSE(fs::exists(repo + "/config"));  // the checkout itself is untouched
  const auto calls = p.calls();
  REQUIRE(calls.size() == 3);
  CHECK(max_overlap(calls) >= 2);  // they ran at the same time
  CHECK(arun::test::leftover_processes().empty());
}
