#pragma once

namespace arun::io {

/// Start-up hygiene for a process that supervises many children: reopens fds 0-2 on
/// /dev/null when closed (so no pipe or file lands on them), ignores SIGPIPE (children get
/// the default back at spawn), and raises RLIMIT_NOFILE to its hard limit.
void prepare_supervisor_process() noexcept;

}  // namespace arun::io
