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
  // A sum with an unknown part is unknown: a partial figure would read as the whole cost.
  cost_usd = cost_usd && other.cost_usd ? std::optional<double>(*cost_usd + *other.cost_usd) : std::nullopt;
}

void add_usage(std::optional<agent_usage>& into, const std::optional<agent_usage>& more) {
  if (!more) return;
  if (!into)
    into = more;
  else
    into->add(*more);
}

}  // namespace arun
