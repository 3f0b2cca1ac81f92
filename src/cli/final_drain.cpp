#include "final_drain.hpp"

#include "files/fd_write.hpp"
#include "output/arun_log.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <signal.h>

namespace arun::cli {
namespace asio = boost::asio;
using drain_clock = std::chrono::steady_clock;

namespace {

constexpr auto grace = std::chrono::seconds(2);          // docs/running.md: what a stop gives the writes
constexpr auto stuck_after = std::chrono::seconds(1);    // after the abandon: a write the kernel holds
constexpr auto look_every = std::chrono::milliseconds(20);

}  // namespace

void drain_at_end(asio::io_context& ctx, asio::signal_set& signals, io::background_writer& writer, int& stop_signal,
                  const std::function<void(int)>& emergency) {
  if (writer.drain_for(std::chrono::milliseconds(50))) return;
  io::arun_log().info("the run has ended; waiting for its files to be written");
  ctx.restart();
  std::optional<drain_clock::time_point> give_up;
  bool abandoned = false;
  if (stop_signal != 0) give_up = drain_clock::now() + grace;
  asio::steady_timer look(ctx);
  std::function<void()> check = [&] {
    if (writer.drain_for(std::chrono::milliseconds(0))) {
      signals.cancel();  // the loop runs out of work: drained
      return;
    }
    const auto now = drain_clock::now();
    if (give_up && now >= *give_up) {
      if (abandoned) {
        // A write the kernel holds (a frozen disk): no waiting can end it.
        std::fprintf(stderr, "arun: the run's files could not be written within %lld s of the stop: exiting without them\n",
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(grace + stuck_after).count()));
        std::fflush(stderr);
        std::_Exit(128 + stop_signal);
      }
      abandoned = true;
      io::arun_log().warn("stopping: writes still waiting for their reader are abandoned");
      io::abandon_waiting_writes();
      give_up = now + stuck_after;
    }
    look.expires_after(look_every);
    look.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) check();
    });
  };
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                             int sig) {
    if (ec) return;
    const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    if (stop_signal != 0) emergency(sig);  // does not return
    stop_signal = sig;
    io::arun_log().warn("{} received while the run's files were being written", name);
    std::fprintf(stderr, "arun: %s received: the run has ended; waiting 2 s more for its files to be written (again to exit now)\n",
                 name);
    give_up = drain_clock::now() + grace;
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  check();
  ctx.run();
}

}  // namespace arun::cli
