#include <arun/results.hpp>

namespace arun {

void agent_usage::add(const agent_usage& other) {
  if (provider.empty()) provider = other.provider;
  if (!other.model.empty()) model = other.model;  // the latest call's
  calls += other.calls;
  input += other.input;
  output += other.output;
  cache_read += other.cache_read;
  cache_write += other.cache_write;
  // The known part, with the calls of unknown cost counted beside it (a partial figure must
  // not read as the whole cost).
  if (other.cost_usd) cost_usd = cost_usd.value_or(0) + *other.cost_usd;
  calls_without_cost += other.calls_without_cost;
}

void add_usage(std::optional<agent_usage>& into, const std::optional<agent_usage>& more) {
  if (!more) return;
  if (!into)
    into = more;
  else
    into->add(*more);
}

}  // namespace arun
