// Loading and validating recipes: what loads, and the exact diagnostic for what does not.
#include <catch2/catch.hpp>

#include "output/diagnostic_render.hpp"
#include "recipe/recipe_loader.hpp"
#include "test_paths.hpp"

#include <arun/validation.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace io = arun::io;
using arun::severity;
using arun::io::load_recipe_text;

namespace {

// Load + validate, as `arun validate` does; every diagnostic formatted.
std::vector<std::string> check(const std::string& text, arun::validation_options options = {}) {
  auto r = load_recipe_text(text, "r.yaml");
  auto ds = std::move(r.diagnostics);
  if (r.value) {
    auto more = arun::validate_recipe(*r.value, options);
    ds.insert(ds.end(), more.begin(), more.end());
  }
  std::vector<std::string> out;
  for (const auto& d : ds) out.push_back(format_diagnostic(d));
  return out;
}

std::string first_error(const std::string& text) {
  for (const auto& d : check(text))
    if (d.find(": error: ") != std::string::npos) return d;
  return "<no error>";
}

std::string first_warning(const std::string& text) {
  for (const auto& d : check(text))
    if (d.find(": warning: ") != std::string::npos) return d;
  return "<no warning>";
}

const std::string head = "name: x\nsteps:\n";

// The one file a test recipe is, for the renderer.
struct text_source final : io::recipe_sources {
  std::string text;
  explicit text_source(std::string t) : text(std::move(t)) {}
  std::optional<std::string> saved(const std::string&) override { return text; }
  void read(const std::string&, std::string_view) override {}
};

// The first error of `text` as `arun validate` shows it (no colour).
std::string rendered_first_error(const std::string& text) {
  auto r = load_recipe_text(text, "r.yaml");
  auto ds = std::move(r.diagnostics);
  if (r.value) {
    auto more = arun::validate_recipe(*r.value);
    ds.insert(ds.end(), more.begin(), more.end());
  }
  for (const auto& d : ds)
    if (d.level == arun::severity::error) {
      text_source source(text);
      io::source_files files(&source);
      std::vector<arun::diagnostic> one = {d};
      io::point_at_snippets(one, files);
      return io::render_diagnostic(one.front(), files.text("r.yaml"), false);
    }
  return "<no error>\n";
}

// Compares `blocks` with a golden file of blocks ("=== N" lines between them). With
// ARUN_UPDATE_GOLDEN=1 the file is written instead, to be reviewed in the diff.
void check_golden(const std::string& name, const std::vector<std::string>& blocks) {
  const auto path = std::string(ARUN_SOURCE_DIR) + "/tests/data/diagnostics/" + name;
  std::string expected_text;
  for (std::size_t i = 0; i < blocks.size(); ++i) expected_text += "=== " + std::to_string(i + 1) + "\n" + blocks[i];
  if (const char* update = std::getenv("ARUN_UPDATE_GOLDEN"); update && std::string_view(update) == "1") {
    std::ofstream(path, std::ios::binary) << expected_text;
    WARN("wrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::string golden{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  REQUIRE_FALSE(golden.empty());
  std::vector<std::string> want;
  for (std::size_t at = 0; at < golden.size();) {
    const auto body = golden.find('\n', at) + 1;
    const auto next = golden.find("\n=== ", body);
    want.push_back(golden.substr(body, next == std::string::npos ? std::string::npos : next + 1 - body));
    at = next == std::string::npos ? golden.size() : next + 1;
  }
  REQUIRE(want.size() == blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    INFO("block " << i + 1 << " of " << name);
    CHECK(blocks[i] == want[i]);
  }
}

}  // namespace

TEST_CASE("a bash recipe loads with every common field and alias") {
  const auto r = load_recipe_text(R"(name: demo
description: two steps
version: 2.1.0
author: someone
tags: [a, b]
context:
  greeting: hello
default_step_timeout: 60
output: first
steps:
  - id: one
    command: echo one
    output: first
    timeout: 2.5
    working_dir: sub
    env:
      A: 1
      B: text
    retry: {max_attempts: 4, backoff: linear, initial_delay: 0.5, max_delay: 2, jitter: 0.3, on: [failure, 7]}
    nonfatal: true
    when_tags: "fast, unit"
    depends_on: two
    output_exit_code: rc
  - id: two
    type: bash
    cwd: other
    command: |
      echo two
    parallel_group: g
    parse_json: true
)",
                                  "r.yaml");
  REQUIRE(r.value);
  CHECK(r.diagnostics.empty());
  const auto& rec = *r.value;
  CHECK(rec.version == "2.1.0");
  CHECK(rec.tags == std::vector<std::string>{"a", "b"});
  CHECK(rec.output == "first");
  CHECK(rec.default_step_timeout->count() == 60);
  const auto& one = rec.steps[0];
  CHECK(one.timeout->count() == 2.5);
  CHECK(one.env == std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "text"}});
  REQUIRE(one.retry);
  CHECK(one.retry->max_attempts == 4);
  CHECK(one.retry->backoff == arun::backoff_kind::linear);
  CHECK(one.retry->jitter == 0.3);
  CHECK(one.retry->on.size() == 2);
  CHECK(one.on_error == arun::on_error_policy::continue_run);
  CHECK(one.when_tags == std::vector<std::string>{"fast", "unit"});
  CHECK(one.depends_on == std::vector<std::string>{"two"});
  CHECK(one.output_exit_code == "rc");
  CHECK(one.where.line == 11);
  CHECK(one.at("timeout").line == 14);
  CHECK(rec.steps[1].working_dir == "other");
  CHECK(rec.steps[1].parallel_group == "g");
  CHECK(rec.steps[1].parse_json);
}

