// The engine's services for leaves of agent fleets, with a fake runner: cached steps
// (`cache:`, an in-memory cache: what the content key covers and what it leaves out, hits that
// start nothing, what is stored (only clean completions), --refresh-cache, the loader's field
// with its positions) and isolated steps (`isolation:`, a provider that makes no tree).
#include <catch2/catch.hpp>

#include "event_recorder.hpp"
#include "fake_runner.hpp"
#include "recipe_builders.hpp"
#include "run_sync.hpp"

#include "recipe/recipe_loader.hpp"

#include <arun/engine.hpp>
#include <arun/value_format.hpp>

#include <map>

using namespace arun;
using arun::test::make;
using arun::test::fan_out;
using test::fake_runner;
using test::recorder;

namespace {

// The cache a run sees, in memory. Its hash is the material itself, so tests can read what
// a key is made of.
class memory_cache final : public result_cache {
public:
  std::map<std::string, cached_output> entries;
  std::vector<std::string> asked;  ///< keys looked up, in order
  std::vector<std::optional<std::chrono::seconds>> ages;
  int stores = 0;
  std::string files_digest = "a.txt 1111";
  std::string files_error;

  std::string hash(std::string_view material) const override { return std::string(material); }
  std::string digest_files(const std::vector<std::string>& globs, const std::string& dir,
                           std::vector<std::string>&, std::string& error) const override {
    error = files_error;
    std::string out = "in " + dir;
    for (const auto& g : globs) out += " glob " + g;
    return out + " " + files_digest;
  }
  std::optional<cached_output> find(const std::string& key, std::optional<std::chrono::seconds> max_age) noexcept override {
    asked.push_back(key);
    ages.push_back(max_age);
    const auto it = entries.find(key);
    if (it == entries.end()) return std::nullopt;
    return it->second;
  }
  std::string store(const std::string& key, const cached_output& output) noexcept override {
    ++stores;
    entries[key] = output;
    return {};
  }
};

step bash_step(const std::string& id, const std::string& command) {
  step s;
  s.id = id;
  s.command = command;
  s.output = id;
  s.cache = std::make_shared<const step_cache>();
  return s;
}

run_options opts(memory_cache& cache) {
  run_options o;
  o.session_id = "sid";
  o.working_dir = "/project";
  o.random_seed = 3;
  o.cache = &cache;
  return o;
}

run_result run(fake_runner& runner, const recipe& r, run_options o, recorder* events = nullptr) {
  recorder own;
  recipe_engine eng(runner, events ? *events : own);
  return test::run_sync(eng.run(r, std::move(o)));
}

// The key the one cached instance of `r` was looked up with.
std::string key_of(const recipe& r, run_options o) {
  fake_runner runner;
  memory_cache cache;
  o.cache = &cache;
  run(runner, r, std::move(o));
  REQUIRE(cache.asked.size() == 1);
  return cache.asked.front();
}

step with_cache(step s, step_cache c) {
  s.cache = std::make_shared<const step_cache>(std::move(c));
  return s;
}

}  // namespace

TEST_CASE("cache: a fan-out run twice starts no child the second time and gives the same result", "[cache]") {
  memory_cache cache;
  const auto r = make({fan_out(bash_step("ask", "out:item {{item}}"), 5)});
  fake_runner first;
  const auto one = run(first, r, opts(cache));
  REQUIRE(one.status == run_status::completed);
  CHECK(first.calls.size() == 5);
  CHECK(cache.stores == 5);
  CHECK(cache.entries.size() == 5);

  fake_runner second;
  recorder events;
  const auto two = run(second, r, opts(cache), &events);
  REQUIRE(two.status == run_status::completed);
  CHECK(second.calls.empty());
  CHECK(cache.stores == 5);  // hits store nothing again
  CHECK(two.step_results[0].output == one.step_results[0].output);
  CHECK(two.context.at("ask") == one.context.at("ask"));
  REQUIRE(two.step_results[0].iterations);
  CHECK(two.step_results[0].iterations->cached == 5);
  CHECK(two.step_results[0].iterations->completed == 5);
  int cached_ends = 0;
  for (const auto& e : events.of(event_kind::step_end))
    if (e.cached) {
      ++cached_ends;
      CHECK(e.status == "completed");
      CHECK(e.attempts == 0);
    }
  CHECK(cached_ends == 5);
  CHECK(events.of(event_kind::step_start).size() == 1);  // the loop's own; no leaf started
}

