#pragma once
// Opening a file arun is told to write to (`--events FILE`, `--audit-dir`) without letting it
// hold arun: FILE may be a FIFO (or another file that is not a regular one) whose reader is
// not there, or stops reading. The open never blocks: a FIFO without a reader is waited for
// a few seconds, then refused; such a file keeps O_NONBLOCK, so a write that waits for its
// reader polls and can be abandoned (fd_write.hpp) when arun stops (docs/running.md, "Events").

#include <chrono>
#include <string>

#include <sys/types.h>

namespace arun::io {

struct output_file {
  int fd = -1;
  int error = 0;         ///< errno of the failure; ENXIO: a FIFO nobody opened for reading
  bool regular = false;  ///< a regular file (written as any); else a FIFO, socket, device
};

/// How long a FIFO's reader is waited for when the file is opened.
inline constexpr std::chrono::milliseconds fifo_reader_wait{5000};

/// open(2) of `path` with `flags` (O_WRONLY, O_CREAT... O_NONBLOCK is added) and `mode`. A FIFO
/// without a reader is opened again every 50 ms for `reader_wait`; SIGINT and SIGTERM end
/// the wait as they end arun then.
output_file open_output_file(const std::string& path, int flags, mode_t mode,
                             std::chrono::milliseconds reader_wait = fifo_reader_wait);

/// The words for a failed open_output_file: strerror, or for ENXIO what to do.
std::string output_file_error(int error);

}  // namespace arun::io
