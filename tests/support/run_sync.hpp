#pragma once
// Runs one awaitable to completion on a private io_context (tests only).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <optional>

namespace arun::test {

template <typename T>
T run_sync(boost::asio::awaitable<T> task) {
  boost::asio::io_context ctx;
  std::optional<T> out;
  std::exception_ptr error;
  boost::asio::co_spawn(ctx, std::move(task), [&](std::exception_ptr e, T value) {
    error = e;
    out = std::move(value);
  });
  ctx.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

}  // namespace arun::test
