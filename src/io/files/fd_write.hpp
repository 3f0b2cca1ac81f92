#pragma once
// Writing a whole buffer to a file descriptor: the journal, the snapshots and the event files
// each need "one write(2) in practice, retried on EINTR and short writes". A descriptor opened
// non-blocking (an events FIFO, open_output_file) may have to wait for its reader: that wait
// polls, and ends when arun gives up its writes (abandon_waiting_writes) at a stop. Also the two
// small helpers every user of raw descriptors needs: errno's words and closing on scope exit.

#include <unistd.h>

#include <cstring>
#include <string>
#include <string_view>

namespace arun::io {

/// The words for an errno value (strerror), as error messages quote them.
inline std::string errno_text(int err) { return std::strerror(err); }

/// Closes a descriptor on every way out.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

/// write(2) until all of `data` is written; 0, or the errno value of the failure (EIO when
/// the kernel took nothing; ECANCELED when it waited for a reader and arun gave up its writes).
int write_all(int fd, std::string_view data) noexcept;

/// From now on, a write_all waiting for a reader to make room (EAGAIN) stops waiting and
/// fails with ECANCELED, within 100 ms: arun is stopping and will not wait any longer.
/// Async-signal-safe.
void abandon_waiting_writes() noexcept;

}  // namespace arun::io