TEST_CASE("cache: the key covers the rendered command the values it reads env cwd and extra key values", "[cache]") {
  memory_cache unused;
  recipe with_x = make({bash_step("a", "out:{{x}}")});
  with_x.context["x"] = "one";
  const auto base = key_of(with_x, opts(unused));
  CHECK(base.find("type bash") != std::string::npos);
  CHECK(base.find("cwd ") != std::string::npos);

  // The same work gives the same key; other work, another.
  CHECK(key_of(with_x, opts(unused)) == base);
  recipe spaced = make({bash_step("a", "out:{{x}} ")});
  spaced.context["x"] = "one";
  CHECK(key_of(spaced, opts(unused)) != base);

  const auto x_one = key_of(with_x, opts(unused));
  with_x.context["x"] = "two";
  CHECK(key_of(with_x, opts(unused)) != x_one);
  // The whole context is exported to a bash step: a script it runs may read any of it.
  with_x.context["x"] = "one";
  with_x.context["target"] = "staging";
  const auto staging = key_of(with_x, opts(unused));
  with_x.context["target"] = "production";
  CHECK(key_of(with_x, opts(unused)) != staging);

  auto env_step = bash_step("a", "out:hi");
  env_step.env = {{"A", "1"}, {"B", "2"}};
  const auto env_ab = key_of(make({env_step}), opts(unused));
  env_step.env = {{"B", "2"}, {"A", "1"}};
  CHECK(key_of(make({env_step}), opts(unused)) == env_ab);  // the order keys are written in is not content
  env_step.env = {{"A", "1"}, {"B", "3"}};
  CHECK(key_of(make({env_step}), opts(unused)) != env_ab);

  auto dir_step = bash_step("a", "out:hi");
  const auto here = key_of(make({dir_step}), opts(unused));
  dir_step.working_dir = "sub";
  CHECK(key_of(make({dir_step}), opts(unused)) != here);

  step_cache extra;
  extra.key = {"v{{version}}"};
  recipe versioned = make({with_cache(bash_step("a", "out:hi"), extra)});
  versioned.context["version"] = 1;
  const auto v1 = key_of(versioned, opts(unused));
  CHECK(v1.find("key 2:v1") != std::string::npos);
  versioned.context["version"] = 2;
  CHECK(key_of(versioned, opts(unused)) != v1);
}

TEST_CASE("cache: files count by their digest and the scope narrows who may reuse an output", "[cache]") {
  memory_cache unused;
  step_cache files;
  files.files = {"src/*.py"};
  const auto r = make({with_cache(bash_step("a", "out:hi"), files)});
  fake_runner runner;
  memory_cache cache;
  run(runner, r, opts(cache));
  REQUIRE(cache.asked.size() == 1);
  CHECK(cache.asked[0].find("glob src/*.py") != std::string::npos);
  CHECK(cache.asked[0].find("a.txt 1111") != std::string::npos);
  // Changed contents, another key: the step runs again.
  cache.files_digest = "a.txt 2222";
  fake_runner again;
  run(again, r, opts(cache));
  CHECK(again.calls.size() == 1);
  // Unchanged: a hit.
  fake_runner third;
  run(third, r, opts(cache));
  CHECK(third.calls.empty());

  const auto global = key_of(make({bash_step("a", "out:hi")}), opts(unused));
  step_cache by_recipe;
  by_recipe.scope = cache_scope::recipe;
  const auto in_recipe = key_of(make({with_cache(bash_step("a", "out:hi"), by_recipe)}), opts(unused));
  CHECK(in_recipe != global);
  CHECK(in_recipe.find("recipe 1:t") != std::string::npos);
  step_cache by_session;
  by_session.scope = cache_scope::session;
  const auto in_session = key_of(make({with_cache(bash_step("a", "out:hi"), by_session)}), opts(unused));
  CHECK(in_session.find("session 3:sid") != std::string::npos);
}

