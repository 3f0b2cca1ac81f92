#include "files/fd_write.hpp"

#include <unistd.h>

#include <cerrno>

namespace arun::io {

int write_all(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace arun::io
