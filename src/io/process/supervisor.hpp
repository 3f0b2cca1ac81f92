#pragma once
// The process supervisor: runs one child to completion on the caller's io_context while
// streaming its output, enforcing a deadline with SIGTERM -> grace -> SIGKILL on the whole
// process group, and never leaving a process or a zombie behind.

#include "process/output_capture.hpp"
#include "process/spawn.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

enum class stream_id { out, err };

struct process_spec {
  launch_request launch;
  std::optional<std::chrono::nanoseconds> timeout;  ///< none: no deadline
  std::chrono::nanoseconds kill_grace = std::chrono::seconds(5);
  capture_limits limits;
  /// Every output line as it arrives (newline removed, partial last line included).
  std::function<void(stream_id, std::string_view line, bool cut)> on_line;
  std::string label;  ///< what arun's log calls the child (the step instance id)
};

struct process_result {
  std::string launch_error;  ///< non-empty: the child never ran
  pid_t pid = -1;
  std::optional<int> exit_code;  ///< the child exited normally
  std::optional<int> signal;     ///< the child was killed by this signal
  bool timed_out = false;
  bool cancelled = false;
  captured_output out, err;
  std::chrono::nanoseconds duration{};  ///< from the call to the result, time queued included
  /// The part of `duration` the job waited in a cluster's queue before its step started
  /// (docs/scale-out.md, queue time); unset for a local child, which never waits.
  std::optional<std::chrono::nanoseconds> queued;
  // Escalation timing, measured for the soak tool.
  std::optional<std::chrono::nanoseconds> term_latency;  ///< deadline -> SIGTERM sent
  std::optional<std::chrono::nanoseconds> kill_latency;  ///< SIGTERM + grace -> SIGKILL sent
  bool output_abandoned = false;  ///< a process outside the group kept the pipes open
  bool group_survivors = false;   ///< members of the group outlived SIGKILL (stuck in the kernel)

  bool launched() const noexcept { return launch_error.empty(); }
  bool succeeded() const noexcept { return launched() && exit_code == 0 && !timed_out && !cancelled; }
};

/// Runs `spec` to completion. Never throws for child failures: a failed launch, non-zero
/// exit, signal or timeout is in the result. When the awaiting coroutine is cancelled
/// (any cancellation type), the group gets SIGTERM, then SIGKILL after `kill_grace`, and the
/// result says `cancelled`. The leftover process group is killed before the leader is reaped.
boost::asio::awaitable<process_result> run_process(process_spec spec);

/// Emergency stop: SIGKILL to the process group of every child being supervised, from any
/// thread. Their supervisions then finish normally (the leaders are seen to exit).
void kill_all_supervised_processes() noexcept;

}  // namespace arun::io
