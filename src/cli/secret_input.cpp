#include "secret_input.hpp"

#include "terminal_question.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace arun::cli {
namespace {

// Far beyond any key or token; a bound so that a wrong file cannot fill memory.
constexpr std::size_t max_secret_bytes = 1u << 20;

void drop_line_end(std::string& value) {
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
}

// One line from fd 0, a byte at a time: nothing past the line is taken from a shared stdin.
// False at the end of input before any byte.
bool read_line(std::string& line, std::string& error) {
  bool any = false;
  for (char c = 0;;) {
    const auto n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read stdin: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) return any;
    any = true;
    if (c == '\n') return true;
    if (line.size() >= max_secret_bytes) {
      error = "the value on stdin is longer than 1 MiB";
      return false;
    }
    line += c;
  }
}

}  // namespace

std::optional<std::string> read_secret_from_stdin(std::string_view name, std::string& error) {
  std::string value;
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  bool got = false;
  if (terminal) {
    const terminal_question question(STDIN_FILENO, false);  // the status line paused, echo off
    std::fprintf(stderr, "arun: value of secret %.*s (not shown): ", static_cast<int>(name.size()), name.data());
    std::fflush(stderr);
    got = read_line(value, error);
  } else {
    got = read_line(value, error);
  }
  if (!got) {
    if (error.empty())
      error = terminal ? "no value was typed" : "stdin is closed or empty, so the value cannot be read from it";
    return std::nullopt;
  }
  drop_line_end(value);
  if (value.empty()) {
    error = terminal ? "the value typed is empty" : "the line read from stdin is empty";
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> read_secret_file(const std::string& path, std::string& error, std::string& warning) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return std::nullopt;
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } const close_at_end{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "'" + path + "' is not a regular file";
    return std::nullopt;
  }
  if (st.st_size > static_cast<off_t>(max_secret_bytes)) {
    error = "'" + path + "' is larger than 1 MiB: not a secret value";
    return std::nullopt;
  }
  std::string value;
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read '" + path + "': " + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    value.append(buf, static_cast<std::size_t>(n));
    if (value.size() > max_secret_bytes) {
      error = "'" + path + "' is larger than 1 MiB: not a secret value";
      return std::nullopt;
    }
  }
  drop_line_end(value);
  if (value.empty()) {
    error = "'" + path + "' is empty";
    return std::nullopt;
  }
  // As ssh treats a private key: others able to read it have the secret already.
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    warning = "'" + path + "' has mode " + mode + ": group or others can read or change the secret; chmod 600 " + path;
  }
  return value;
}

}  // namespace arun::cli
