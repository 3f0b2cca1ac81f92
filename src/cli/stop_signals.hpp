#pragma once
// SIGINT and SIGTERM between a session's creation and the run's own handling of them
// (asio::signal_set in execute_run) would kill arun with the default action and leave a
// session without its state. They wait, blocked, until the run handles them: a Ctrl-C that
// early stops the run as one later does (docs/reference/exit-codes.md).

namespace arun::cli {

/// Blocks SIGINT and SIGTERM in the calling thread (and threads it starts from now on).
void hold_stop_signals() noexcept;

/// Unblocks them: one that came while they were held is delivered now.
void release_stop_signals() noexcept;

}  // namespace arun::cli
