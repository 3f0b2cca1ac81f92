#include "executor/fan_out_budget.hpp"

#include <algorithm>

namespace arun::io {

fan_out_budget::fan_out_budget(int throttle) : free_(std::max(1, throttle)) {}

std::size_t fan_out_budget::add(std::size_t jobs) {
  parts_.push_back({jobs});
  return parts_.size() - 1;
}

void fan_out_budget::finished(std::size_t number) {
  auto& p = parts_.at(number);
  if (p.unfinished == 0) return;
  --p.unfinished;
  if (static_cast<std::size_t>(p.held) > p.unfinished) {
    free_ += p.held - static_cast<int>(p.unfinished);
    p.held = static_cast<int>(p.unfinished);
  }
}

std::vector<fan_out_budget::grant> fan_out_budget::share_out() {
  std::vector<grant> grants;
  while (first_undrained_ < parts_.size() && parts_[first_undrained_].unfinished == 0) ++first_undrained_;
  for (std::size_t i = first_undrained_; i < parts_.size() && free_ > 0; ++i) {
    auto& p = parts_[i];
    const auto wanted = p.unfinished - std::min(p.unfinished, static_cast<std::size_t>(p.held));
    if (wanted == 0) continue;
    const int given = static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(free_)));
    p.held += given;
    free_ -= given;
    grants.push_back({i, p.held, !p.granted});
    p.granted = true;
  }
  return grants;
}

bool fan_out_budget::drained() const noexcept {
  return std::all_of(parts_.begin(), parts_.end(), [](const part_units& p) { return p.unfinished == 0; });
}

}  // namespace arun::io