TEST_CASE("cache: only clean completions are stored and a failure runs again next time", "[cache]") {
  memory_cache cache;
  auto failing = bash_step("a", "fail:3");
  failing.on_error = on_error_policy::continue_run;
  const auto r = make({failing});
  fake_runner first;
  run(first, r, opts(cache));
  CHECK(cache.stores == 0);
  fake_runner second;
  run(second, r, opts(cache));
  CHECK(second.calls.size() == 1);

  // parse_json's degraded text is not kept either.
  auto prose = bash_step("b", "out:not json");
  prose.parse_json = true;
  fake_runner third;
  const auto degraded = run(third, make({prose}), opts(cache));
  CHECK(degraded.step_results[0].status == step_status::degraded);
  CHECK(cache.stores == 0);
}

TEST_CASE("cache: an output holding a secret is not kept and one the step now refuses is no hit", "[cache]") {
  memory_cache cache;
  recipe r = make({bash_step("a", "out:token {{token}}")});
  r.context["token"] = "hunter2";
  auto o = opts(cache);
  o.secret_names.insert("token");
  fake_runner first;
  recorder events;
  run(first, r, std::move(o), &events);
  CHECK(first.calls.size() == 1);
  CHECK(cache.stores == 0);
  bool warned = false;
  for (const auto& e : events.of(event_kind::warning)) warned = warned || e.message.find("holds a secret") != std::string::npos;
  CHECK(warned);

  // Stored as prose; the step now wants JSON: the stored output is no hit, the step runs.
  memory_cache prose_cache;
  auto prose = bash_step("b", "out:plain words");
  fake_runner before;
  run(before, make({prose}), opts(prose_cache));
  CHECK(prose_cache.stores == 1);
  prose.parse_json = true;
  prose.parse_json_required = true;
  prose.on_error = on_error_policy::continue_run;
  fake_runner after;
  const auto judged = run(after, make({prose}), opts(prose_cache));
  CHECK(after.calls.size() == 1);
  CHECK_FALSE(judged.step_results[0].cached);
}

TEST_CASE("cache: an agent's schema is part of its key and a fallback model's reply is not kept", "[cache]") {
  memory_cache cache;
  step s;
  s.id = "ask";
  s.type = step_type::agent;
  s.agent.prompt = "classify";
  s.agent.model = "big";
  s.cache = std::make_shared<const step_cache>();
  fake_runner first;
  run(first, make({s}), opts(cache));
  REQUIRE(cache.asked.size() == 1);
  s.parse_json = true;
  fake_runner second;
  run(second, make({s}), opts(cache));
  REQUIRE(cache.asked.size() == 2);
  CHECK(cache.asked[0] != cache.asked[1]);
  CHECK(cache.asked[1].find("parse_json 11:best_effort") != std::string::npos);

  // Rate limited until the last retry, which the fallback model answers: not kept.
  memory_cache fallback_cache;
  step limited = s;
  limited.parse_json = false;
  limited.agent.prompt = "busy";
  auto o = opts(fallback_cache);
  o.agents.rate_limit_retries = 1;
  o.agents.rate_limit_delay = 0.001;
  o.agents.rate_limit_fallback_model = "cheap";
  fake_runner third;
  third.rate_limited_left["busy"] = 1;
  const auto result = run(third, make({limited}), std::move(o));
  REQUIRE(third.agent_calls.size() == 2);
  CHECK(third.agent_calls[1].model == "cheap");
  CHECK(result.step_results[0].status == step_status::completed);
  CHECK(fallback_cache.stores == 0);
}

TEST_CASE("cache: max_age goes to the lookup and refresh runs the step again and replaces its entry", "[cache]") {
  memory_cache cache;
  step_cache week;
  week.max_age = std::chrono::hours(24 * 7);
  const auto r = make({fan_out(with_cache(bash_step("a", "out:{{item}}"), week), 3)});
  fake_runner first;
  run(first, r, opts(cache));
  REQUIRE(!cache.ages.empty());
  CHECK(cache.ages.front() == std::chrono::seconds(7 * 24 * 3600));
  CHECK(cache.stores == 3);

  auto o = opts(cache);
  o.refresh_cache = [](std::string_view step_id, std::string_view instance) {
    return step_id == "a" && instance == "a[1]";
  };
  fake_runner refreshed;
  const auto asked_before = cache.asked.size();
  run(refreshed, r, std::move(o));
  REQUIRE(refreshed.calls.size() == 1);
  CHECK(refreshed.calls[0].instance_id == "a[1]");
  CHECK(cache.stores == 4);  // its new output replaced the entry
  CHECK(cache.asked.size() == asked_before + 2);  // the refreshed one is not looked up
}

