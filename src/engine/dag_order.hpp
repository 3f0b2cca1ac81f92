#pragma once
// `execution: dag` ordering (docs/reference/recipe.md, "depends_on and execution: dag"): which
// steps a step waits for — its depends_on and the steps whose outputs it reads — and the cycles
// such waiting would deadlock on. Pure; shared by the validator and the DAG scheduler.

#include <arun/recipe.hpp>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace arun::engine {

/// Every root name `s` (and its loop body) reads: its templates' references and the bare
/// identifiers of its conditions (a superset: a word that names nothing is harmless here).
std::set<std::string, std::less<>> names_read(const step& s);
/// The names `s` reads from outside itself: names_read() without its loop variable, the
/// loop built-ins, and what its own body writes before reading it (-k holds a step back
/// only for what it takes from others).
std::set<std::string, std::less<>> names_needed(const step& s);
/// The names a finished `s` writes into its scope: its output, output_exit_code and collect;
/// a while loop's body outputs too (its variables outlive it).
std::set<std::string, std::less<>> names_written(const step& s);
/// The bare identifiers and references of a condition (a stage's).
std::set<std::string, std::less<>> names_in_condition(std::string_view condition);

/// For each of `steps`, the indices (into `steps`) of the steps it waits for, sorted.
std::vector<std::vector<std::size_t>> dag_dependencies(const std::vector<step>& steps);

/// The ids around one cycle ("a -> b -> a"), or empty when the order has none.
std::string dag_cycle(const std::vector<step>& steps, const std::vector<std::vector<std::size_t>>& deps);

}  // namespace arun::engine