TEST_CASE("types are inferred as docs/reference/recipe.md says") {
  const auto r = load_recipe_text(R"(name: types
steps:
  - id: a
    agent: "ns:architect"
    prompt: design it
    mode: ANALYZE
  - id: p
    prompt: no agent named
  - id: r
    recipe: child
    sub_context: {x: 1}
    recursion: {max_depth: 2}
  - id: loop
    foreach: "{{items}}"
    as: f
    parallel: true
    collect: results
    steps:
      - id: inner
        command: echo {{f}}
  - id: w
    while_condition: "{{n}} < 3"
    max_while_iterations: 5
    update_context: {n: 1}
    steps:
      - id: body
        command: echo
  - id: gate
    requires_approval: true
    approval_prompt: go?
    approval_default: approve
  - id: each
    command: echo {{item}}
    foreach: [1, 2, 3]
    max_concurrent: 2
context:
  items: [1, 2]
  n: 0
)",
                                  "r.yaml");
  REQUIRE(r.value);
  const auto& s = r.value->steps;
  CHECK(s[0].type == arun::step_type::agent);
  CHECK(s[0].agent.agent == "ns:architect");
  CHECK(s[0].agent.mode == "ANALYZE");
  CHECK(s[1].type == arun::step_type::agent);
  CHECK(s[2].type == arun::step_type::recipe);
  CHECK(s[2].call.context.at("x") == 1);
  CHECK(s[2].call.max_depth == 2);
  CHECK(s[3].type == arun::step_type::loop);
  CHECK(s[3].foreach->as == "f");
  CHECK(s[3].foreach->max_concurrent == 0);
  CHECK(s[3].steps.at(0).id == "inner");
  CHECK(s[4].loop_while->max_iterations == 5);
  CHECK(s[5].type == arun::step_type::gate);
  CHECK(s[5].approval.default_decision == arun::approval_decision::approve);
  CHECK(s[6].type == arun::step_type::bash);
  CHECK(s[6].foreach->max_concurrent == 2);
  CHECK(s[6].foreach->items.as_array().size() == 3);
  CHECK(check(R"(name: t
context: {items: [1], n: 0}
steps:
  - id: loop
    foreach: "{{items}}"
    as: f
    steps:
      - id: inner
        command: echo {{f}} {{_loop_index}}
)").empty());
}

TEST_CASE("stages load with approvals and aliases") {
  const auto r = load_recipe_text(R"(name: staged
stages:
  - name: plan
    approval: {required: true, prompt: "ok?", timeout: 60, default: approve, when: after}
    steps:
      - id: a
        command: echo a
  - name: build
    approval_required: true
    approval_message: build now?
    condition: "true"
    steps:
      - id: b
        command: echo b
)",
                                  "r.yaml");
  REQUIRE(r.value);
  REQUIRE(r.value->stages.size() == 2);
  CHECK(r.value->stages[0].approval.when == arun::gate_timing::after);
  CHECK(*r.value->stages[0].approval.timeout == 60);
  CHECK(r.value->stages[1].approval.required);
  CHECK(r.value->stages[1].approval.prompt == "build now?");
}

TEST_CASE("every duration field takes seconds or a duration with units") {
  const auto r = load_recipe_text(R"(name: durations
default_step_timeout: 1h30m
rate_limiting:
  backoff: {initial_delay: 90s, max_delay: 10m}
stages:
  - name: s
    approval: {required: true, timeout: 2h}
    steps:
      - id: a
        command: x
        timeout: 5m
        requires_approval: true
        approval_timeout: 500ms
        retry: {initial_delay: 1.5, max_delay: "2m30s"}
        cache: {max_age: 1h30m}
      - id: b
        command: x
        timeout: 45
)",
                                  "r.yaml");
  std::string said;
  for (const auto& d : r.diagnostics) said += format_diagnostic(d) + "\n";
  INFO(said);
  REQUIRE(r.value);
  CHECK(r.diagnostics.empty());
  CHECK(r.value->default_step_timeout->count() == 5400);
  CHECK(*r.value->rate_limiting.backoff.initial_delay == 90);
  CHECK(*r.value->rate_limiting.backoff.max_delay == 600);
  CHECK(*r.value->stages.at(0).approval.timeout == 7200);
  const auto& a = r.value->stages.at(0).steps.at(0);
  CHECK(a.timeout->count() == 300);
  CHECK(*a.approval.timeout == Approx(0.5));
  CHECK(a.retry->initial_delay == 1.5);
  CHECK(a.retry->max_delay == 150);
  CHECK(a.cache->max_age == std::chrono::seconds(5400));
  CHECK(r.value->stages.at(0).steps.at(1).timeout->count() == 45);
}

