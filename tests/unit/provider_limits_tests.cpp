// Agent fleets in the engine with a fake runner: per-provider limits (`limits:`, --limit,
// `limit_group:`) and their adaptation to rate limits (AIMD), and `output_schema:` with its
// correction rounds.
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include <arun/engine.hpp>

#include <algorithm>
#include <memory>

using namespace arun;
using arun::test::make;
using arun::test::fan_out;
using test::fake_runner;
using test::recorder;

namespace {

step agent_step(const std::string& id, const std::string& prompt) {
  step s;
  s.id = id;
  s.type = step_type::agent;
  s.agent.prompt = prompt;
  return s;
}

step bash_step(const std::string& id, const std::string& command) {
  step s;
  s.id = id;
  s.command = command;
  return s;
}

run_options opts() {
  run_options o;
  o.session_id = "sid";
  o.working_dir = "/project";
  o.random_seed = 3;
  o.agents.rate_limit_delay = 0.001;
  o.agent_provider = "fake";
  return o;
}

run_result run(fake_runner& runner, recorder& events, const recipe& r, run_options o = opts()) {
  recipe_engine eng(runner, events);
  return test::run_sync(eng.run(r, std::move(o)));
}

// Every step_start of a child in `group`: never more running than the limit said then.
void check_starts_within_limits(const recorder& events, const std::string& group) {
  int seen = 0;
  for (const auto& e : events.of(event_kind::step_start)) {
    if (e.group.name != group) continue;
    ++seen;
    INFO(e.step << " started with " << e.group.running << " of " << group << " running, limit " << e.group.limit);
    CHECK(e.group.running >= 1);
    if (e.group.limit > 0) CHECK(e.group.running <= e.group.limit);
  }
  CHECK(seen > 0);
}

// A schema that wants an object with a string `name`.
class needs_name final : public json_schema_check {
public:
  std::vector<std::string> violations(const boost::json::value& v) const override {
    const auto* o = v.if_object();
    if (!o) return {"an object was expected at $"};
    const auto* name = o->if_contains("name");
    if (!name) return {"'name' is a required property at $"};
    if (!name->is_string()) return {"a string was expected at $.name"};
    return {};
  }
  const std::string& origin() const noexcept override { return origin_; }
  const boost::json::value& document() const noexcept override { return document_; }

private:
  std::string origin_ = "inline";
  boost::json::value document_ = boost::json::object{{"type", "object"}, {"required", boost::json::array{"name"}}};
};

}  // namespace

TEST_CASE("provider limits: an agent provider's limit caps its children below the global limit") {
  fake_runner runner;
  recorder events;
  auto r = make({fan_out(agent_step("a", "sleep:20 out:{{item}}"), 6)});
  r.limits["fake"] = 2;
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.agent_calls.size() == 6);
  CHECK(runner.agent_peak == 2);
  check_starts_within_limits(events, "fake");
  // Another provider's limit does not bind these agents.
  fake_runner other;
  r.limits = {{"claude", 1}};
  REQUIRE(run(other, events, r).status == run_status::completed);
  CHECK(other.agent_peak == 6);
}

TEST_CASE("provider limits: --limit wins over the recipe per name") {
  fake_runner runner;
  recorder events;
  auto r = make({fan_out(agent_step("a", "sleep:20 out:{{item}}"), 6)});
  r.limits["fake"] = 1;
  auto o = opts();
  o.limits["fake"] = 3;
  REQUIRE(run(runner, events, r, o).status == run_status::completed);
  CHECK(runner.agent_peak == 3);
}

TEST_CASE("provider limits: limit_group puts bash steps under a limit and agents under another") {
  fake_runner runner;
  recorder events;
  auto api = fan_out(bash_step("api", "sleep:20 out:x"), 5);
  api.limit_group = "api";
  auto agents = fan_out(agent_step("ask", "sleep:20 out:{{item}}"), 4);
  auto r = make({api, agents});
  r.steps[0].parallel_group = "g";
  r.steps[1].parallel_group = "g";
  r.limits = {{"api", 1}, {"fake", 2}};
  REQUIRE(run(runner, events, r).status == run_status::completed);
  CHECK(runner.agent_peak == 2);
  CHECK(runner.peak <= 3);  // one api call and two agents at most
  check_starts_within_limits(events, "api");
  check_starts_within_limits(events, "fake");
  // Each api call counted against its group.
  for (const auto& e : events.of(event_kind::step_start))
    if (e.step.starts_with("api[")) CHECK(e.group.name == "api");
}

