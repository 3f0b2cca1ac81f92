#include <catch2/catch.hpp>

#include "recipe_loader.hpp"

#include <algorithm>

using arun::diagnostic;
using arun::severity;
using arun::io::load_recipe_text;

namespace {

arun::io::load_result load(const std::string& text) { return load_recipe_text(text, "r.yaml"); }

// The first diagnostic of the given severity, formatted.
std::string first(const arun::io::load_result& r, severity level = severity::error) {
  for (const auto& d : r.diagnostics)
    if (d.level == level) return format_diagnostic(d);
  return "<none>";
}

}  // namespace

TEST_CASE("a recipe with bash steps loads with every supported field") {
  const auto r = load(R"(name: demo
description: two steps
context:
  greeting: hello
steps:
  - id: one
    command: echo one
    output: first
    timeout: 2.5
    working_dir: sub
    env:
      A: 1
      B: text
  - id: two
    type: bash
    cwd: other
    command: |
      echo two
)");
  REQUIRE(r.value);
  CHECK(r.diagnostics.empty());
  const auto& rec = *r.value;
  CHECK(rec.name == "demo");
  CHECK(rec.context.at("greeting") == "hello");
  REQUIRE(rec.steps.size() == 2);
  CHECK(rec.steps[0].output == "first");
  CHECK(rec.steps[0].timeout->count() == 2.5);
  CHECK(rec.steps[0].working_dir == "sub");
  CHECK(rec.steps[0].env == std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "text"}});
  CHECK(rec.steps[0].where.line == 6);
  CHECK(rec.steps[1].working_dir == "other");
  CHECK(rec.steps[1].command == "echo two\n");
}

TEST_CASE("YAML errors name the file, line and column") {
  const auto r = load("name: x\nsteps:\n  - id: a\n    command: [unclosed\n");
  CHECK_FALSE(r.value);
  CHECK_THAT(first(r), Catch::StartsWith("r.yaml:") && Catch::Contains("invalid YAML"));
}

TEST_CASE("required fields are reported with their place") {
  CHECK(first(load("steps:\n  - id: a\n    command: x\n")) == "r.yaml:1:1: error: the recipe needs 'name'");
  CHECK(first(load("name: x\n")) == "r.yaml:1:1: error: the recipe needs 'steps': a list of steps");
  CHECK(first(load("name: x\nsteps: []\n")) == "r.yaml:2:8: error: 'steps' must be a non-empty list of steps");
  CHECK(first(load("name: x\nsteps:\n  - command: x\n")) == "r.yaml:3:5: error: every step needs 'id'");
}

TEST_CASE("a typo in a body key is a warning with a suggestion and the empty step an error") {
  const auto r = load("name: x\nsteps:\n  - id: a\n    comand: echo hi\n");
  CHECK_FALSE(r.value);
  CHECK(first(r, severity::warning) ==
        "r.yaml:4:5: warning: unknown key 'comand' in a step (did you mean 'command'?)");
  CHECK(first(r) == "r.yaml:3:5: error: step 'a' has no body: add 'command'");
}

TEST_CASE("unknown top-level keys warn but still load") {
  const auto r = load("name: x\ndescripton: d\nsteps:\n  - id: a\n    command: x\n");
  REQUIRE(r.value);
  CHECK(first(r, severity::warning) ==
        "r.yaml:2:1: warning: unknown key 'descripton' in the recipe (did you mean 'description'?)");
}

TEST_CASE("language features this version does not run yet are refused, not ignored") {
  const auto r = load("name: x\nsteps:\n  - id: a\n    command: x\n    retry: {max_attempts: 2}\n");
  CHECK_FALSE(r.value);
  CHECK(first(r) == "r.yaml:5:5: error: 'retry' is not supported by this version of arun yet");
  CHECK_FALSE(load("name: x\nsteps:\n  - id: a\n    command: echo {{ who }}\n").value);
  CHECK(load("name: x\nsteps:\n  - id: a\n    command: echo '{not a template}' ${HOME}\n").value);
}

TEST_CASE("duplicate keys and duplicate ids are errors") {
  CHECK(first(load("name: x\nname: y\nsteps:\n  - id: a\n    command: x\n")) ==
        "r.yaml:2:1: error: duplicate key 'name' in the recipe");
  CHECK(first(load("name: x\nsteps:\n  - id: a\n    command: x\n  - id: a\n    command: y\n")) ==
        "r.yaml:5:9: error: step id 'a' is used twice; ids must be unique");
}

TEST_CASE("bad field values are reported") {
  CHECK(first(load("name: x\nsteps:\n  - id: a\n    command: x\n    timeout: soon\n")) ==
        "r.yaml:5:14: error: 'timeout' must be a number of seconds (0 or more)");
  CHECK(first(load("name: x\nsteps:\n  - id: a\n    command: x\n    timeout: .inf\n")) ==
        "r.yaml:5:14: error: 'timeout' must be a number of seconds (0 or more)");
  CHECK(first(load("name: x\nsteps:\n  - id: 'a b'\n    command: x\n")) ==
        "r.yaml:3:9: error: step id 'a b' may only use letters, digits, '_', '.' and '-'");
  CHECK(first(load("name: x\nsteps:\n  - id: a\n    type: skill\n    command: x\n")) ==
        "r.yaml:4:11: error: unsupported step type 'skill' (expected bash, agent or recipe)");
  CHECK(first(load("name: x\nsteps:\n  - id: a\n    command: x\n    env: [a]\n")) ==
        "r.yaml:5:10: error: 'env' must be a mapping of variable names to values");
}

TEST_CASE("context values follow YAML 1.2 typing") {
  const auto r = load("name: x\ncontext:\n  a: yes\n  b: True\n  c: '5'\n  d: 5\n  e: ~\n  f: 1.5\n  g: off\n"
                      "steps:\n  - id: s\n    command: x\n");
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

TEST_CASE("oversized files and alias bombs are refused") {
  arun::io::load_limits small;
  small.max_bytes = 10;
  CHECK_THAT(format_diagnostic(load_recipe_text("name: xxxxxxxxxxxx", "r.yaml", small).diagnostics.at(0)),
             Catch::Contains("recipes are limited to 10 bytes"));
  std::string bomb = "name: x\ncontext:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c, ++prev)
    bomb += std::string("  ") + c + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  bomb += "steps:\n  - id: s\n    command: x\n";
  const auto r = load(bomb);
  CHECK_FALSE(r.value);
  CHECK_THAT(first(r), Catch::Contains("too many nodes"));
}

TEST_CASE("a root that is not a mapping is refused") {
  CHECK(first(load("- a\n- b\n")) == "r.yaml:1:1: error: a recipe must be a mapping with 'name' and 'steps'");
}

TEST_CASE("edit distance counts single-character edits") {
  CHECK(arun::io::edit_distance("comand", "command") == 1);
  CHECK(arun::io::edit_distance("", "abc") == 3);
  CHECK(arun::io::edit_distance("kitten", "sitting") == 3);
}
