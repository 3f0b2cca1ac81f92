#include "scheduler/task_group.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace arun::engine {

namespace asio = boost::asio;

task_group::task_group(const asio::any_io_executor& ex)
    : ex_(ex), all_done_(ex, asio::steady_timer::time_point::max()) {}

void task_group::spawn(asio::awaitable<void> task) {
  ++pending_;
  asio::co_spawn(ex_, std::move(task), [this](std::exception_ptr e) {
    if (e && !error_) error_ = e;
    if (--pending_ == 0) all_done_.cancel();
  });
}

asio::awaitable<void> task_group::join(std::function<void()> on_cancelled) {
  // The timer never expires: it is cancelled when the last task finishes.
  while (pending_ > 0) {
    co_await all_done_.async_wait(asio::as_tuple(asio::use_awaitable));
    // g++ 12 mis-compiles a co_await inside an if condition: bind the state first.
    const auto state = co_await asio::this_coro::cancellation_state;
    const bool cancelled = state.cancelled() != asio::cancellation_type::none;
    if (cancelled && on_cancelled) {
      on_cancelled();
      co_await asio::this_coro::reset_cancellation_state();
    }
  }
  if (error_) std::rethrow_exception(error_);
}

}  // namespace arun::engine