TEST_CASE("invalid recipes give the exact diagnostic") {
  struct row {
    std::string text;
    std::string expected;  // the first error, formatted
  };
  const std::vector<row> rows = {
      {"steps:\n  - id: a\n    command: x\n", "r.yaml:1:1: error: the recipe needs 'name'"},
      {"name: x\n", "r.yaml:1:1: error: the recipe needs 'steps': a list of steps"},
      {"name: x\nsteps: []\n", "r.yaml:2:8: error: 'steps' must be a non-empty list"},
      {"name: x\nsteps: {a: 1}\n", "r.yaml:2:8: error: 'steps' must be a non-empty list"},
      {head + "  - command: x\n", "r.yaml:3:5: error: every step needs 'id'"},
      {head + "  - id: a\n    shell: echo hi\n",
       "r.yaml:3:5: error: step 'a' has no body: add 'command', 'prompt', 'agent', 'recipe' or 'steps' (a step needs "
       "something to run)"},
      {head + "  - just a string\n",
       "r.yaml:3:5: error: a step must be a mapping with an 'id' and a body (command, prompt, agent, recipe or steps)"},
      {"name: x\nname: y\nsteps:\n  - id: a\n    command: x\n", "r.yaml:2:1: error: duplicate key 'name' in the recipe"},
      {head + "  - id: a\n    command: x\n  - id: a\n    command: y\n",
       "r.yaml:5:9: error: step id 'a' is used twice; ids must be unique (first at line 3)"},
      {head + "  - id: 'a b'\n    command: x\n", "r.yaml:3:9: error: step id 'a b' may only use letters, digits, '_', '.' and '-'"},
      {head + "  - id: a\n    command: x\n    timeout: soon\n",
       "r.yaml:5:14: error: 'timeout' must be a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m (0 or more)"},
      {head + "  - id: a\n    command: x\n    timeout: .inf\n",
       "r.yaml:5:14: error: 'timeout' must be a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m (0 or more)"},
      {head + "  - id: a\n    command: x\n    timeout: 5x\n",
       "r.yaml:5:14: error: 'timeout' must be a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m (0 or more)"},
      {head + "  - id: a\n    command: x\n    timeout: -1\n",
       "r.yaml:5:14: error: 'timeout' must be a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m (0 or more)"},
      {head + "  - id: a\n    type: skill\n    command: x\n",
       "r.yaml:4:11: error: unsupported step type 'skill' (neither older runner supports it: use foreach/while_condition "
       "with nested steps, or an agent step)"},
      {head + "  - id: a\n    type: shell\n    command: x\n",
       "r.yaml:4:11: error: unsupported step type 'shell' (expected bash, agent or recipe)"},
      {head + "  - id: a\n    command: x\n    env: [a]\n", "r.yaml:5:10: error: 'env' must be a mapping of variable names to values"},
      {head + "  - id: a\n    command: x\n    env: {1A: x}\n", "r.yaml:5:11: error: '1A' is not a valid environment variable name"},
      {head + "  - id: a\n    command: x\n    prompt: y\n    type: bash\n",
       "r.yaml:5:13: error: 'prompt' belongs to agent steps, not to this bash step"},
      {head + "  - id: a\n    agent: ns:x\n    prompt: p\n    command: y\n",
       "r.yaml:6:14: error: 'command' belongs to bash steps, not to this agent step"},
      {head + "  - id: a\n    agent: ns:x\n", "r.yaml:3:5: error: agent step 'a' needs a 'prompt'"},
      {head + "  - id: a\n    command: x\n    on_error: ignore\n",
       "r.yaml:5:15: error: 'on_error' must be one of fail, continue, skip_remaining, not 'ignore'"},
      {head + "  - id: a\n    command: x\n    on_error: fail\n    continue_on_error: true\n",
       "r.yaml:5:15: error: 'on_error' contradicts continue_on_error/nonfatal/fatal on the same step"},
      {head + "  - id: a\n    command: x\n    retry: 3\n",
       "r.yaml:5:12: error: 'retry' must be a mapping (max_attempts, backoff, initial_delay, max_delay, jitter, on)"},
      {head + "  - id: a\n    command: x\n    retry: {max_attempts: 0}\n",
       "r.yaml:5:27: error: 'max_attempts' must be a whole number from 1 to 1000"},
      {head + "  - id: a\n    command: x\n    retry: {backoff: quadratic}\n",
       "r.yaml:5:22: error: 'backoff' must be one of exponential, linear, constant, not 'quadratic'"},
      {head + "  - id: a\n    command: x\n    retry: {jitter: 2}\n",
       "r.yaml:5:21: error: 'jitter' must be true, false or a fraction from 0 to 1"},
      {head + "  - id: a\n    command: x\n    retry: {on: [failure, crash]}\n",
       "r.yaml:5:27: error: retry 'on' entries are failure, timeout, rate_limit or an exit code"},
      {head + "  - id: a\n    command: x\n    depends_on: [ghost]\n",
       "r.yaml:5:17: error: step 'a' depends on 'ghost', which no step has as id"},
      {head + "  - id: a\n    command: x\n    depends_on: b\n  - id: b\n    command: y\n    depends_on: [a]\n",
       "r.yaml:8:17: error: depends_on forms a cycle: a -> b -> a"},
      {head + "  - id: a\n    command: echo {{ghost}}\n",
       "r.yaml:4:14: error: undefined variable 'ghost' in {{ghost}} of step 'a' (defined: recipe, session, stage, "
       "step) (declare it in context, or pass --set ghost=...)"},
      // An agent step's model, mode and agent are templates too: checked before the run.
      {head + "  - id: a\n    prompt: hi\n    model: \"{{nope}}\"\n",
       "r.yaml:5:12: error: undefined variable 'nope' in {{nope}} of step 'a' (defined: NONINTERACTIVE, recipe, "
       "session, stage, step, working_directory) (declare it in context, or pass --set nope=...)"},
      {"name: x\ncontext:\n  mode: q\nsteps:\n  - id: a\n    command: x\n    condition: modee == 'q'\n",
       "r.yaml:7:16: error: undefined name 'modee' in the condition of step 'a': it is null at run time (did you mean "
       "'mode'?)"},
      // YAML traps get a help line in recipe words.
      {head + "  - id: a\n    command: {{x}}\n",
       "r.yaml:4:14: error: 'command' must be a string (YAML reads an unquoted {{...}} as a mapping: quote the whole "
       "value, e.g. \"{{name}}\")"},
      {head + "  - id: a\n    command: echo\n    env:\n      A: {{x}}\n",
       "r.yaml:6:10: error: the value of env 'A' must be a scalar (YAML reads an unquoted {{...}} as a mapping: quote "
       "the whole value, e.g. \"{{name}}\")"},
      {head + "  - id: a\n    command: echo key: value\n",
       "r.yaml:4:22: error: invalid YAML: illegal map value (a plain value cannot contain ': ' — write it as a block "
       "(`key: |` and the text indented on the next lines) or quote it)"},
      {head + "\t- id: a\n\t  command: echo\n",
       "r.yaml:3:2: error: invalid YAML: illegal block entry (YAML does not allow tabs in indentation: indent with "
       "spaces)"},
      {head + "  - id: a\n     command: echo\n",
       "r.yaml:4:13: error: invalid YAML: illegal map value (this line's key starts at column 6; the keys of its "
       "mapping ('id' above) start at column 5)"},
      {head + "  - id: a\n    command: echo\n   output: x\n",
       "r.yaml:5:4: error: invalid YAML: end of sequence not found (this line's key starts at column 4; the keys of "
       "its mapping ('command' above) start at column 5)"},
      {head + "  - id: a\n    command: x\n    as: f\n", "r.yaml:5:9: error: 'as' needs 'foreach' on the same step"},
      {head + "  - id: a\n    command: x\n    break_when: 'true'\n",
       "r.yaml:5:17: error: 'break_when' needs 'while_condition' on the same step"},
      {head + "  - id: a\n    steps:\n      - id: b\n        command: x\n",
       "r.yaml:5:7: error: nested 'steps' need 'foreach' or 'while_condition' on the same step"},
      {head + "  - id: a\n    foreach: 5\n    command: x\n",
       "r.yaml:4:14: error: 'foreach' must be a list, a template such as \"{{files}}\", or {lines: TEXT} for the lines of a text"},
      {head + "  - id: a\n    foreach: [1]\n    while_condition: 'true'\n    command: x\n",
       "r.yaml:5:22: error: a step loops with 'foreach' or 'while_condition', not both"},
      {head + "  - id: a\n    command: x\n    working_dir: a\n    cwd: b\n",
       "r.yaml:6:10: error: give 'working_dir' or its alias 'cwd', not both"},
      {head + "  - id: a\n    command: x\n    foreach: [1]\n    requires_approval: true\n",
       "r.yaml:6:24: error: loop step 'a' has requires_approval: it is unclear whether to ask once or per item (to ask "
       "once, put a gate step before the loop; to ask per item, give the loop a steps: body with a gate step or a step "
       "with requires_approval)"},
      {head + "  - id: a\n    command: x\n    parse_json: maybe\n", "r.yaml:5:17: error: 'parse_json' must be true or false"},
      {head + "  - id: a\n    prompt: x\n    spawn_mode: inline\n",
       "r.yaml:5:17: error: 'spawn_mode' must be 'subprocess' or omitted, got 'inline'"},
      {head + "  - id: a\n    command: x\n    spawn_mode: subprocess\n",
       "r.yaml:5:17: error: 'spawn_mode' belongs to agent steps, not to this bash step"},
      {"name: x\nsteps:\n  - id: a\n    command: x\nstages:\n  - name: s\n    steps: []\n",
       "r.yaml:1:1: error: give 'steps' or 'stages', not both"},
      {"name: x\nstages:\n  - name: s\n    auto_approve_if: 'true'\n    steps:\n      - id: a\n        command: x\n",
       "r.yaml:4:5: error: 'auto_approve_if' is not supported: approve with --yes, `arun approve`, or a timeout default"},
      {"name: x\nstages:\n  - name: s\n", "r.yaml:3:5: error: stage 's' needs 'steps': a non-empty list"},
      {"name: x\nexecution: parallel\nsteps:\n  - id: a\n    command: x\n",
       "r.yaml:2:12: error: 'execution' must be one of sequential, dag, not 'parallel'"},
      {"name: x\nrecursion: {max_depth: 0}\nsteps:\n  - id: a\n    command: x\n",
       "r.yaml:2:24: error: 'max_depth' must be a whole number from 1 to 1000"},
      {"name: x\ncontext: [1]\nsteps:\n  - id: a\n    command: x\n", "r.yaml:2:10: error: 'context' must be a mapping"},
      {"name: x\nsteps:\n  - id: a\n    command: [unclosed\n", "r.yaml:5:1: error: invalid YAML: end of sequence flow not found"},
      {"- a\n- b\n", "r.yaml:1:1: error: a recipe must be a mapping with 'name' and 'steps'"},
      {"", "r.yaml: error: a recipe must be a mapping with 'name' and 'steps'"},  // no place to point at
      {"# only a comment\n", "r.yaml: error: a recipe must be a mapping with 'name' and 'steps'"},
      {"name: x\ncontext:\n  a: 1\n  b: {c: 1, c: 2}\n  a: 3\nsteps:\n  - id: s\n    command: x\n",
       "r.yaml:4:13: error: duplicate key 'c' in 'context'"},
      {head + "  - id: a\n    command: x\n    env: {A: 1, A: 2}\n", "r.yaml:5:17: error: duplicate key 'A' in 'env'"},
      {head + "  - id: a\n    agent: \"ns:../etc\"\n    prompt: p\n",
       "r.yaml:4:12: error: agent reference 'ns:../etc' of step 'a' must be name, ns:name or ns:cat:name (letters, "
       "digits, '_' and '-')"},
      {head + "  - id: a\n    agent: \"a:b:c:d\"\n    prompt: p\n",
       "r.yaml:4:12: error: agent reference 'a:b:c:d' of step 'a' must be name, ns:name or ns:cat:name (letters, "
       "digits, '_' and '-')"},
      {head + "  - id: a\n    command: x\n    condition: \"1 ==\"\n",
       "r.yaml:5:16: error: invalid condition at column 5: expected a value, found end of condition"},
      {head + "  - id: a\n    command: x\n    condition: \"__import__('os')\"\n",
       "r.yaml:5:16: error: invalid condition at column 1: names containing '__' are not allowed: '__import__'"},
      {head + "  - id: a\n    command: x\n    foreach: [1]\n    steps: []\n", "r.yaml:6:12: error: 'steps' must be a non-empty list of steps"},
      {"name: x\nsteps:\n  - id: a\n    command: x\n---\nname: y\n",
       "r.yaml:5:1: error: a second YAML document starts here; a recipe is exactly one document (remove this '---' and "
       "what follows, or move it into its own file)"},
      {head + "  - id: a\n    command: x\n    retry: {on: {a: 1}}\n",
       "r.yaml:5:17: error: 'on' must be a list of failure, timeout, rate_limit or exit codes"},
      {head + "  - id: a\n    command: \"echo kept\\0; touch X\"\n",
       "r.yaml:4:24: error: this string holds a NUL character, which would silently end it where it reaches a "
       "command, argument or environment variable (remove the \\0 escape)"},
      {head + "  - id: a\n    command: x\n    env: {\"K\\x00\": \"v\"}\n",
       "r.yaml:5:13: error: this string holds a NUL character, which would silently end it where it reaches a "
       "command, argument or environment variable (remove the \\0 escape)"},
      {head + "  - id: a\n    prompt: \"hi \\u0000 there\"\n    agent: x\n",
       "r.yaml:4:17: error: this string holds a NUL character, which would silently end it where it reaches a "
       "command, argument or environment variable (remove the \\0 escape)"},
      {head + std::string("  - id: a\n    command: echo \0 hi\n", 33),
       "r.yaml:4:19: error: the file holds a NUL byte: a recipe is text (is this a binary file?)"},
      {"name: x\n\tsteps: []\n", "r.yaml:2:1: error: invalid YAML: illegal tab when looking for indentation (YAML does not allow tabs in "
       "indentation: indent with spaces)"},
      // A wrong `parallel` says what it takes.
      {head + "  - id: a\n    foreach: [1]\n    parallel: yes\n    command: x\n",
       "r.yaml:5:15: error: 'parallel' must be true (the global limit), false (one at a time) or a whole number from 1 "
       "to 100000 (YAML 1.2 reads 'yes' as text: write true)"},
      {head + "  - id: a\n    foreach: [1]\n    parallel: 0\n    command: x\n",
       "r.yaml:5:15: error: 'parallel' must be true (the global limit), false (one at a time) or a whole number from 1 "
       "to 100000"},
      // The fields of agent fleets: output_schema, schema_retries, limit_group, limits, budget.
      {head + "  - id: a\n    recipe: other\n    output_schema: {type: object}\n",
       "r.yaml:5:20: error: 'output_schema' belongs to agent and bash steps, not to this recipe step"},
      {head + "  - id: a\n    prompt: p\n    output_schema:\n      properties:\n        a: {$ref: \"other.json#/a\"}\n",
       "r.yaml:7:19: error: output_schema: $ref 'other.json#/a' at #/properties/a points outside this schema: only local "
       "references ('#/...') are allowed, no other file and no network"},
      {head + "  - id: a\n    prompt: p\n    output_schema: {type: string, pattern: \"(a\"}\n",
       "r.yaml:5:44: error: output_schema: the pattern '(a' at #/pattern is not a regular expression arun can use: "
       "mismatched '(' and ')' in regular expression"},
      {head + "  - id: a\n    prompt: p\n    output_schema: {type: object}\n    schema_retries: -1\n",
       "r.yaml:6:21: error: 'schema_retries' must be a whole number from 0 to 100"},
      {head + "  - id: a\n    command: x\n    limit_group: \"gpu pool\"\n",
       "r.yaml:5:18: error: 'limit_group' must be a name of letters, digits, '_', '.', ':' and '-'"},
      {"name: x\nlimits:\n  anthropic: 0\nsteps:\n  - id: a\n    command: x\n",
       "r.yaml:3:14: error: the limit of 'anthropic' must be a whole number from 1 to 100000"},
      {"name: x\nbudget:\n  usd: 5\nsteps:\n  - id: a\n    command: x\n",
       "r.yaml:3:3: error: unknown key 'usd' in the budget (known keys: cost_usd, tokens)"},
      // The cache of a step: its fields, each where it is written.
      {head + "  - id: a\n    command: x\n    cache: yes please\n",
       "r.yaml:5:12: error: 'cache' must be true, false or a mapping (key, max_age, scope, files)"
       " (cache: {key: [\"v2\"], max_age: 7d, scope: recipe, files: [\"src/**/*.py\"]})"},
      {head + "  - id: a\n    command: x\n    cache:\n      max_age: 3 days\n",
       "r.yaml:6:16: error: 'max_age' must be an age: '3 days': expected a number of seconds or a duration such as "
       "500ms, 90s, 5m, 1h30m, 7d (at most 100 years) (max_age: 7d (ms, s, m, h, d or w; a bare number is seconds))"},
      {head + "  - id: a\n    command: x\n    cache:\n      scope: team\n",
       "r.yaml:6:14: error: 'scope' must be one of global, recipe, session, not 'team'"},
      {head + "  - id: a\n    command: x\n    cache:\n      files: {src: yes}\n",
       "r.yaml:6:14: error: 'files' must be a glob (relative to the step's working directory) or a list of them"
       " (cache: {key: [\"v2\"], max_age: 7d, scope: recipe, files: [\"src/**/*.py\"]})"},
      {head + "  - id: a\n    command: x\n    cache:\n      ttl: 7d\n",
       "r.yaml:6:7: error: unknown key 'ttl' in the cache of step 'a' (known keys: key, max_age, scope, files)"},
      {head + "  - id: a\n    foreach: [1]\n    steps:\n      - id: b\n        command: x\n    cache: true\n",
       "r.yaml:8:12: error: 'cache' belongs to agent and bash steps, not to this loop step"},
      // isolation: its values, and never with cache.
      {head + "  - id: a\n    command: x\n    isolation: container\n",
       "r.yaml:5:16: error: 'isolation' must be one of worktree, copy, none, not 'container'"},
      {head + "  - id: a\n    prompt: p\n    cache: true\n    isolation: worktree\n",
       "r.yaml:6:16: error: 'isolation' and 'cache' do not go together: a reused output brings back no worktree and no "
       "branch (drop one of them)"},
      {head + "  - id: a\n    recipe: other.yaml\n    isolation: copy\n",
       "r.yaml:5:16: error: 'isolation' belongs to agent and bash steps, not to this recipe step"},
  };
  for (const auto& r : rows) {
    INFO("recipe:\n" << r.text);
    CHECK(first_error(r.text) == r.expected);
  }
  // The same error rendered as a user sees it: the source line, the caret under the exact
  // span and the help line, against tests/data/diagnostics/invalid-recipes.golden.
  std::vector<std::string> rendered;
  for (const auto& r : rows) rendered.push_back(rendered_first_error(r.text));
  check_golden("invalid-recipes.golden", rendered);
}

