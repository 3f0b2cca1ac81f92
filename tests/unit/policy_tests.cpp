#include <catch2/catch.hpp>

#include "policy/json_extract.hpp"
#include "policy/retry.hpp"
#include "policy/tag_filter.hpp"

#include <arun/value_format.hpp>

#include <boost/json/parse.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

using arun::backoff_kind;
using arun::retry_policy;
using arun::retry_trigger;
using arun::engine::attempt_failure;
using namespace std::chrono_literals;

namespace {

retry_policy make_policy(backoff_kind kind, double initial, double max_delay, double jitter = 0.0) {
  retry_policy p;
  p.backoff = kind;
  p.initial_delay = initial;
  p.max_delay = max_delay;
  p.jitter = jitter;
  return p;
}

attempt_failure exited(int code) {
  attempt_failure f;
  f.exit_code = code;
  return f;
}

attempt_failure timed_out() {
  attempt_failure f;
  f.timed_out = true;
  return f;
}

attempt_failure rate_limited(int code) {
  attempt_failure f = exited(code);
  f.rate_limited = true;
  return f;
}

attempt_failure cancelled() {
  attempt_failure f;
  f.cancelled = true;
  return f;
}

std::chrono::nanoseconds secs(double s) { return arun::engine::to_nanoseconds(s); }

}  // namespace

TEST_CASE("retry_delay follows each backoff kind and stops at the cap", "[policy]") {
  struct row {
    backoff_kind kind;
    std::vector<double> expected;  // seconds after attempts 1, 2, ...
  };
  const std::vector<row> table = {
      {backoff_kind::exponential, {2, 4, 8, 16, 30, 30, 30}},
      {backoff_kind::linear, {2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 30}},
      {backoff_kind::constant, {2, 2, 2, 2, 2}},
  };
  for (const auto& r : table) {
    const auto p = make_policy(r.kind, 2.0, 30.0);
    for (std::size_t i = 0; i < r.expected.size(); ++i) {
      INFO("backoff " << static_cast<int>(r.kind) << ", attempt " << i + 1);
      CHECK(arun::engine::retry_delay(p, static_cast<int>(i) + 1, 0.5) == secs(r.expected[i]));
    }
  }
}

TEST_CASE("retry_delay keeps fractions of a second and caps below the initial delay", "[policy]") {
  CHECK(arun::engine::retry_delay(make_policy(backoff_kind::exponential, 0.25, 300), 3, 0) == 1s);
  CHECK(arun::engine::retry_delay(make_policy(backoff_kind::constant, 0.1, 300), 1, 0) == 100ms);
  CHECK(arun::engine::retry_delay(make_policy(backoff_kind::exponential, 10, 3), 1, 0) == 3s);
  CHECK(arun::engine::retry_delay(make_policy(backoff_kind::exponential, 5, 0), 4, 0) == 0s);
  CHECK(arun::engine::retry_delay(retry_policy{}, 1, 0) == 5s);  // the defaults of docs/reference/recipe.md, "retry"
}

TEST_CASE("retry_delay jitter stays within its band", "[policy]") {
  struct row {
    double jitter, unit_random, low, high;  // seconds, for an undelayed 8 s
  };
  const std::vector<row> table = {
      {0.0, 0.0, 8, 8},        {0.0, 0.999, 8, 8},       // none
      {1.0, 0.0, 0, 0},        {1.0, 0.999, 7.99, 8},    // full: [0, d]
      {0.25, 0.0, 6, 6},       {0.25, 0.999, 7.99, 8},   // a fraction: [d·0.75, d]
      {0.5, 0.5, 6, 6},        {1.0, 0.5, 4, 4},
      {1.0, -3.0, 0, 0},       {1.0, 7.0, 8, 8},         // unit_random out of range: clamped
      {2.0, 0.0, 0, 0},        {-1.0, 0.0, 8, 8},        // jitter out of range: clamped
      {std::nan(""), 0.0, 8, 8}, {1.0, std::nan(""), 0, 0},
  };
  const auto to_s = [](std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); };
  for (const auto& r : table) {
    INFO("jitter " << r.jitter << ", unit_random " << r.unit_random);
    const auto d = to_s(arun::engine::retry_delay(make_policy(backoff_kind::exponential, 1, 300, r.jitter), 4, r.unit_random));
    CHECK(d >= r.low - 1e-9);
    CHECK(d <= r.high + 1e-9);
  }
}