TEST_CASE("cache: without a cache (--no-cache) every instance runs and nothing is kept", "[cache]") {
  memory_cache cache;
  const auto r = make({fan_out(bash_step("a", "out:{{item}}"), 3)});
  fake_runner first;
  run(first, r, opts(cache));
  auto o = opts(cache);
  o.cache = nullptr;
  fake_runner second;
  run(second, r, std::move(o));
  CHECK(second.calls.size() == 3);
  CHECK(cache.stores == 3);
}

TEST_CASE("cache: a key that cannot be made runs the step with a warning", "[cache]") {
  memory_cache cache;
  cache.files_error = "cannot read src/a.py: Permission denied";
  step_cache files;
  files.files = {"src/*.py"};
  fake_runner runner;
  recorder events;
  const auto result = run(runner, make({with_cache(bash_step("a", "out:hi"), files)}), opts(cache), &events);
  CHECK(result.status == run_status::completed);
  CHECK(runner.calls.size() == 1);
  CHECK(cache.stores == 0);
  bool warned = false;
  for (const auto& e : events.of(event_kind::warning))
    warned = warned || e.message.find("cache: not used for this instance: cannot read src/a.py") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("cache: an agent step's hit starts no call and spends nothing and its prompt is in the key", "[cache]") {
  memory_cache cache;
  step s;
  s.id = "ask";
  s.type = step_type::agent;
  s.agent.prompt = "review {{item}}";
  s.agent.model = "m1";
  s.output = "ask";
  s.cache = std::make_shared<const step_cache>();
  const auto r = make({fan_out(s, 2)});
  fake_runner first;
  agent_usage u;
  u.provider = "fake";
  u.calls = 1;
  u.input = 100;
  first.usage_per_call = u;
  run(first, r, opts(cache));
  CHECK(first.agent_calls.size() == 2);
  REQUIRE(cache.asked.size() == 2);
  CHECK(cache.asked[0].find("type agent") != std::string::npos);
  CHECK(cache.asked[0].find("review 0") != std::string::npos);
  CHECK(cache.asked[0].find("model 2:m1") != std::string::npos);
  fake_runner second;
  second.usage_per_call = u;
  const auto two = run(second, r, opts(cache));
  CHECK(second.agent_calls.empty());
  CHECK(two.usage.empty());
  CHECK(two.status == run_status::completed);
}

TEST_CASE("cache: how a recipe is formatted is not content and the field is read with positions", "[cache]") {
  const char* block = R"(name: r
steps:
  - id: a
    command: echo hi
    env:
      A: "1"
      B: "2"
    cache:
      key: [v1]
      max_age: 7d
      scope: recipe
)";
  const char* flow = R"(name: r
# the same step, written otherwise
steps: [{id: a,   command: "echo hi", env: {B: "2", A: "1"}, cache: {scope: recipe, max_age: 604800, key: v1}}]
)";
  auto one = io::load_recipe_text(block, "r.yaml");
  auto two = io::load_recipe_text(flow, "r.yaml");
  REQUIRE(one.value);
  REQUIRE(two.value);
  const auto& c = *one.value->steps[0].cache;
  CHECK(c.max_age == std::chrono::seconds(604800));
  CHECK(c.scope == cache_scope::recipe);
  CHECK(c.key == std::vector<std::string>{"v1"});
  memory_cache unused;
  CHECK(key_of(*one.value, opts(unused)) == key_of(*two.value, opts(unused)));

  auto bad = io::load_recipe_text("name: r\nsteps:\n  - id: a\n    command: x\n    cache: {max_age: 7x, scope: everyone, ttl: 3}\n",
                                  "r.yaml");
  CHECK_FALSE(bad.value);
  std::vector<std::string> messages;
  for (const auto& d : bad.diagnostics) messages.push_back(format_diagnostic(d));
  auto has = [&](std::string_view text) {
    return std::any_of(messages.begin(), messages.end(), [&](const std::string& m) { return m.find(text) != std::string::npos; });
  };
  CHECK(has("r.yaml:5:22: error: 'max_age' must be an age"));
  CHECK(has("scope"));
  CHECK(has("ttl"));
  auto on_loop = io::load_recipe_text("name: r\nsteps:\n  - id: a\n    recipe: other\n    cache: true\n", "r.yaml");
  CHECK_FALSE(on_loop.value);
}