TEST_CASE("what the older runners accept is accepted: context_validation's unknown checks, a loop variable named "
          "like a built-in, references in shell comments") {
  // The Rust runner checks nothing for "" and warns about an unknown check; the name is still
  // one the recipe expects to be given, so references to it are declared.
  const std::string cv = "name: x\ncontext_validation:\n  repo: folder\n  task: \"\"\n  mode: nonemty\n"
                         "steps:\n  - id: a\n    command: echo {{repo}} {{task}} {{mode}}\n";
  CHECK(first_error(cv) == "<no error>");
  const auto ds = check(cv);
  REQUIRE(ds.size() == 2);
  CHECK(ds[0] == "r.yaml:3:9: warning: 'folder' is no context check, so 'repo' is not checked (known: nonempty, path, "
                 "git_repo, optional) (if 'folder' is the default value of 'repo', it belongs under context:)");
  CHECK(ds[1] == "r.yaml:5:9: warning: 'nonemty' is no context check, so 'mode' is not checked (known: nonempty, path, "
                 "git_repo, optional) (did you mean 'nonempty'?)");
  // The Python runner's loop variable hides a built-in inside its loop.
  const std::string loop = "name: x\nsteps:\n  - id: each\n    foreach: [{name: a}]\n    as: recipe\n"
                           "    command: echo {{recipe.name}}\n";
  CHECK(first_error(loop) == "<no error>");
  CHECK(first_warning(loop) == "r.yaml:5:9: warning: step 'each': the loop variable 'recipe' hides the built-in "
                               "{{recipe}} inside the loop (a name of its own (say 'recipe_item') keeps both readable)");
  CHECK_THAT(first_error("name: x\nsteps:\n  - id: each\n    foreach: [1]\n    as: _loop_index\n    command: x\n"),
             Catch::Contains("'as' cannot be '_loop_index': it is a built-in"));
  // update_context keys are loop locals as well: never a built-in's name.
  CHECK_THAT(first_error("name: x\ncontext: {n: 0}\nsteps:\n  - id: w\n    while_condition: \"{{n}} < 2\"\n"
                         "    update_context: {step: 1}\n    command: x\n"),
             Catch::Contains("update_context cannot set 'step': it is a built-in"));
  // A loop's own variable is not defined in its `foreach` yet: neither listed nor suggested.
  const auto own = first_error("name: x\ncontext: {items: [1]}\nsteps:\n  - id: f\n    foreach: \"{{itemz}}\"\n"
                               "    as: itemx\n    command: echo\n");
  CHECK_THAT(own, Catch::Contains("undefined variable 'itemz' in {{itemz}} of step 'f' (defined: items, recipe, ") &&
                      Catch::EndsWith("(did you mean 'items'?)"));
  CHECK_THAT(own, !Catch::Contains("itemx"));
  // A reference in a shell comment renders empty and changes nothing: a warning. The same
  // reference on a command line is an error.
  const std::string commented = "name: x\nsteps:\n  - id: a\n    command: |\n      # {{variable}} is substituted\n"
                                "      echo hi\n";
  CHECK(first_error(commented) == "<no error>");
  CHECK_THAT(first_warning(commented), Catch::Contains("warning: undefined variable 'variable' in {{variable}}") &&
                                           Catch::EndsWith("(it is in a shell comment, which arun leaves as "
                                                           "written)"));
  // A heredoc line that starts with '#' is text bash passes on, not a comment: an error.
  CHECK_THAT(first_error("name: x\nsteps:\n  - id: a\n    command: |\n      cat <<EOF\n      # {{variable}}\n"
                         "      EOF\n"),
             Catch::Contains("error: undefined variable 'variable'"));
  CHECK_THAT(first_error("name: x\nsteps:\n  - id: a\n    command: |\n      echo {{variable}} # here\n"),
             Catch::Contains("error: undefined variable 'variable'"));
  CHECK_THAT(first_error("name: x\nsteps:\n  - id: a\n    agent: x\n    prompt: |\n      # {{variable}}\n"),
             Catch::Contains("error: undefined variable 'variable'"));  // a prompt has no comments
}