TEST_CASE("provider limits: a round of rate limits halves the limit once and clean replies grow it back") {
  fake_runner runner;
  recorder events;
  auto r = make({fan_out(agent_step("a", "sleep:20 out:{{item}}"), 4)});
  r.limits["fake"] = 4;
  for (int i = 0; i < 4; ++i) runner.rate_limited_left["sleep:20 out:" + std::to_string(i)] = 1;
  const auto result = run(runner, events, r);
  REQUIRE(result.status == run_status::completed);
  CHECK(runner.agent_calls.size() == 8);
  const auto changes = events.of(event_kind::limit_changed);
  REQUIRE(!changes.empty());
  // The four replies were rate limited in one round: one halving, from 4 to 2.
  CHECK(changes.front().message == "rate limited");
  CHECK(changes.front().group.name == "fake");
  CHECK(changes.front().group.limit == 2);
  CHECK(changes.front().group.configured == 4);
  CHECK(std::count_if(changes.begin(), changes.end(), [](const auto& c) { return c.message == "rate limited"; }) == 1);
  // Each clean completion adds one back, up to the configured 4.
  CHECK(changes.back().message == "a clean completion");
  CHECK(changes.back().group.limit == 4);
  for (const auto& c : changes) CHECK(c.group.limit <= 4);
  check_starts_within_limits(events, "fake");
}

TEST_CASE("provider limits: a limit never falls below one") {
  fake_runner runner;
  recorder events;
  auto r = make({agent_step("a", "out:x")});
  r.limits["fake"] = 1;
  runner.rate_limited_left["out:x"] = 3;
  REQUIRE(run(runner, events, r).status == run_status::completed);
  CHECK(runner.agent_calls.size() == 4);
  CHECK(events.of(event_kind::limit_changed).empty());  // 1 stays 1
}

TEST_CASE("provider limits: a provider nobody limited adapts from half of what was running") {
  fake_runner runner;
  recorder events;
  auto r = make({fan_out(agent_step("a", "sleep:20 out:{{item}}"), 6)});
  for (int i = 0; i < 6; ++i) runner.rate_limited_left["sleep:20 out:" + std::to_string(i)] = 1;
  REQUIRE(run(runner, events, r).status == run_status::completed);
  const auto changes = events.of(event_kind::limit_changed);
  REQUIRE(!changes.empty());
  CHECK(changes.front().message == "rate limited");
  CHECK(changes.front().group.limit == 3);
  CHECK_FALSE(changes.front().group.configured.has_value());
  // The retries ran under the adapted limit (which grows back as they complete).
  for (const auto& e : events.of(event_kind::step_start))
    if (e.attempt > 1 && e.group.limit > 0) CHECK(e.group.running <= e.group.limit);
}

TEST_CASE("provider limits: the rate-limit wait holds no slot of the provider") {
  fake_runner runner;
  recorder events;
  auto o = opts();
  o.agents.rate_limit_delay = 0.3;
  auto slow = agent_step("slow", "out:slow");
  slow.parallel_group = "g";
  auto quick = agent_step("quick", "sleep:50 out:quick");
  quick.parallel_group = "g";
  auto r = make({slow, quick});
  r.limits["fake"] = 1;
  runner.rate_limited_left["out:slow"] = 1;
  REQUIRE(run(runner, events, r, o).status == run_status::completed);
  // slow's first call, then quick (while slow waits to retry), then slow again.
  REQUIRE(runner.started.size() == 3);
  CHECK(runner.started[0] == "slow");
  CHECK(runner.started[1] == "quick");
  CHECK(runner.started[2] == "slow");
  CHECK(runner.finished[1] == "quick");
}

