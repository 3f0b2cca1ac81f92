#pragma once
// The run's one concurrency limit (SPEC §6.5): a counting semaphore over an Asio channel.
// Only leaf work (a child process: a step attempt or a hook) holds a slot, so nested fan-out
// cannot deadlock even with one slot.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/channel.hpp>

#include <stop_token>

namespace arun::engine {

class concurrency_limiter {
public:
  concurrency_limiter(const boost::asio::any_io_executor& ex, int slots);

  /// Waits for a free slot, first come first served. Returns false, holding nothing, when
  /// `stop` is requested before a slot is free.
  boost::asio::awaitable<bool> acquire(std::stop_token stop);
  void release() noexcept;

  int in_use() const noexcept { return in_use_; }
  int peak() const noexcept { return peak_; }  ///< most slots ever held at once

private:
  void taken() noexcept;

  // A message in the channel's buffer is a slot in use; a full buffer makes senders wait.
  boost::asio::experimental::channel<void(boost::system::error_code)> slots_;
  int in_use_ = 0;
  int peak_ = 0;
};

/// Holds one slot for a scope.
class slot_lease {
public:
  explicit slot_lease(concurrency_limiter& l) noexcept : limiter_(&l) {}
  slot_lease(const slot_lease&) = delete;
  slot_lease& operator=(const slot_lease&) = delete;
  ~slot_lease() { limiter_->release(); }

private:
  concurrency_limiter* limiter_;
};

}  // namespace arun::engine
