#include "scheduler/limiter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace arun::engine {

namespace asio = boost::asio;

concurrency_limiter::concurrency_limiter(const asio::any_io_executor& ex, int slots)
    : slots_(ex, static_cast<std::size_t>(std::max(1, slots))) {}

void concurrency_limiter::taken() noexcept {
  ++in_use_;
  peak_ = std::max(peak_, in_use_);
}

asio::awaitable<bool> concurrency_limiter::acquire(std::stop_token stop) {
  if (stop.stop_requested()) co_return false;
  if (slots_.try_send(boost::system::error_code{})) {
    taken();
    co_return true;
  }
  asio::cancellation_signal cancel;
  std::stop_callback on_stop(stop, [&cancel] { cancel.emit(asio::cancellation_type::terminal); });
  auto [ec] = co_await slots_.async_send(boost::system::error_code{},
                                         asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
  if (ec) co_return false;
  taken();
  co_return true;
}

void concurrency_limiter::release() noexcept {
  --in_use_;
  // Taking one message out frees a slot and lets the oldest waiting sender in.
  slots_.try_receive([](boost::system::error_code) {});
}

}  // namespace arun::engine