TEST_CASE("an unknown key near a valid one is an error with the suggestion, others are warnings") {
  CHECK(first_error("name: x\ndescripton: d\nsteps:\n  - id: a\n    command: x\n") ==
        "r.yaml:2:1: error: unknown key 'descripton' in the recipe (did you mean 'description'?)");
  CHECK(first_error(head + "  - id: a\n    command: x\n    timout: 5\n") ==
        "r.yaml:5:5: error: unknown key 'timout' in step 'a' (did you mean 'timeout'?)");
  CHECK(first_warning(head + "  - id: a\n    command: x\n    zzzz: 1\n") == "r.yaml:5:5: warning: unknown key 'zzzz' in step 'a'");
  CHECK(first_error(head + "  - id: a\n    command: x\n    zzzz: 1\n") == "<no error>");
  // The vocabulary of GitHub Actions and the like is never ignored.
  const std::vector<std::pair<std::string, std::string>> foreign = {
      {"if: ${{ true }}", "r.yaml:5:5: error: unknown key 'if' in step 'a': arun's name for it is 'condition' (write the "
                          "condition as 'condition:')"},
      {"needs: [b]", "r.yaml:5:5: error: unknown key 'needs' in step 'a': arun's name for it is 'depends_on' (write "
                     "'depends_on:' with the ids of the steps to wait for)"},
      {"working-directory: src", "r.yaml:5:5: error: unknown key 'working-directory' in step 'a': arun's name for it is "
                                 "'working_dir' (write 'working_dir:')"},
      {"timeout-minutes: 5", "r.yaml:5:5: error: unknown key 'timeout-minutes' in step 'a': arun's name for it is "
                             "'timeout' (write 'timeout:' in seconds (timeout-minutes: 5 is timeout: 300))"},
      {"continue-on-error: true", "r.yaml:5:5: error: unknown key 'continue-on-error' in step 'a': arun's name for it "
                                  "is 'on_error' (write 'on_error: continue')"},
  };
  for (const auto& [line, expected] : foreign) CHECK(first_error(head + "  - id: a\n    command: x\n    " + line + "\n") == expected);
  CHECK(first_error(head + "  - id: a\n    run: echo hi\n") ==
        "r.yaml:4:5: error: unknown key 'run' in step 'a': arun's name for it is 'command' (write the shell script as "
        "'command:')");
  // Stage keys of the Python dialect are read; a stage key or approval key nobody knows is
  // said, never dropped in silence.
  const std::string stage = "name: x\nstages:\n  - name: s\n";
  CHECK(first_error(stage + "    aproval:\n      required: false\n    steps:\n      - id: a\n        command: x\n") ==
        "r.yaml:4:5: error: unknown key 'aproval' in a stage (did you mean 'approval'?)");
  CHECK(first_error(stage + "    approval:\n      required: true\n      prompt: p\n      timout: 5\n"
                            "    steps:\n      - id: a\n        command: x\n") ==
        "r.yaml:7:7: error: unknown key 'timout' in the approval of stage 's' (did you mean 'timeout'?)");
  CHECK(first_warning(stage + "    description: d\n    condition: 'true'\n    approval_required: true\n"
                              "    approval_message: go?\n    steps:\n      - id: a\n        command: x\n") == "<no warning>");
  CHECK(first_warning("name: x\nversion: one\nsteps:\n  - id: a\n    command: x\n") ==
        "r.yaml:2:10: warning: version 'one' is not semver (MAJOR.MINOR.PATCH)");
}

