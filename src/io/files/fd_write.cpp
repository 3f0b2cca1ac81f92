#include "files/fd_write.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace arun::io {
namespace {

std::atomic<bool> abandoned{false};

}  // namespace

void abandon_waiting_writes() noexcept { abandoned.store(true); }

int write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A reader that takes its time (a FIFO's): wait for room, in short looks, so that a
      // stop can end the wait (docs/running.md, "Events").
      if (abandoned.load()) return ECANCELED;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    if (n <= 0) return n < 0 ? errno : EIO;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace arun::io
