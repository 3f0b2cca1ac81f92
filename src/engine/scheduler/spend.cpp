#include "scheduler/spend.hpp"

#include <algorithm>

namespace arun::engine {

bool spend_meter::add(const agent_usage& u) {
  auto it = std::find_if(totals_.begin(), totals_.end(),
                         [&](const usage_total& t) { return t.provider == u.provider && t.model == u.model; });
  if (it == totals_.end()) it = totals_.insert(totals_.end(), usage_total{u.provider, u.model});
  const std::uint64_t calls = std::max<std::uint64_t>(u.calls, 1);
  it->calls += calls;
  calls_ += calls;
  it->input += u.input;
  it->output += u.output;
  it->cache_read += u.cache_read;
  it->cache_write += u.cache_write;
  // A call's usage without a cost is one call of unknown cost; a sum says how many it holds.
  const std::uint64_t unknown = u.cost_usd ? u.calls_without_cost : std::max(u.calls_without_cost, calls);
  if (u.cost_usd) {
    it->cost_usd += *u.cost_usd;
    cost_ += *u.cost_usd;
  }
  it->calls_without_cost += unknown;
  uncosted_ += unknown;
  tokens_ += u.tokens();
  if (exhausted_) return false;
  exhausted_ = (budget_.cost_usd && cost_ >= *budget_.cost_usd) || (budget_.tokens && tokens_ >= *budget_.tokens);
  return exhausted_;
}

std::string spend_meter::describe() const {
  std::string text;
  if (budget_.cost_usd) text = format_usd(cost_) + " spent of the " + format_usd(*budget_.cost_usd) + " budget";
  if (budget_.tokens) {
    if (!text.empty()) text += ", ";
    text += std::to_string(tokens_) + " tokens of the " + std::to_string(*budget_.tokens) + " budget";
  }
  return text;
}

}  // namespace arun::engine