TEST_CASE("references to names declared anywhere, --set keys and built-ins are fine") {
  const std::string text = head +
                           "  - id: a\n    command: echo {{later}} {{recipe.name}} {{given.x}}\n"
                           "  - id: b\n    command: echo\n    output: later\n";
  CHECK(first_error(text) != "<no error>");  // `given` is unknown without --set
  arun::validation_options with_set;
  with_set.set_keys = {"given"};
  CHECK(check(text, with_set).empty());
  arun::validation_options lenient;
  lenient.lenient = true;
  const auto soft = check(head + "  - id: a\n    command: echo {{ghost}}\n", lenient);
  REQUIRE(soft.size() == 1);
  CHECK(soft[0].find(": warning: undefined variable 'ghost'") != std::string::npos);
  // --lenient keeps old recipes running: an undeclared bare name in a condition warns too.
  const auto bare = check(head + "  - id: a\n    command: x\n    condition: skip_tests != true\n", lenient);
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].find(": warning: undefined name 'skip_tests' in the condition") != std::string::npos);
  // `none` is null, as the Python runner reads it.
  CHECK(check("name: x\ncontext:\n  mode: q\nsteps:\n  - id: a\n    command: x\n    condition: mode is not none\n").empty());
  // Declared names, --set keys, loop variables and built-ins are fine.
  with_set.set_keys = {"flag"};
  CHECK(check("name: x\ncontext:\n  mode: q\nsteps:\n  - id: a\n    command: x\n"
              "    condition: mode == 'q' and flag and isinstance(mode, str) and len(session.id) > 0\n",
              with_set)
            .empty());
}

