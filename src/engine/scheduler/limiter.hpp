#pragma once
// The run's one concurrency limit (docs/running.md, "Concurrency"): a counting semaphore with
// weights. Only leaf work (a child process: a step attempt or a hook) holds slots, so nested
// fan-out cannot deadlock even with one slot. A leaf that runs on this machine and asks for
// `cpus: N` holds N slots; waiters are served first come first served, so a heavy leaf is not
// starved by a stream of light ones overtaking it.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <list>
#include <stop_token>

namespace arun::engine {

class concurrency_limiter {
public:
  concurrency_limiter(const boost::asio::any_io_executor& ex, int slots);

  /// Waits until `weight` slots are free (a weight above the limit takes every slot) and
  /// every earlier waiter has been served. Returns false, holding nothing, when `stop` is
  /// requested first.
  boost::asio::awaitable<bool> acquire(std::stop_token stop, int weight = 1);
  /// Gives back what acquire(…, weight) took.
  void release(int weight = 1) noexcept;

  /// Changes the limit (at least 1). Lowering it takes nothing back: holders keep their slots
  /// and no waiter is served until the slots in use fall below the new limit.
  void set_limit(int slots) noexcept;

  /// The slots acquire(…, weight) takes: from 1 to the limit.
  int slots_for(int weight) const noexcept;
  int limit() const noexcept { return limit_; }
  int in_use() const noexcept { return in_use_; }
  int peak() const noexcept { return peak_; }  ///< most slots ever held at once

private:
  struct waiter {
    int slots;
    boost::asio::steady_timer* wake;  ///< cancelled when the slots are handed over
    bool granted = false;
  };
  void take(int slots) noexcept;
  /// Hands slots to waiters from the front of the queue while the first one fits.
  void serve_waiters() noexcept;

  boost::asio::any_io_executor executor_;
  int limit_;
  int in_use_ = 0;
  int peak_ = 0;
  std::list<waiter> queue_;
  int not_served_ = 0;  ///< waiters in queue_ not granted yet
};

/// Holds slots for a scope (none for weight 0).
class slot_lease {
public:
  explicit slot_lease(concurrency_limiter& l, int weight = 1) noexcept : limiter_(&l), weight_(weight) {}
  slot_lease(const slot_lease&) = delete;
  slot_lease& operator=(const slot_lease&) = delete;
  ~slot_lease() {
    if (weight_ > 0) limiter_->release(weight_);
  }

private:
  concurrency_limiter* limiter_;
  int weight_;
};

}  // namespace arun::engine