// ---- isolation: the engine's side, with a provider that makes no tree ----

namespace {

class fake_workspaces final : public workspace_provider {
public:
  std::vector<std::string> made, finished_ok, finished_failed;
  std::string refuse;  ///< set: make() fails with it
  boost::asio::awaitable<std::variant<workspace, std::string>> make(isolation_kind kind, std::string instance,
                                                                    std::string working_dir) override {
    if (!refuse.empty()) co_return refuse;
    made.push_back(instance + " in '" + working_dir + "'");
    workspace w;
    w.root = "/trees/" + instance;
    w.dir = w.root + (working_dir.empty() ? "" : "/" + working_dir);
    w.branch = kind == isolation_kind::worktree ? "arun/sid/" + instance : "";
    co_return w;
  }
  boost::asio::awaitable<std::vector<std::string>> finish(isolation_kind, workspace w, std::string instance,
                                                          bool succeeded) override {
    (succeeded ? finished_ok : finished_failed).push_back(instance + " " + w.root);
    co_return std::vector<std::string>{};
  }
};

}  // namespace

TEST_CASE("isolation: each instance runs in its own tree named to its templates and is finished by outcome", "[isolation]") {
  fake_workspaces trees;
  step s;
  s.id = "fix";
  s.command = "out:{{item}} at {{step.worktree}} on {{step.branch}}";
  s.working_dir = "sub";
  s.isolation = isolation_kind::worktree;
  s.on_error = on_error_policy::continue_run;
  s.output = "fix";
  auto loop = fan_out(s, 2);
  step failing;
  failing.id = "bad";
  failing.command = "fail:2";
  failing.isolation = isolation_kind::copy;
  failing.on_error = on_error_policy::continue_run;
  run_options o;
  o.session_id = "sid";
  o.working_dir = "/project";
  o.workspaces = &trees;
  fake_runner runner;
  const auto result = run(runner, make({loop, failing}), std::move(o));
  REQUIRE(runner.calls.size() == 3);
  CHECK(runner.calls[0].working_dir == "/trees/fix[0]/sub");
  CHECK(trees.made.size() == 3);
  CHECK(trees.made[0] == "fix[0] in 'sub'");
  CHECK(result.step_results[0].output.as_array()[0] == "0 at /trees/fix[0] on arun/sid/fix[0]");
  CHECK(trees.finished_ok.size() == 2);
  REQUIRE(trees.finished_failed.size() == 1);
  CHECK(trees.finished_failed[0] == "bad /trees/bad");
  const auto& bad = result.step_results[1];
  CHECK(bad.worktree == "/trees/bad");
  CHECK(bad.branch.empty());
  CHECK(bad.error.find("copy kept: /trees/bad") != std::string::npos);
}

TEST_CASE("isolation: a tree that cannot be made fails the instance before it starts and no session means no tree", "[isolation]") {
  fake_workspaces trees;
  trees.refuse = "worktree: /x is not in a git checkout";
  step s;
  s.id = "a";
  s.command = "out:hi";
  s.isolation = isolation_kind::worktree;
  run_options o;
  o.workspaces = &trees;
  fake_runner runner;
  const auto refused = run(runner, make({s}), std::move(o));
  CHECK(runner.calls.empty());
  CHECK(refused.step_results[0].status == step_status::failed);
  CHECK(refused.step_results[0].error.find("isolation: worktree: /x is not in a git checkout") != std::string::npos);
  fake_runner none;
  const auto without = run(none, make({s}), run_options{});
  CHECK(none.calls.empty());
  CHECK(without.step_results[0].error.find("keeps no session") != std::string::npos);
}