TEST_CASE("context values follow YAML 1.2 typing") {
  const auto r = load_recipe_text("name: x\ncontext:\n  a: yes\n  b: True\n  c: '5'\n  d: 5\n  e: ~\n  f: 1.5\n  g: off\n"
                                  "steps:\n  - id: s\n    command: x\n",
                                  "r.yaml");
  REQUIRE(r.value);
  const auto& c = r.value->context;
  CHECK(c.at("a") == "yes");
  CHECK(c.at("b") == true);
  CHECK(c.at("c") == "5");
  CHECK(c.at("d") == 5);
  CHECK(c.at("e").is_null());
  CHECK(c.at("f") == 1.5);
  CHECK(c.at("g") == "off");
}

TEST_CASE("oversized files, deep nesting and alias bombs are refused") {
  arun::io::load_limits small;
  small.max_bytes = 10;
  CHECK_THAT(format_diagnostic(load_recipe_text("name: xxxxxxxxxxxx", "r.yaml", small).diagnostics.at(0)),
             Catch::Contains("recipes are limited to 10 bytes"));
  std::string deep = "name: x\ncontext:\n  a: ";
  for (int i = 0; i < 70; ++i) deep += "[";
  for (int i = 0; i < 70; ++i) deep += "]";
  deep += "\nsteps:\n  - id: s\n    command: x\n";
  CHECK_THAT(first_error(deep), Catch::Contains("nests deeper than 64 levels"));
  // Past yaml-cpp's own limit (500) the error still points where the depth passed 64, not at
  // the end of the node: flow brackets and block indentation.
  std::string very_deep = "name: x\ncontext:\n  a: " + std::string(600, '[') + std::string(600, ']') + "\nsteps: []\n";
  CHECK(first_error(very_deep) == "r.yaml:3:68: error: the document nests deeper than 64 levels");
  std::string indented = "name: x\ncontext:\n  a:\n";
  for (int i = 0; i < 600; ++i) indented += std::string(2 * (i + 2), ' ') + "k:\n";
  CHECK_THAT(first_error(indented + "steps: []\n"), Catch::StartsWith("r.yaml:66:") && Catch::EndsWith("nests deeper than 64 levels"));
  std::string bomb = "name: x\ncontext:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c, ++prev) {
    bomb += std::string("  ") + c + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", " : "") + "*" + prev;
    bomb += "]\n";
  }
  bomb += "steps:\n  - id: s\n    command: x\n";
  CHECK_THAT(first_error(bomb), Catch::Contains("more than the node limit"));
}

