#include "executor/fan_out_budget.hpp"

#include <algorithm>

namespace arun::io {

fan_out_budget::fan_out_budget(int throttle) : free_(std::max(1, throttle)) {}

std::size_t fan_out_budget::add(std::size_t jobs) {
  parts_.push_back({jobs});
  return parts_.size() - 1;
}

std::size_t fan_out_budget::add_adopted(std::size_t jobs, std::size_t running) {
  part_units p{jobs};
  p.adopted = p.granted = true;  // in the queue already: never submitted
  p.held = static_cast<int>(std::min(running, jobs));
  free_ -= p.held;
  // Running past the throttle (a resume with a lower one): those units come back as they end,
  // and no other task of the part starts meanwhile.
  if (free_ < 0) p.excess = std::min(-free_, std::max(0, p.held - 1));
  if (jobs > 0 && p.held - p.excess == 0) {
    ++p.held;
    --free_;
  }
  parts_.push_back(p);
  return parts_.size() - 1;
}

void fan_out_budget::uncontrolled(std::size_t number) {
  auto& p = parts_.at(number);
  const int all = static_cast<int>(p.unfinished);
  p.excess = 0;
  if (p.held < all) {
    free_ -= all - p.held;
    p.held = all;
  }
}

void fan_out_budget::finished(std::size_t number) {
  auto& p = parts_.at(number);
  if (p.unfinished == 0) return;
  --p.unfinished;
  // A running job past the throttle ended: its unit goes back, the task limit stays.
  if (p.excess > 0) {
    --p.excess;
    --p.held;
    ++free_;
  }
  if (static_cast<std::size_t>(p.held) > p.unfinished) {
    free_ += p.held - static_cast<int>(p.unfinished);
    p.held = static_cast<int>(p.unfinished);
  }
}

void fan_out_budget::grant_to(std::size_t i, std::vector<grant>& grants) {
  auto& p = parts_[i];
  const auto wanted = p.unfinished - std::min(p.unfinished, static_cast<std::size_t>(p.held));
  if (wanted == 0 || free_ <= 0) return;
  const int given = static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(free_)));
  p.held += given;
  free_ -= given;
  grants.push_back({i, p.held - p.excess, !p.granted});
  p.granted = true;
}

std::vector<fan_out_budget::grant> fan_out_budget::share_out() {
  std::vector<grant> grants;
  while (first_undrained_ < parts_.size() && parts_[first_undrained_].unfinished == 0) ++first_undrained_;
  // The earlier arun's arrays first: their tasks have waited longest.
  for (std::size_t i = first_undrained_; i < parts_.size() && free_ > 0; ++i)
    if (parts_[i].adopted) grant_to(i, grants);
  for (std::size_t i = first_undrained_; i < parts_.size() && free_ > 0; ++i)
    if (!parts_[i].adopted) grant_to(i, grants);
  return grants;
}

bool fan_out_budget::drained() const noexcept {
  return std::all_of(parts_.begin(), parts_.end(), [](const part_units& p) { return p.unfinished == 0; });
}

}  // namespace arun::io
