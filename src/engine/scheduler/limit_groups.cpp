#include "scheduler/limit_groups.hpp"

#include <algorithm>
#include <utility>

namespace arun::engine {

namespace asio = boost::asio;

group_lease::group_lease(group_lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), group_(other.group_), epoch_(other.epoch_) {}

group_lease& group_lease::operator=(group_lease&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    group_ = other.group_;
    epoch_ = other.epoch_;
  }
  return *this;
}

void group_lease::finish(bool rate_limited) noexcept {
  if (auto* owner = std::exchange(owner_, nullptr)) owner->finish(group_, epoch_, rate_limited, true);
}

void group_lease::release() noexcept {
  if (auto* owner = std::exchange(owner_, nullptr)) owner->finish(group_, epoch_, false, false);
}

limit_groups::limit_groups(const asio::any_io_executor& ex, std::map<std::string, int, std::less<>> configured,
                           int ceiling, change_handler on_change)
    : executor_(ex), ceiling_(std::max(1, ceiling)), on_change_(std::move(on_change)) {
  for (const auto& [name, limit] : configured) configure_if_absent(name, limit);
}

limit_groups::state& limit_groups::group(std::string_view name) {
  auto it = groups_.find(name);
  if (it == groups_.end())
    it = groups_.emplace(std::string(name), std::make_unique<state>(state{std::string(name), std::nullopt,
                                                                          concurrency_limiter(executor_, ceiling_)}))
             .first;
  return *it->second;
}

bool limit_groups::configured(std::string_view name) const {
  const auto it = groups_.find(name);
  return it != groups_.end() && it->second->configured.has_value();
}

void limit_groups::configure_if_absent(std::string_view name, int limit) {
  auto& g = group(name);
  if (g.configured) return;
  g.configured = std::max(1, limit);
  g.limiter.set_limit(*g.configured);
}

limit_group_view limit_groups::view(const state& g) const noexcept {
  limit_group_view v;
  v.name = g.name;
  v.running = g.limiter.in_use();
  // An unconfigured group at the ceiling has no limit of its own to show.
  v.limit = g.configured || g.limiter.limit() < ceiling_ ? g.limiter.limit() : 0;
  v.configured = g.configured;
  return v;
}

limit_group_view limit_groups::view(std::string_view name) const {
  const auto it = groups_.find(name);
  if (it == groups_.end()) return limit_group_view{name};
  return view(*it->second);
}

asio::awaitable<bool> limit_groups::acquire(std::string_view name, group_lease& lease, std::stop_token stop) {
  if (name.empty()) co_return true;
  auto& g = group(name);
  const bool got = co_await g.limiter.acquire(stop);
  if (got) lease = group_lease(*this, g.name, g.epoch);
  co_return got;
}

void limit_groups::finish(std::string_view name, std::uint64_t epoch, bool rate_limited, bool judged) noexcept {
  auto& g = *groups_.find(name)->second;
  const int running = g.limiter.in_use();  // this child included
  const int before = g.limiter.limit();
  // Multiplicative decrease, once per round: half of what was running (never more than half
  // the limit), at least 1. Additive increase: one per clean completion, up to the cap.
  if (judged && rate_limited && epoch == g.epoch) {
    ++g.epoch;
    g.limiter.set_limit(std::max(1, std::min(before, running) / 2));
  } else if (judged && !rate_limited && epoch == g.epoch && before < cap(g)) {
    // Only calls started since the last decrease say the provider takes the lower limit.
    g.limiter.set_limit(before + 1);
  }
  g.limiter.release();
  const int after = g.limiter.limit();
  if (after != before && on_change_) {
    try {
      on_change_(view(g), after < before ? "rate limited" : "a clean completion");
    } catch (...) {
      // an event listener must not throw; a lost notice must not break the run
    }
  }
}

}  // namespace arun::engine
