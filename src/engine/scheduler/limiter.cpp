#include "scheduler/limiter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace arun::engine {

namespace asio = boost::asio;

concurrency_limiter::concurrency_limiter(const asio::any_io_executor& ex, int slots)
    : executor_(ex), limit_(std::max(1, slots)) {}

int concurrency_limiter::slots_for(int weight) const noexcept { return std::clamp(weight, 1, limit_); }

void concurrency_limiter::take(int slots) noexcept {
  in_use_ += slots;
  peak_ = std::max(peak_, in_use_);
}

asio::awaitable<bool> concurrency_limiter::acquire(std::stop_token stop, int weight) {
  if (stop.stop_requested()) co_return false;
  const int slots = slots_for(weight);
  // Only a waiter not yet served goes first: one already granted holds its slots and merely
  // has not resumed.
  if (not_served_ == 0 && in_use_ + slots <= limit_) {
    take(slots);
    co_return true;
  }
  asio::steady_timer wake(executor_, asio::steady_timer::time_point::max());
  const auto me = queue_.insert(queue_.end(), waiter{slots, &wake});
  ++not_served_;
  asio::cancellation_signal cancel;
  std::stop_callback on_stop(stop, [&cancel] { cancel.emit(asio::cancellation_type::terminal); });
  // Both a grant and a stop end the wait with operation_aborted: `granted` tells them apart.
  co_await wake.async_wait(asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
  if (me->granted) {
    queue_.erase(me);
    co_return true;
  }
  queue_.erase(me);
  --not_served_;
  serve_waiters();  // the next one may fit where this one did not
  co_return false;
}

void concurrency_limiter::set_limit(int slots) noexcept {
  limit_ = std::max(1, slots);
  serve_waiters();
}

void concurrency_limiter::release(int weight) noexcept {
  in_use_ -= slots_for(weight);
  serve_waiters();
}

void concurrency_limiter::serve_waiters() noexcept {
  // Granted waiters stay queued until they resume; they hold their slots already.
  for (auto& w : queue_) {
    if (w.granted) continue;
    if (in_use_ + w.slots > limit_) return;
    take(w.slots);
    w.granted = true;
    --not_served_;
    w.wake->cancel();
  }
}

}  // namespace arun::engine
