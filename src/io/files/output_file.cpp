#include "files/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

namespace arun::io {

output_file open_output_file(const std::string& path, int flags, mode_t mode, std::chrono::milliseconds reader_wait) {
  output_file f;
  const auto until = std::chrono::steady_clock::now() + reader_wait;
  for (;;) {
    f.fd = ::open(path.c_str(), flags | O_NONBLOCK, mode);
    if (f.fd >= 0) break;
    if (errno == EINTR) continue;
    // ENXIO: a FIFO that no process has open for reading (yet: its reader may be starting).
    if (errno != ENXIO || std::chrono::steady_clock::now() >= until) {
      f.error = errno;
      return f;
    }
    // A Ctrl-C ends the wait at once, also while arun holds the stop signals (it is setting a
    // run up: src/cli/stop_signals.hpp) and they wait, pending, instead of arriving.
    sigset_t pending;
    if (::sigpending(&pending) == 0 && (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1)) {
      f.error = EINTR;
      return f;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  struct stat st {};
  f.regular = ::fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode);
  // A regular file is written as ever; anything else stays non-blocking: its writes wait for
  // the reader in polls that a stop can end.
  if (f.regular) ::fcntl(f.fd, F_SETFL, ::fcntl(f.fd, F_GETFL) & ~O_NONBLOCK);
  return f;
}

std::string output_file_error(int error) {
  if (error == ENXIO)
    return "it is a FIFO that nobody reads (no reader opened it within " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(fifo_reader_wait).count()) +
           " s): start its reader first";
  if (error == EINTR) return "it is a FIFO that nobody reads, and arun was stopped while waiting for its reader";
  return std::strerror(error);
}

}  // namespace arun::io
