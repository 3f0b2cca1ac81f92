// Micro-benchmarks of the recipe language: load + validate of generated recipes with 100,
// 1,000 and 5,000 steps, and condition evaluations per second (issue 3's performance item).
// Run: tools/bench  (or build/release/tools/src/bench/arun-bench-language --benchmark_filter=...)
#include "condition/condition.hpp"
#include "recipe/recipe_loader.hpp"
#include "template/render.hpp"

#include <arun/validation.hpp>

#include <benchmark/benchmark.h>
#include <boost/json/parse.hpp>

#include <string>
#include <variant>

namespace {

// A realistic mix: bash steps with templates, conditions, retries, agents and a loop.
std::string generated_recipe(int steps) {
  std::string y = "name: generated\ncontext:\n  repo: /src/app\n  files: [a.py, b.py, c.py]\n  mode: fast\nsteps:\n";
  for (int i = 0; i < steps; ++i) {
    const auto id = "step-" + std::to_string(i);
    switch (i % 4) {
      case 0:
        y += "  - id: " + id + "\n    command: |\n      cd {{repo}} && make test MODE={{mode}}\n    output: out_" +
             std::to_string(i) + "\n    timeout: 60\n";
        break;
      case 1:
        y += "  - id: " + id + "\n    condition: \"{{mode}} == 'fast' and len(files) > 2\"\n    command: echo " + id +
             "\n    retry: {max_attempts: 3, backoff: exponential, on: [failure, 2]}\n";
        break;
      case 2:
        y += "  - id: " + id + "\n    agent: \"team:reviewer\"\n    prompt: \"Review {{repo}} in {{mode}} mode\"\n"
             "    output: review_" + std::to_string(i) + "\n";
        break;
      default:
        y += "  - id: " + id + "\n    foreach: \"{{files}}\"\n    as: f\n    parallel: 4\n    command: lint {{f}}\n";
    }
  }
  return y;
}

void load_and_validate(benchmark::State& state) {
  const auto text = generated_recipe(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto r = arun::io::load_recipe_text(text, "bench.yaml");
    if (!r.value) state.SkipWithError("the generated recipe did not load");
    auto diagnostics = arun::validate_recipe(*r.value);
    benchmark::DoNotOptimize(diagnostics);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["bytes"] = static_cast<double>(text.size());
}
BENCHMARK(load_and_validate)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

void condition_evaluation(benchmark::State& state) {
  const auto context = boost::json::parse(R"({"status": "in progress", "n": 7, "files": ["a", "b"], "o": {"k": "v"}})").as_object();
  auto parsed = arun::engine::parse_condition(
      "{{status}} == 'in progress' and n > 3 and 'a' in files and o.k.upper().startswith('V') or len(files) == 0");
  const auto& c = std::get<arun::engine::condition>(parsed);
  for (auto _ : state) {
    auto out = arun::engine::evaluate_condition(c, {context});
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(condition_evaluation);

void condition_parse(benchmark::State& state) {
  for (auto _ : state) {
    auto parsed = arun::engine::parse_condition("{{a.b}} != '[]' and (x + 1) * 2 >= max([1, 2, 3]) or not y");
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(condition_parse);

void template_render(benchmark::State& state) {
  const auto context = boost::json::parse(R"({"repo": "/src/app", "files": ["a.py", "b.py"], "cfg": {"level": 3}})").as_object();
  for (auto _ : state) {
    auto out = arun::engine::render_text("cd {{repo}} && lint {{files}} --level {{ cfg.level }} # {{#if x}}", {context});
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(template_render);

}  // namespace

BENCHMARK_MAIN();
