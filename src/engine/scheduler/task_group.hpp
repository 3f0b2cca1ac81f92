#pragma once
// Structured concurrency for the scheduler: spawn coroutines on the run's executor and wait for
// all of them. Stopping is not done here: members watch a std::stop_token of their own.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstddef>
#include <exception>
#include <functional>

namespace arun::engine {

class task_group {
public:
  explicit task_group(const boost::asio::any_io_executor& ex);
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  /// Starts `task` now; it runs concurrently with the caller.
  void spawn(boost::asio::awaitable<void> task);

  /// Waits until every spawned task has finished, then rethrows the first exception one of
  /// them threw (an arun fault: expected failures are values). Must be awaited before the
  /// group is destroyed. When the awaiting coroutine is cancelled, `on_cancelled` is called
  /// (the tasks are not: they watch stop tokens) and the wait goes on; the caller must have
  /// turned off throw_if_cancelled.
  boost::asio::awaitable<void> join(std::function<void()> on_cancelled = {});

private:
  boost::asio::any_io_executor ex_;
  boost::asio::steady_timer all_done_;
  std::size_t pending_ = 0;
  std::exception_ptr error_;
};

}  // namespace arun::engine
