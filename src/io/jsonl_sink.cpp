#include "jsonl_sink.hpp"

#include "event_json.hpp"

#include <arun/value_format.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace arun::io {
namespace {

std::string safe_file_part(std::string_view s) {
  std::string out(s);
  for (auto& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) c = '_';
  }
  if (!out.empty() && out.front() == '.') out.front() = '_';
  return out;
}

}  // namespace

jsonl_open_result jsonl_event_sink::open(const std::string& path, bool truncate) {
  jsonl_open_result r;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0) | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    r.error = "cannot open events file '" + path + "': " + std::strerror(errno);
    return r;
  }
  r.sink.reset(new jsonl_event_sink(fd, path));
  return r;
}

jsonl_open_result jsonl_event_sink::open_audit(const std::string& dir, const std::string& recipe_name,
                                               const std::string& session_id) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    jsonl_open_result r;
    r.error = "cannot create audit directory '" + dir + "': " + ec.message();
    return r;
  }
  // Appended: a resumed session writes to the same file (its id is the session's).
  return open(audit_file_path(dir, recipe_name, session_id), false);
}

jsonl_event_sink::~jsonl_event_sink() { ::close(fd_); }

void jsonl_event_sink::on_event(const event& e) noexcept {
  if (failed_) return;
  int err = 0;
  try {
    std::string line = to_compact_json(event_to_json(e));
    line += '\n';
    err = write_all(line);
    if (err == 0) ++lines_;
  } catch (...) {
    err = ENOMEM;  // only allocation can fail above
  }
  if (err != 0) fail(err);
}

void jsonl_event_sink::fail(int err) noexcept {
  failed_ = true;
  try {
    error_ = "cannot write events file '" + path_ + "': " + std::strerror(err);
  } catch (...) {
    // error_ stays empty; failed_ still stops further writes.
  }
}

int jsonl_event_sink::write_all(const std::string& data) noexcept {
  const char* p = data.data();
  std::size_t left = data.size();
  // One write(2) per line in practice; the loop only matters for signals and full disks.
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

std::string audit_file_path(const std::string& dir, const std::string& recipe_name, const std::string& session_id) {
  std::string name = safe_file_part(recipe_name);
  if (name.empty()) name = "recipe";
  return (std::filesystem::path(dir) / (name + "-" + safe_file_part(session_id) + ".jsonl")).string();
}

}  // namespace arun::io