TEST_CASE("output_schema: a reply that does not conform is asked again with the validator's errors") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", R"(out:{"name": "ok"})");
  a.output_schema = std::make_shared<needs_name>();
  a.output = "answer";
  runner.wrong_json_left[R"(out:{"name": "ok"})"] = 2;
  const auto result = run(runner, events, make({a}));
  REQUIRE(result.status == run_status::completed);
  REQUIRE(runner.agent_calls.size() == 3);
  CHECK(result.step_results[0].attempts == 3);
  CHECK(result.context.at("answer").at("name") == "ok");
  for (std::size_t i = 1; i < 3; ++i) {
    const auto& prompt = runner.agent_calls[i].prompt;
    CHECK(prompt.starts_with(runner.agent_calls[0].prompt));
    CHECK(prompt.find("## Your previous reply was not accepted") != std::string::npos);
    CHECK(prompt.find("- 'name' is a required property at $") != std::string::npos);
    CHECK(prompt.find(R"({"unexpected": true})") != std::string::npos);
    CHECK(prompt.find(R"("required":["name"])") != std::string::npos);
  }
  const auto retries = events.of(event_kind::step_retry);
  REQUIRE(retries.size() == 2);
  CHECK(retries[0].message.starts_with("output_schema: the reply does not conform ('name' is a required property at $); asking again (1 of 2)"));
  // Each reply is an attempt of its own: the first and the second reply were asked again.
  CHECK(retries[0].attempt == 1);
  CHECK(retries[1].attempt == 2);
  const auto starts = events.of(event_kind::step_start);
  REQUIRE(starts.size() == 3);
  CHECK(starts[1].attempt == 2);
  CHECK(starts[2].attempt == 3);
}

TEST_CASE("output_schema: after schema_retries the step fails with the errors and on_error applies") {
  fake_runner runner;
  recorder events;
  auto a = agent_step("a", R"(out:{"name": "ok"})");
  a.output_schema = std::make_shared<needs_name>();
  a.schema_retries = 1;
  auto next = bash_step("next", "out:after");
  runner.wrong_json_left[R"(out:{"name": "ok"})"] = 5;
  auto result = run(runner, events, make({a, next}));
  CHECK(result.status == run_status::failed);
  CHECK(runner.agent_calls.size() == 2);
  const auto& error = result.step_results[0].error;
  // The first problem on the first line: the line a summary shows ends with it, not with a colon.
  CHECK(error.substr(0, error.find('\n')) ==
        "step 'a': output_schema (inline): the last of 2 replies does not conform: 'name' is a required property at $");
  CHECK(result.step_results[1].status == step_status::not_run);
  CHECK(result.step_results[0].output.is_null());  // never a degraded value

  fake_runner again;
  again.wrong_json_left[R"(out:{"name": "ok"})"] = 5;
  a.on_error = on_error_policy::continue_run;
  a.schema_retries = 0;
  result = run(again, events, make({a, next}));
  CHECK(result.status == run_status::completed);
  CHECK(again.agent_calls.size() == 1);
  CHECK(result.step_results[0].status == step_status::failed);
  CHECK(result.step_results[0].error.find("output_schema (inline): the output does not conform:") != std::string::npos);
  CHECK(result.step_results[1].status == step_status::completed);
}

TEST_CASE("output_schema: a bash step's output is parsed and checked") {
  fake_runner runner;
  recorder events;
  auto good = bash_step("good", R"(out:{"name": "x", "n": 1})");
  good.output_schema = std::make_shared<needs_name>();
  good.output = "g";
  auto bad = bash_step("bad", R"(out:{"name": 5})");
  bad.output_schema = good.output_schema;
  const auto result = run(runner, events, make({good, bad}));
  CHECK(result.status == run_status::failed);
  CHECK(result.context.at("g").at("n") == 1);
  CHECK(result.step_results[1].error.find("the output does not conform: a string was expected at $.name") != std::string::npos);
  CHECK(runner.calls.size() == 2);  // a bash step is not asked again

  fake_runner prose;
  auto none = bash_step("none", "out:no json here");
  none.output_schema = good.output_schema;
  const auto failed = run(prose, events, make({none}));
  CHECK(failed.step_results[0].error.find("the output holds no JSON value") != std::string::npos);
}

