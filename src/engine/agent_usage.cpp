#include <arun/results.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

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

std::string format_usd(double usd) {
  char text[64];
  if (usd >= 10 || usd <= 0 || !std::isfinite(usd)) {
    std::snprintf(text, sizeof text, "$%.2f", usd);
  } else if (usd >= 0.0001) {
    std::snprintf(text, sizeof text, "$%.4f", usd);
  } else {
    // Two significant digits: 0.000031 -> 6 decimals. Below a billionth, a billionth's digits.
    const int decimals = std::min(10, 1 - static_cast<int>(std::floor(std::log10(usd))));
    std::snprintf(text, sizeof text, "$%.*f", decimals, usd);
  }
  return text;
}

}  // namespace arun