TEST_CASE("retry_delay saturates at the cap instead of overflowing", "[policy]") {
  constexpr double inf = std::numeric_limits<double>::infinity();
  struct row {
    backoff_kind kind;
    double initial, max_delay;
    int attempt;
    std::chrono::nanoseconds expected;
  };
  const std::vector<row> table = {
      {backoff_kind::exponential, 5, 300, 10'000, 300s},
      {backoff_kind::exponential, 5, 300, std::numeric_limits<int>::max(), 300s},
      {backoff_kind::linear, 5, 300, std::numeric_limits<int>::max(), 300s},
      {backoff_kind::exponential, 1e300, 300, 10'000, 300s},
      {backoff_kind::linear, 1e300, 300, 10'000, 300s},
      {backoff_kind::constant, 1e300, 300, 1, 300s},
      {backoff_kind::exponential, 1e300, 1e300, 10'000, std::chrono::nanoseconds::max()},
      {backoff_kind::exponential, 5, inf, 10'000, std::chrono::nanoseconds::max()},
      {backoff_kind::exponential, inf, 60, 1, 60s},
      {backoff_kind::exponential, 0, 300, 10'000, 0s},
      {backoff_kind::exponential, -5, 300, 2, 0s},
      {backoff_kind::exponential, std::nan(""), 300, 2, 0s},
      {backoff_kind::exponential, 5, -1, 2, 0s},
      {backoff_kind::exponential, 5, std::nan(""), 2, 0s},
      {backoff_kind::exponential, 5, 300, 0, 5s},  // attempts below 1 count as 1
      {backoff_kind::linear, 5, 300, -7, 5s},
  };
  for (const auto& r : table) {
    INFO("initial " << r.initial << ", max " << r.max_delay << ", attempt " << r.attempt);
    for (double u : {0.0, 0.999}) {
      const auto d = arun::engine::retry_delay(make_policy(r.kind, r.initial, r.max_delay), r.attempt, u);
      CHECK(d == r.expected);
      CHECK(arun::engine::retry_delay(make_policy(r.kind, r.initial, r.max_delay, 1.0), r.attempt, u) >= 0s);
    }
  }
  // Full jitter over an unbounded delay is still a delay, not inf × 0.
  CHECK(arun::engine::retry_delay(make_policy(backoff_kind::exponential, 5, inf, 1.0), 10'000, 0.5) > 24h);
}

TEST_CASE("seconds convert to nanoseconds without undefined behaviour", "[policy]") {
  using arun::engine::to_nanoseconds;
  CHECK(to_nanoseconds(1.5) == 1500ms);
  CHECK(to_nanoseconds(0.3) == 300ms);
  CHECK(to_nanoseconds(1e-9) == 1ns);
  CHECK(to_nanoseconds(0) == 0ns);
  CHECK(to_nanoseconds(-2) == 0ns);
  CHECK(to_nanoseconds(std::nan("")) == 0ns);
  CHECK(to_nanoseconds(1e10) == std::chrono::nanoseconds::max());
  CHECK(to_nanoseconds(std::numeric_limits<double>::infinity()) == std::chrono::nanoseconds::max());
  CHECK(to_nanoseconds(9.2e9) == std::chrono::nanoseconds(9'200'000'000'000'000'000));
}

TEST_CASE("should_retry matches each retry.on entry", "[policy]") {
  using entries = std::vector<arun::retry_on_entry>;
  const entries failure{retry_trigger::failure}, timeout{retry_trigger::timeout},
      rate_limit{retry_trigger::rate_limit}, code_2{2}, code_0{0};
  const entries defaults = retry_policy{}.on;
  struct row {
    const char* what;
    entries on;
    attempt_failure f;
    bool expected;
  };
  const std::vector<row> table = {
      {"failure: non-zero exit", failure, exited(1), true},
      {"failure: spawn failure, no exit code", failure, attempt_failure{}, true},
      {"failure: rate limit", failure, rate_limited(1), true},
      {"failure: not a timeout", failure, timed_out(), false},
      {"timeout: timeout", timeout, timed_out(), true},
      {"timeout: non-zero exit", timeout, exited(1), false},
      {"rate_limit: rate limit", rate_limit, rate_limited(1), true},
      {"rate_limit: plain failure", rate_limit, exited(1), false},
      {"rate_limit: timeout", rate_limit, timed_out(), false},
      {"2: exit 2", code_2, exited(2), true},
      {"2: exit 3", code_2, exited(3), false},
      {"2: no exit code", code_2, attempt_failure{}, false},
      {"2: rate limited with exit 2", code_2, rate_limited(2), true},
      {"0: exit 0 (a failure of another kind)", code_0, exited(0), true},
      {"no entries", entries{}, exited(1), false},
      {"defaults: exit", defaults, exited(1), true},
      {"defaults: timeout", defaults, timed_out(), true},
      {"mixed list: timeout or 7, exit 7", entries{retry_trigger::timeout, 7}, exited(7), true},
      {"mixed list: timeout or 7, exit 8", entries{retry_trigger::timeout, 7}, exited(8), false},
  };
  for (const auto& r : table) {
    INFO(r.what);
    retry_policy p;
    p.on = r.on;
    CHECK(arun::engine::should_retry(p, r.f, 1) == r.expected);
  }
}

TEST_CASE("should_retry treats a timed-out exit status as a timeout, not an exit code", "[policy]") {
  retry_policy p;
  p.on = {143};
  attempt_failure f = timed_out();
  f.exit_code = 143;
  CHECK_FALSE(arun::engine::should_retry(p, f, 1));
  p.on = {retry_trigger::timeout};
  CHECK(arun::engine::should_retry(p, f, 1));
}

TEST_CASE("should_retry stops at max_attempts, the first attempt included", "[policy]") {
  struct row {
    int max_attempts, attempt;
    bool expected;
  };
  const std::vector<row> table = {
      {3, 1, true}, {3, 2, true}, {3, 3, false}, {3, 4, false}, {1, 1, false},
      {0, 1, false}, {-2, 1, false}, {2, 0, true}, {1, 0, false},
      {std::numeric_limits<int>::max(), 1'000'000, true},
  };
  for (const auto& r : table) {
    INFO("max_attempts " << r.max_attempts << ", attempt " << r.attempt);
    retry_policy p;
    p.max_attempts = r.max_attempts;
    CHECK(arun::engine::should_retry(p, exited(1), r.attempt) == r.expected);
  }
}

TEST_CASE("a cancelled attempt is never retried", "[policy]") {
  retry_policy p;
  p.max_attempts = 10;
  p.on = {retry_trigger::failure, retry_trigger::timeout, retry_trigger::rate_limit, 1};
  CHECK_FALSE(arun::engine::should_retry(p, cancelled(), 1));
  attempt_failure f = rate_limited(1);
  f.timed_out = true;
  f.cancelled = true;
  CHECK_FALSE(arun::engine::should_retry(p, f, 1));
}

TEST_CASE("rate-limit messages are recognised in agent output", "[policy]") {
  struct row {
    const char* output;
    bool expected;
  };
  const std::vector<row> table = {
      {"Error: Rate limit exceeded, try again later", true},
      {"You've hit your rate limit.", true},
      {"HTTP 429", true},
      {"status=429: slow down", true},
      {"429 Too Many Requests", true},
      {"too MANY requests", true},
      {"{\"type\":\"rate_limit_error\"}", true},
      {"RATE-LIMITED", true},
      {"connection refused", false},
      {"listening on port 14291", false},
      {"4290 records", false},
      {"accurate limitations", false},
      {"hit your RateLimit", false},
      {"rate", false},
      {"rate limi", false},
      {"", false},
  };
  for (const auto& r : table) {
    INFO(r.output);
    CHECK(arun::engine::looks_rate_limited(r.output) == r.expected);
  }
}

TEST_CASE("the default rate-limit policy retries rate limits only, doubling from 60 s to 600 s", "[policy]") {
  const auto p = arun::engine::rate_limit_retry_policy();
  CHECK(p.max_attempts == 6);
  CHECK(arun::engine::should_retry(p, rate_limited(1), 5));
  CHECK_FALSE(arun::engine::should_retry(p, rate_limited(1), 6));
  CHECK_FALSE(arun::engine::should_retry(p, exited(1), 1));
  CHECK_FALSE(arun::engine::should_retry(p, timed_out(), 1));
  const std::vector<std::chrono::nanoseconds> expected = {60s, 120s, 240s, 480s, 600s};
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(arun::engine::retry_delay(p, static_cast<int>(i) + 1, 0.3) == expected[i]);
  CHECK(arun::engine::rate_limit_retry_policy(0, 1, 1).max_attempts == 1);
  CHECK(arun::engine::rate_limit_retry_policy(-4, 1, 1).max_attempts == 1);
  CHECK(arun::engine::rate_limit_retry_policy(std::numeric_limits<int>::max(), 1, 1).max_attempts ==
        std::numeric_limits<int>::max());
  // rate_limiting.backoff.multiplier: 1 s × 3^n, capped.
  const auto tripled = arun::engine::rate_limit_retry_policy(5, 1, 20, 3);
  CHECK(arun::engine::retry_delay(tripled, 1, 0) == 1s);
  CHECK(arun::engine::retry_delay(tripled, 2, 0) == 3s);
  CHECK(arun::engine::retry_delay(tripled, 3, 0) == 9s);
  CHECK(arun::engine::retry_delay(tripled, 4, 0) == 20s);
  CHECK(arun::engine::retry_delay(tripled, 100000, 0) == 20s);
}

TEST_CASE("tag filtering follows include and exclude lists", "[policy]") {
  using tags = std::vector<std::string>;
  struct row {
    const char* what;
    tags when, include, exclude;
    bool expected;
    const char* reason;  // null when the step runs
  };
  const std::vector<row> table = {
      {"untagged, no filters", {}, {}, {}, true, nullptr},
      {"untagged, include given", {}, {"fast"}, {}, true, nullptr},
      {"untagged, exclude given", {}, {}, {"slow"}, true, nullptr},
      {"tagged, no filters", {"slow"}, {}, {}, true, nullptr},
      {"excluded", {"slow"}, {}, {"slow"}, false, "tag 'slow' is excluded"},
      {"one of several excluded", {"a", "slow"}, {}, {"x", "slow"}, false, "tag 'slow' is excluded"},
      {"first excluded is named", {"b", "a"}, {}, {"a", "b"}, false, "tag 'b' is excluded"},
      {"exclude wins over include", {"slow"}, {"slow"}, {"slow"}, false, "tag 'slow' is excluded"},
      {"included", {"fast"}, {"fast"}, {}, true, nullptr},
      {"one of several included", {"a", "fast"}, {"x", "fast"}, {}, true, nullptr},
      {"none included", {"a", "b"}, {"fast"}, {}, false, "none of its tags (a, b) is included"},
      {"case-sensitive", {"Fast"}, {"fast"}, {}, false, "none of its tags (Fast) is included"},
      {"not excluded, nothing to include", {"a"}, {}, {"b"}, true, nullptr},
      {"included and another excluded", {"a", "b"}, {"a"}, {"b"}, false, "tag 'b' is excluded"},
  };
  for (const auto& r : table) {
    INFO(r.what);
    CHECK(arun::engine::tags_allow(r.when, r.include, r.exclude) == r.expected);
    const auto reason = arun::engine::tag_skip_reason(r.when, r.include, r.exclude);
    if (r.reason) {
      REQUIRE(reason);
      CHECK(*reason == r.reason);
    } else {
      CHECK_FALSE(reason);
    }
  }
}

TEST_CASE("extract_json finds the JSON in a reply", "[policy]") {
  struct row {
    const char* what;
    std::string text;
    const char* expected;  // JSON text, or null when nothing is found
  };
  const std::vector<row> table = {
      {"whole text", "  {\"a\": [1, 2]}\n", R"({"a":[1,2]})"},
      {"whole text scalar", "5\n", "5"},
      {"whole text string", "\"hi\"", R"("hi")"},
      {"fenced json", "Here you go:\n```json\n{\"ok\": true}\n```\nDone.", R"({"ok":true})"},
      {"fenced JSON upper case", "```JSON\n[1]\n```", "[1]"},
      {"bare fence", "Result:\n```\n[1, 2, 3]\n```\n", "[1,2,3]"},
      {"bare fence scalar", "```\n42\n```", "42"},
      {"other language skipped", "```python\n[1, 2]\n```\n```json\n{\"b\": 2}\n```", R"({"b":2})"},
      {"bad fence, then a good one", "```json\n{oops\n```\n```\n{\"c\": 3}\n```", R"({"c":3})"},
      {"fence before prose brackets", "see [note]\n```json\n{\"f\": 1}\n```", R"({"f":1})"},
      {"unclosed fence falls back to brackets", "```json\n{\"u\": 1}\n", R"({"u":1})"},
      {"embedded object in prose", "Sure! The answer is {\"x\": 1} as requested.", R"({"x":1})"},
      {"embedded array in prose", "Values: [1, {\"y\": [2]}] -- end", R"([1,{"y":[2]}])"},
      {"brackets inside strings", R"(Out: {"s": "a } ] { [ b", "t": "q\"}"} trailing)",
       R"({"s":"a } ] { [ b","t":"q\"}"})"},
      {"escaped backslash before a quote", R"(x {"p": "C:\\", "q": 1} y)", R"({"p":"C:\\","q":1})"},
      {"nested", "prefix {\"a\": {\"b\": [{\"c\": [[]]}]}} suffix", R"({"a":{"b":[{"c":[[]]}]}})"},
      {"invalid then valid later", "first {not json} then [also bad} and {\"ok\": 1} end", R"({"ok":1})"},
      {"unbalanced then valid inside", "{ broken {\"in\": 2}", R"({"in":2})"},
      {"the last of two top-level values", "{\"a\":1} and {\"b\":2}", R"({"b":2})"},
      {"an empty value in prose does not hide the answer", "config = {} by default.\n[\"a\",\"b\"]", R"(["a","b"])"},
      {"a non-empty value wins over a later empty one", "[\"a\"] and then {}", R"(["a"])"},
      {"only empty values: the last", "{} and []", "[]"},
      {"a nested value is not top-level", "result: {\"x\": {\"y\": 1}} done", R"({"x":{"y":1}})"},
      {"nothing found", "no json here at all", nullptr},
      {"empty", "", nullptr},
      {"only whitespace", " \n\t", nullptr},
      {"only bad brackets", "[citation needed] {x}", nullptr},
  };
  for (const auto& r : table) {
    INFO(r.what);
    const auto v = arun::engine::extract_json(r.text);
    if (r.expected) {
      REQUIRE(v);
      CHECK(*v == boost::json::parse(r.expected));
    } else {
      CHECK_FALSE(v);
    }
  }
}

TEST_CASE("extract_json accepts nesting up to 256 levels", "[policy]") {
  // Boost's default max_depth of 32 would refuse these.
  CHECK(arun::engine::extract_json(std::string(256, '[') + std::string(256, ']')));
  CHECK(arun::engine::extract_json("reply: " + std::string(200, '[') + std::string(200, ']') + " ok"));
  // 400 deep: every span among the 64 candidates is deeper than 256.
  CHECK_FALSE(arun::engine::extract_json(std::string(400, '[') + std::string(400, ']')));
}

TEST_CASE("extract_json returns on adversarial 100 KB input", "[policy]") {
  constexpr std::size_t size = 100 * 1024;
  std::string brackets(size, '[');
  CHECK_FALSE(arun::engine::extract_json(brackets));
  std::string braces;
  while (braces.size() < size) braces += "{\"";
  CHECK_FALSE(arun::engine::extract_json(braces));
  std::string fences;
  while (fences.size() < size) fences += "```\n[\n";
  CHECK_FALSE(arun::engine::extract_json(fences));
  std::string balanced_deep = std::string(size / 2, '[') + std::string(size / 2, ']');
  CHECK_FALSE(arun::engine::extract_json(balanced_deep));
  // A valid value after the candidate budget is not found: the bound is deliberate.
  std::string many = std::string(100, '[') + " {\"late\": 1}";
  CHECK_FALSE(arun::engine::extract_json(many));
}

TEST_CASE("extract_json keeps numbers exact: beyond a double, the number's text", "[policy]") {
  const auto v = arun::engine::extract_json("The answer:\n```json\n{\"id\": 123456789012345678901234567890, \"x\": 1e400, "
                                            "\"t\": 1795664842.1989675}\n```");
  REQUIRE(v);
  CHECK(v->at("id") == "123456789012345678901234567890");
  CHECK(v->at("x") == "1e400");
  CHECK(arun::format_number(v->at("t").as_double()) == "1795664842.1989675");
}
