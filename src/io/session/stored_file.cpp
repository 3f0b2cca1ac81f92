#include "session/stored_file.hpp"

#include "files/directory_trust.hpp"
#include "files/fd_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace arun::io {
namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

bool read_exactly(int fd, std::string& text, std::string& why) {
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::strerror(errno);
      return false;
    }
    if (n == 0) {
      why = "it ended after " + std::to_string(got) + " of its " + std::to_string(text.size()) + " bytes";
      return false;
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool plain_file_name(const std::string& name) noexcept {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::optional<std::string> read_stored_file(const std::string& dir, const std::string& name, std::uint64_t bytes,
                                            std::string& why) {
  if (!plain_file_name(name)) {
    why = "'" + name + "' is not a file name of the session's outputs/ directory";
    return std::nullopt;
  }
  fd_guard d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  struct stat st {};
  if (d.fd < 0 || ::fstat(d.fd, &st) != 0) {
    why = dir + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    why = dir + " is owned by uid " + std::to_string(st.st_uid) + " with mode " + mode_text(st.st_mode) +
          ": arun reads stored outputs only from a directory of its own user that others cannot write";
    return std::nullopt;
  }
  fd_guard f{::openat(d.fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0) {
    why = errno == ELOOP ? std::string("it is a symbolic link") : std::string(std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    why = std::string("it is ") + kind_of(st.st_mode);
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(st.st_size) != bytes) {
    why = "it holds " + std::to_string(st.st_size) + " bytes, not the " + std::to_string(bytes) + " stored";
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(bytes), '\0');
  if (!read_exactly(f.fd, text, why)) return std::nullopt;
  return text;
}

}  // namespace arun::io
