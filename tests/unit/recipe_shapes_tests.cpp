// Every field of a recipe given a value of every other shape (mapping, list, null, nested,
// string, number, boolean): the loader answers with diagnostics and never fails inside
// (`retry: {on: {a: 1}}` once ended `arun validate` with exit 70 "internal error").
#include <catch2/catch.hpp>

#include "recipe/recipe_loader.hpp"

#include <arun/validation.hpp>

#include <yaml-cpp/yaml.h>

#include <string>
#include <variant>
#include <vector>

namespace {

// Uses every field the loader reads, at every level.
const char* const maximal_recipe = R"(name: maximal
description: d
version: 1.0.0
author: a
tags: [x]
context: {mode: fast, items: [1, 2], n: 3}
recursion: {max_depth: 5, max_total_steps: 100}
hooks: {pre_step: echo pre, post_step: echo post, on_error: echo err}
context_validation: {mode: nonempty}
rate_limiting: {max_concurrent_llm: 2, min_delay_ms: 10, backoff: {max_retries: 2, initial_delay: 1, max_delay: 5, multiplier: 2}}
default_step_timeout: 60
output: out1
steps:
  - id: b1
    command: echo {{mode}}
    output: out1
    output_exit_code: rc1
    max_env_value_bytes: 1000
    timeout: 10
    retry: {max_attempts: 3, backoff: linear, initial_delay: 1, max_delay: 2, jitter: 0.5, on: [failure, timeout, 3]}
    on_error: continue
    when_tags: [x]
    condition: "mode == 'fast'"
    working_dir: /tmp
    env: {A: "1", B: "{{mode}}"}
    parse_json: true
    requires_approval: true
    approval_prompt: ok
    approval_timeout: 5
    approval_default: approve
    on_approval_denied: continue
  - id: a1
    agent: reviewer
    prompt: "review {{mode}}"
    mode: analyze
    model: m
    provider_preferences: [{provider: anthropic, model: "claude-*"}]
    auto_stage: true
    depends_on: [b1]
    parse_json_required: true
  - id: r1
    recipe: other
    context: {k: v}
    recursion: {max_depth: 2}
    recovery_on_failure: {agent: fixer, prompt: fix, mode: m, model: x, timeout: 5}
  - id: l1
    foreach: "{{items}}"
    as: it
    parallel: 2
    collect: got
    max_iterations: 10
    steps:
      - id: inner
        command: echo {{it}}
  - id: w1
    while_condition: "n > 0"
    max_while_iterations: 3
    break_when: "n == 1"
    update_context: {n: 0}
    steps:
      - id: winner
        command: echo hi
  - id: g1
    parallel_group: grp
    command: echo g
    continue_on_error: true
)";

const char* const staged_recipe = R"(name: staged
execution: dag
extends: base
stages:
  - name: first
    approval: {required: true, prompt: go, timeout: 5, default: approve, when: before}
    condition: "true"
    steps:
      - id: s1
        command: echo 1
        depends_on: [s0]
)";

using path = std::vector<std::variant<std::string, std::size_t>>;

void collect_paths(const YAML::Node& n, path& at, std::vector<path>& out) {
  if (!at.empty()) out.push_back(at);
  if (n.IsMap()) {
    for (const auto& kv : n) {
      at.emplace_back(kv.first.Scalar());
      collect_paths(kv.second, at, out);
      at.pop_back();
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) {
      at.emplace_back(i);
      collect_paths(n[i], at, out);
      at.pop_back();
    }
  }
}

// The document with the node at `where` replaced by `value`.
std::string replaced(const YAML::Node& root, const path& where, const YAML::Node& value) {
  YAML::Node doc = YAML::Clone(root);
  std::vector<YAML::Node> chain = {doc};
  for (std::size_t k = 0; k + 1 < where.size(); ++k)
    chain.push_back(std::visit([&](const auto& key) { return chain.back()[key]; }, where[k]));
  std::visit([&](const auto& key) { chain.back()[key] = value; }, where.back());
  return YAML::Dump(doc);
}

}  // namespace

TEST_CASE("every field given a value of the wrong shape is a diagnostic, never an internal error") {
  const std::vector<std::string> shapes = {"{a: 1}", "[1]", "~", "[[1]]", "{a: {b: [1]}}", "text", "5", "true",
                                           "[{a: 1}]", "-1", "1e400"};
  std::size_t loads = 0, refused = 0;
  for (const auto* text : {maximal_recipe, staged_recipe}) {
    const auto root = YAML::Load(text);
    std::vector<path> paths;
    path at;
    collect_paths(root, at, paths);
    for (const auto& where : paths)
      for (const auto& shape : shapes) {
        const auto mutated = replaced(root, where, YAML::Load(shape));
        INFO("recipe:\n" << mutated);
        arun::io::load_result r;
        REQUIRE_NOTHROW(r = arun::io::load_recipe_text(mutated, "r.yaml"));
        ++loads;
        if (!r.value) {
          ++refused;
          // A refusal says where: every error names a line.
          for (const auto& d : r.diagnostics)
            if (d.level == arun::severity::error) CHECK(d.where.line > 0);
        }
      }
  }
  CHECK(loads > 1000);
  CHECK(refused > loads / 4);
}