namespace {

agent_usage call_usage(std::optional<double> cost, std::string model = "m1") {
  agent_usage u;
  u.provider = "fake";
  u.model = std::move(model);
  u.calls = 1;
  u.input = 100;
  u.output = 20;
  u.cache_read = 5;
  u.cost_usd = cost;
  return u;
}

// An agent step `a` whose reply must have a `name`, and whose first `wrong` replies have none.
step misreplying_agent(fake_runner& runner, int wrong) {
  auto a = agent_step("a", R"(out:{"name": "ok"})");
  a.output_schema = std::make_shared<needs_name>();
  runner.wrong_json_left[R"(out:{"name": "ok"})"] = wrong;
  return a;
}

}  // namespace

TEST_CASE("usage: a step's usage sums its calls and the run totals go per provider and model") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(0.25);
  auto a = misreplying_agent(runner, 1);  // one correction round
  auto b = agent_step("b", "out:plain");
  runner.rate_limited_left["out:plain"] = 1;  // a retried attempt still spent
  auto c = bash_step("c", "out:no agent");
  const auto result = run(runner, events, make({a, b, c}));
  REQUIRE(result.status == run_status::completed);
  REQUIRE(result.step_results[0].usage);
  CHECK(result.step_results[0].usage->calls == 2);
  CHECK(result.step_results[0].usage->input == 200);
  CHECK(result.step_results[0].usage->cost_usd == Approx(0.5));
  REQUIRE(result.step_results[1].usage);
  CHECK(result.step_results[1].usage->calls == 2);
  CHECK_FALSE(result.step_results[2].usage);
  REQUIRE(result.usage.size() == 1);
  const auto& t = result.usage.front();
  CHECK(t.provider == "fake");
  CHECK(t.model == "m1");
  CHECK(t.calls == 4);
  CHECK(t.output == 80);
  CHECK(t.cache_read == 20);
  CHECK(t.cost_usd == Approx(1.0));
  CHECK(t.calls_without_cost == 0);
}

TEST_CASE("usage: a loop's result sums its iterations and an unknown cost is never a zero") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(std::nullopt);
  const auto result = run(runner, events, make({fan_out(agent_step("a", "out:{{item}}"), 3)}));
  REQUIRE(result.step_results[0].usage);
  CHECK(result.step_results[0].usage->calls == 3);
  CHECK_FALSE(result.step_results[0].usage->cost_usd.has_value());
  CHECK(result.step_results[0].usage->calls_without_cost == 3);
  REQUIRE(result.usage.size() == 1);
  CHECK(result.usage.front().calls_without_cost == 3);
  CHECK(result.usage.front().cost_usd == 0);
}

TEST_CASE("budget: reached, no new step starts, running ones finish and the run ends budget_exhausted") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(0.10);
  auto loop = fan_out(agent_step("a", "sleep:20 out:{{item}}"), 10);
  loop.foreach->max_concurrent = 2;
  auto after = bash_step("after", "out:later");
  auto r = make({loop, after});
  r.budget.cost_usd = 0.25;
  const auto result = run(runner, events, r);
  CHECK(result.status == run_status::budget_exhausted);
  CHECK(result.error.find("the budget is reached ($0.") != std::string::npos);
  // Two at a time: the third call reaches the budget, the fourth was already running.
  CHECK(runner.agent_calls.size() >= 3);
  CHECK(runner.agent_calls.size() <= 4);
  const auto& its = *result.step_results[0].iterations;
  CHECK(its.completed == runner.agent_calls.size());
  CHECK(its.completed + its.not_run + its.cancelled == 10);
  CHECK(result.step_results[0].status == step_status::cancelled);
  CHECK(result.step_results[1].status == step_status::not_run);
  bool warned = false;
  for (const auto& w : events.of(event_kind::warning))
    warned = warned || w.message.find("the budget is reached after") != std::string::npos;
  CHECK(warned);

  SECTION("the command line's budget wins over the recipe's") {
    fake_runner more;
    more.usage_per_call = call_usage(0.10);
    auto o = opts();
    o.budget.cost_usd = 100;
    CHECK(run(more, events, r, o).status == run_status::completed);
    CHECK(more.agent_calls.size() == 10);
  }
}

