#pragma once
// arun's own log (spdlog), where a soak test or a bug report looks: what arun itself did —
// children spawned (pid, program, directory) and how they ended, signals sent and how late a
// SIGKILL had to follow SIGTERM, output pipes given up on, journal fsyncs, resume decisions,
// signals received. Step output never goes here (that is logs/ and the events).
//
// Until open_arun_log, every call is a no-op: tests and `validate` log nothing anywhere.

#include <spdlog/logger.h>

#include <optional>
#include <string>
#include <string_view>

namespace arun::io {

/// The logger; a null one until open_arun_log.
spdlog::logger& arun_log();

/// `off`, `error`, `warn`, `info`, `debug`, `trace`; nullopt for anything else.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view text);

struct arun_log_options {
  spdlog::level::level_enum level = spdlog::level::info;
  std::string file;        ///< rotating at 10 MiB, 3 files kept, mode 0600; empty: none
  bool to_stderr = false;  ///< also on stderr
};

/// Opens the log; an error text (the file cannot be opened) or empty.
std::string open_arun_log(const arun_log_options& options);
/// Flushes and closes it; calls after are no-ops again.
void close_arun_log() noexcept;

}  // namespace arun::io