TEST_CASE("features the engine cannot run yet are listed, not ignored") {
  // Only an extends chain nobody resolved is refused: agent steps and approval gates run.
  const auto r = load_recipe_text("name: x\nextends: parent\nsteps:\n  - id: a\n    command: echo\n"
                                  "  - id: b\n    agent: ns:x\n    prompt: p\n  - id: c\n    requires_approval: true\n",
                                  "r.yaml");
  REQUIRE(r.value);
  const auto refused = arun::unsupported_features(*r.value);
  REQUIRE(refused.size() == 1);
  CHECK(format_diagnostic(refused[0]).starts_with("r.yaml:2:10: error: 'extends' is not supported by this version of arun yet"));
  const auto fine = load_recipe_text(head + "  - id: a\n    command: echo\n    depends_on: [b]\n    retry: {max_attempts: 2}\n"
                                            "    parallel_group: g\n  - id: b\n    command: x\n    foreach: '[1]'\n"
                                            "  - id: c\n    requires_approval: true\n", "r.yaml");
  CHECK(arun::unsupported_features(*fine.value).empty());
}

TEST_CASE("edit distance counts single-character edits") {
  CHECK(arun::edit_distance("comand", "command") == 1);
  CHECK(arun::edit_distance("", "abc") == 3);
  CHECK(arun::edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("plain scalars follow the YAML 1.2 core schema for numbers") {
  const auto r = load_recipe_text("name: x\ncontext:\n  i: -12\n  p: +7\n  f: 1.\n  g: .5\n  e: 2e3\n  h: 1.5E-2\n"
                                  "  big: 99999999999999999999\n  hex: 0x1F\n  oct: 0o17\n  ninf: -.inf\n"
                                  "  s1: 1e\n  s2: '.'\n  s3: 1.2.3\n  s4: +\n  s5: 0x\n  s6: 1_000\n"
                                  "steps:\n  - id: s\n    command: x\n",
                                  "r.yaml");
  REQUIRE(r.value);
  const auto& c = r.value->context;
  CHECK(c.at("i") == -12);
  CHECK(c.at("p") == 7);
  CHECK(c.at("f") == 1.0);
  CHECK(c.at("g") == 0.5);
  CHECK(c.at("e") == 2000.0);
  CHECK(c.at("h") == 0.015);
  CHECK(c.at("big") == "99999999999999999999");  // past 64 bits: kept exact, as text
  CHECK(c.at("hex") == 31);
  CHECK(c.at("oct") == 15);
  CHECK(c.at("ninf").as_double() < 0);
  for (const char* key : {"s1", "s2", "s3", "s4", "s5", "s6"}) {
    INFO(key);
    CHECK(c.at(key).is_string());
  }
}

TEST_CASE("agent options are checked: recovery_on_failure provider_preferences and rate_limiting backoff") {
  CHECK(first_error(head + "  - id: a\n    recipe: lib/x.yaml\n    recovery_on_failure: fix it\n") ==
        "r.yaml:5:26: error: recovery_on_failure of step 'a' must be true or a mapping (agent, prompt, mode, model, timeout)");
  CHECK(first_error(head + "  - id: a\n    recipe: lib/x.yaml\n    recovery_on_failure: {prompt: 3}\n") ==
        "r.yaml:5:26: error: recovery_on_failure of step 'a': 'prompt' must be a string");
  CHECK(first_warning(head + "  - id: a\n    prompt: p\n    provider_preferences:\n      - {provider: x, model: m, class: fast}\n") ==
        "r.yaml:6:7: warning: provider_preferences of step 'a': 'class' is accepted and ignored (arun picks by provider and model)");
  CHECK(first_error(head + "  - id: a\n    prompt: p\n    provider_preferences: fast\n") ==
        "r.yaml:5:27: error: provider_preferences of step 'a' must be a list of {provider, model} mappings");
  CHECK(first_error("name: x\nrate_limiting:\n  backoff: {multiplier: 0.5}\n" + head.substr(8) + "  - id: a\n    prompt: p\n") ==
        "r.yaml:3:25: error: 'multiplier' must be 1 or more (1 keeps the delay constant)");
  const auto r = load_recipe_text("name: x\nrate_limiting:\n  backoff: {max_retries: 2, initial_delay: 1.5, max_delay: 9, multiplier: 3}\n" +
                                      head.substr(8) + "  - id: a\n    prompt: p\n",
                                  "r.yaml");
  REQUIRE(r.value);
  const auto& b = r.value->rate_limiting.backoff;
  CHECK(b.max_retries == 2);
  CHECK(b.initial_delay == 1.5);
  CHECK(b.max_delay == 9.0);
  CHECK(b.multiplier == 3.0);
  // recovery_on_failure's timeout is a duration like every other, kept as seconds.
  const auto timed = load_recipe_text(head + "  - id: a\n    recipe: lib/x.yaml\n    recovery_on_failure: {timeout: 5m}\n", "r.yaml");
  REQUIRE(timed.value);
  CHECK(timed.value->steps[0].call.recovery_on_failure.at("timeout").to_number<double>() == 300.0);
  CHECK(first_error(head + "  - id: a\n    recipe: lib/x.yaml\n    recovery_on_failure: {timeout: soon}\n") ==
        "r.yaml:5:36: error: 'timeout' must be a number of seconds or a duration such as 500ms, 90s, 5m, 1h30m (0 or more)");
}