TEST_CASE("budget: a token budget counts input output and cache tokens") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(std::nullopt);  // 125 tokens a call
  auto loop = fan_out(agent_step("a", "out:{{item}}"), 5);
  loop.foreach->max_concurrent = 1;
  auto o = opts();
  o.budget.tokens = 250;
  const auto result = run(runner, events, make({loop}), o);
  CHECK(result.status == run_status::budget_exhausted);
  CHECK(runner.agent_calls.size() == 2);
}

TEST_CASE("budget: calls of unknown cost are not counted against a cost budget and are said so") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(std::nullopt);
  auto o = opts();
  o.budget.cost_usd = 0.01;
  const auto result = run(runner, events, make({fan_out(agent_step("a", "out:{{item}}"), 3)}), o);
  CHECK(result.status == run_status::completed);
  int warnings = 0;
  for (const auto& w : events.of(event_kind::warning))
    if (w.message.find("reported no cost for model m1") != std::string::npos) ++warnings;
  CHECK(warnings == 1);
}

TEST_CASE("budget: a rate-limit retry does not start once the budget is reached, nor is it announced or waited for") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(1.0);
  runner.rate_limited_left["out:x"] = 3;
  auto o = opts();
  o.budget.cost_usd = 1.0;
  o.agents.rate_limit_delay = 30;  // a wait for a retry that cannot start would show
  const auto started = std::chrono::steady_clock::now();
  const auto result = run(runner, events, make({agent_step("a", "out:x")}), o);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  CHECK(events.of(event_kind::step_retry).empty());
  CHECK(result.status == run_status::budget_exhausted);
  CHECK(runner.agent_calls.size() == 1);
  CHECK(result.step_results[0].status == step_status::cancelled);
  CHECK(result.step_results[0].error.find("not started: the budget is reached ($1.0000 spent of the $1.0000 budget) for a retry") !=
        std::string::npos);
}

TEST_CASE("budget: a stopped loop tells the items it never started from those stopped between their calls") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(0.5);
  // Item 0's first reply is a rate limit, which comes after the other items' calls have spent
  // the budget: its retry is refused, and what is left never starts.
  runner.rate_limited_left["sleep:300 out:slow"] = 1;
  auto loop = fan_out(agent_step("a", "{{item}}"), 4);
  loop.foreach->items = boost::json::array{"sleep:300 out:slow", "out:b", "out:c", "out:d"};
  loop.foreach->max_concurrent = 2;
  auto o = opts();
  o.budget.cost_usd = 1.0;
  o.agents.rate_limit_delay = 0.01;
  const auto result = run(runner, events, make({loop}), o);
  CHECK(result.status == run_status::budget_exhausted);
  const auto& r = result.step_results[0];
  REQUIRE(r.iterations);
  CHECK(r.iterations->cancelled == 1);
  CHECK(r.iterations->not_run >= 1);
  CHECK(r.iterations->completed + r.iterations->not_run == 3);
  CHECK_THAT(r.error, Catch::StartsWith("step 'a': " + std::to_string(r.iterations->not_run) +
                                        " of 4 items not started, 1 stopped before a further call: the budget is "
                                        "reached ($"));
}

