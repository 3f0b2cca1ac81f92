#pragma once
// What a run's agent calls spent, per provider and model, against its budget (--max-cost,
// --max-tokens, the recipe's `budget:`). Once the budget is reached the run drains: no new
// step and no new agent call starts (a retry, a schema correction), running calls finish,
// and the run ends budget_exhausted (docs/agents.md, "Usage, cost and budgets").

#include <arun/recipe.hpp>
#include <arun/results.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace arun::engine {

class spend_meter {
public:
  explicit spend_meter(run_budget budget) : budget_(budget) {}

  /// Adds what a call (or a recorded instance, on resume) spent. True when this made the
  /// run reach its budget.
  bool add(const agent_usage& u);

  bool exhausted() const noexcept { return exhausted_; }
  const run_budget& budget() const noexcept { return budget_; }
  /// Calls whose cost is unknown, though a cost budget is set: not counted against it.
  std::uint64_t uncosted_calls() const noexcept { return uncosted_; }
  double cost_usd() const noexcept { return cost_; }
  /// Calls counted, of known cost or not.
  std::uint64_t calls() const noexcept { return calls_; }
  std::uint64_t tokens() const noexcept { return tokens_; }
  const std::vector<usage_total>& totals() const noexcept { return totals_; }

  /// "$1.02 spent of the $1.00 budget" / "120,000 tokens of the 100,000 budget".
  std::string describe() const;

  /// An instance was not started because the budget was reached.
  void refused() noexcept { ++refused_; }
  int refused_count() const noexcept { return refused_; }

private:
  run_budget budget_;
  std::vector<usage_total> totals_;
  double cost_ = 0;
  std::uint64_t tokens_ = 0, uncosted_ = 0, calls_ = 0;
  bool exhausted_ = false;
  int refused_ = 0;
};

}  // namespace arun::engine
