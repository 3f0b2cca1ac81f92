#include "files/temp_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace arun::io {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

private_temp_file::private_temp_file(std::string_view prefix, std::string_view content, const std::string& dir,
                                     bool keep_open) {
  const char* tmpdir = std::getenv("TMPDIR");
  // Absolute, because the file is used by children that run in other directories.
  std::error_code ec;
  auto base = std::filesystem::absolute(!dir.empty() ? dir.c_str() : tmpdir && *tmpdir ? tmpdir : "/tmp", ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / (std::string(prefix) + "XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);  // mkostemp creates the file 0600
  if (fd < 0) throw_errno("cannot create a temporary file in " + pattern);
  path_ = name.data();
  while (!content.empty()) {
    const auto n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path_.c_str());
      errno = err;
      throw_errno("cannot write " + path_);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  if (keep_open && ::lseek(fd, 0, SEEK_SET) == 0) {
    fd_ = fd;
    return;
  }
  ::close(fd);
}

private_temp_file::~private_temp_file() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

}  // namespace arun::io
