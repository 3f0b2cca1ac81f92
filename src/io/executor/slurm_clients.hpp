#pragma once
// Slurm's client commands as arun runs them: sbatch, squeue and scancel as supervised local
// children (awaitable), and scancel without the event loop for the emergency stop.

#include "process/supervisor.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace arun::io {

/// Runs a Slurm client with `env` (the caller keeps it alive until the client has ended);
/// killed after 30 s.
boost::asio::awaitable<process_result> slurm_client(std::vector<std::string> argv, const std::vector<std::string>& env);

/// `scancel [--signal=SIGNAL --full] ID`; no signal: a plain cancel.
boost::asio::awaitable<process_result> scancel(std::string id, const char* signal, const std::vector<std::string>& env);

/// The jobs of the run named arun-<session_id>, every partition: "ID STATE REASON" lines.
boost::asio::awaitable<process_result> squeue(const std::string& session_id, const std::vector<std::string>& env);

/// A client without the event loop (the emergency stop): waited for at most `limit`, then
/// killed; its output is not read (scancel prints a line at most, which the pipe holds).
void run_blocking(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  std::chrono::milliseconds limit) noexcept;

/// Why a client failed, for messages: its exit and the end of what it printed.
std::string client_failure(const process_result& r);

}  // namespace arun::io