TEST_CASE("budget: no output_schema correction or parse_json reminder starts once the budget is reached") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(0.5);
  auto a = misreplying_agent(runner, 3);
  a.schema_retries = 3;
  auto o = opts();
  o.budget.cost_usd = 0.5;
  const auto result = run(runner, events, make({a}), o);
  CHECK(result.status == run_status::budget_exhausted);
  CHECK(runner.agent_calls.size() == 1);  // before: every correction round went on
  const auto& r = result.step_results[0];
  CHECK(r.status == step_status::cancelled);
  CHECK(r.error.find("not started: the budget is reached ($0.5000 spent of the $0.5000 budget) for an output_schema "
                     "correction; the reply does not conform (") != std::string::npos);
  REQUIRE(r.usage);
  CHECK(r.usage->calls == 1);  // what it spent stays its own
  CHECK(r.attempts == 1);
  CHECK(events.of(event_kind::step_retry).empty());  // "asking again" is not said

  SECTION("parse_json's reminder") {
    fake_runner prose;
    prose.usage_per_call = call_usage(0.5);
    auto p = agent_step("p", "out:no json here");
    p.parse_json = true;
    const auto stopped = run(prose, events, make({p}), o);
    CHECK(stopped.status == run_status::budget_exhausted);
    CHECK(prose.agent_calls.size() == 1);
    CHECK(stopped.step_results[0].error.find("for parse_json's reminder; the reply held no JSON") != std::string::npos);
  }
}

namespace {

// A journal that keeps every call's usage, as a session does, and gives the earlier runs' back.
struct usage_journal final : run_journal {
  std::vector<std::pair<std::string, agent_usage>> calls;
  std::optional<std::vector<agent_usage>> earlier;
  std::vector<step_result> records;
  void record(const step_result& r, const boost::json::object&) noexcept override { records.push_back(r); }
  const finished_instance* find(std::string_view) const noexcept override { return nullptr; }
  void record_usage(std::string_view instance, const agent_usage& call) noexcept override {
    calls.emplace_back(std::string(instance), call);
  }
  std::optional<std::vector<agent_usage>> recorded_usage() const override { return earlier; }
};

// The spend the last step_end carried (what the status line shows).
struct spend_listener final : event_listener {
  std::optional<event::spend_state> last_end;
  void on_event(const event& e) noexcept override {
    if (e.kind == event_kind::step_end && e.spend) last_end = e.spend;
  }
};

}  // namespace

TEST_CASE("budget: every call's usage is journaled at once, also of an instance the budget stop cancels") {
  fake_runner runner;
  recorder events;
  runner.usage_per_call = call_usage(0.5);
  auto a = misreplying_agent(runner, 1);
  usage_journal journal;
  auto o = opts();
  o.journal = &journal;
  o.budget.cost_usd = 0.5;
  spend_listener seen;
  recipe_engine eng(runner, seen);
  const auto result = test::run_sync(eng.run(make({a}), o));
  CHECK(result.step_results[0].status == step_status::cancelled);
  REQUIRE(journal.calls.size() == 1);
  CHECK(journal.calls[0].first == "a");
  CHECK(journal.calls[0].second.cost_usd == Approx(0.5));
  // The status line's figures come with the events, against the budget.
  REQUIRE(seen.last_end);
  CHECK(seen.last_end->cost_usd == Approx(0.5));
  CHECK(seen.last_end->budget_usd == Approx(0.5));

  SECTION("a resume counts them: with the same budget it starts no call and says what was spent") {
    fake_runner again;
    usage_journal resumed;
    resumed.earlier = std::vector<agent_usage>{call_usage(0.5)};
    o.journal = &resumed;
    const auto r2 = run(again, events, make({a}), o);
    CHECK(r2.status == run_status::budget_exhausted);
    CHECK(again.agent_calls.empty());
    CHECK(r2.error.find("$0.5000 spent of the $0.5000 budget") != std::string::npos);
    REQUIRE(r2.usage.size() == 1);
    CHECK(r2.usage.front().cost_usd == Approx(0.5));  // the session's, reported
    CHECK(r2.usage.front().calls == 1);
    CHECK(resumed.calls.empty());  // nothing journaled twice
  }
}

TEST_CASE("usage: a sum keeps the known cost and counts the calls of unknown cost beside it") {
  agent_usage known = call_usage(0.20);
  agent_usage unknown = call_usage(std::nullopt, "m2");
  unknown.calls_without_cost = 1;
  std::optional<agent_usage> sum;
  add_usage(sum, known);
  add_usage(sum, unknown);
  REQUIRE(sum);
  CHECK(sum->calls == 2);
  CHECK(sum->cost_usd == Approx(0.20));
  CHECK(sum->calls_without_cost == 1);
  CHECK(sum->model == "m2");
}
