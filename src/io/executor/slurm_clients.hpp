#pragma once
// Slurm's client commands as arun runs them: sbatch, squeue and scancel as supervised local
// children (awaitable), and scancel without the event loop for the emergency stop.

#include "process/supervisor.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace arun::io {

/// Runs a Slurm client with `env` (the caller keeps it alive until the client has ended);
/// killed after 30 s.
boost::asio::awaitable<process_result> slurm_client(std::vector<std::string> argv, const std::vector<std::string>& env);


/// scancel for many jobs at once: the cancels asked within a few milliseconds of each other
/// go as one call per signal (a Ctrl-C over a fan-out of 10,000 pending array tasks is a few
/// scancel calls, not 10,000).
class scancel_batches {
public:
  /// `env` must outlive this object.
  explicit scancel_batches(const std::vector<std::string>& env) : env_(env) {}
  /// Cancels job `id`: with `signal` to every step of it, or plainly (null). Returns once the
  /// call that carried it has ended; a cancel asked after that goes in a later call, so one
  /// job's cancels keep their order.
  boost::asio::awaitable<void> cancel(std::string id, const char* signal);
  std::uint64_t calls() const noexcept { return calls_; }

  static constexpr std::chrono::milliseconds window{20};
  static constexpr std::size_t ids_per_call = 500;

private:
  struct asked {
    std::string id;
    std::string signal;
    boost::asio::steady_timer* done;
  };
  boost::asio::awaitable<void> send_after_window();

  const std::vector<std::string>& env_;
  std::vector<asked> queue_;
  bool send_pending_ = false;
  std::uint64_t calls_ = 0;
};

/// The jobs of the run named arun-<session_id>, every partition: "ID STATE REASON" lines.
boost::asio::awaitable<process_result> squeue(const std::string& session_id, const std::vector<std::string>& env);

/// A client without the event loop (the emergency stop): waited for at most `limit`, then
/// killed; its output is not read (scancel prints a line at most, which the pipe holds).
void run_blocking(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  std::chrono::milliseconds limit) noexcept;

/// Why a client failed, for messages: its exit and the end of what it printed.
std::string client_failure(const process_result& r);

}  // namespace arun::io
