#include "trust/inspected_file.hpp"

#include "cache/sha256.hpp"
#include "files/directory_trust.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace arun::io {
namespace fs = std::filesystem;
namespace {

std::string real_path_of(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  return real ? std::string(real.get()) : std::string();
}

// The directory holding the file and, when the name given is a link elsewhere, the directory of
// the name: someone who can write either can swap what arun reads.
std::string directory_problem(const std::string& dir) {
  struct stat st {};
  if (dir.empty() || ::stat(dir.c_str(), &st) != 0)
    return fmt::format("the directory {} cannot be checked: {}", dir, std::strerror(errno));
  return ownership_problem("the directory " + dir, st);
}

// Reads the regular file open at `fd` (at most max_bytes) into `f`.
void read_content(int fd, const struct stat& st, std::size_t max_bytes, inspected_file& f) {
  if (!S_ISREG(st.st_mode)) {
    f.error = fmt::format("{} is not a regular file", f.real_path);
    return;
  }
  char buffer[1 << 14];
  for (;;) {
    const auto n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      f.error = fmt::format("cannot read {}: {}", f.real_path, std::strerror(errno));
      return;
    }
    if (n == 0) break;
    f.content.append(buffer, static_cast<std::size_t>(n));
    if (f.content.size() > max_bytes) {
      f.error = fmt::format("{} is larger than {} KiB", f.real_path, max_bytes >> 10);
      return;
    }
  }
  f.sha256 = sha256_hex(f.content);
}

}  // namespace

std::string ownership_problem(const std::string& what, const struct stat& st) {
  const uid_t me = ::geteuid();
  const unsigned mode = st.st_mode & 07777;
  if (st.st_uid != me && st.st_uid != 0)
    return fmt::format("{} is owned by {} (you are {}), mode {:04o}", what, describe_owner(st.st_uid), describe_owner(me), mode);
  const bool group = (st.st_mode & S_IWGRP) != 0, others = (st.st_mode & S_IWOTH) != 0;
  if (group || others)
    return fmt::format("{} is writable by {} (owner {}, mode {:04o})", what,
                       group && others ? "group and others" : group ? "group" : "others", describe_owner(st.st_uid), mode);
  return {};
}

inspected_file inspect_file(const std::string& path, std::size_t max_bytes) {
  inspected_file f;
  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno != ENOENT && errno != ENOTDIR) {
      f.present = true;
      f.error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    }
    return f;
  }
  f.present = true;
  f.symlink = S_ISLNK(link.st_mode);
  f.real_path = real_path_of(path);
  if (f.real_path.empty()) {
    f.error = fmt::format("{}{} cannot be resolved: {}", path, f.symlink ? " (a symbolic link)" : "", std::strerror(errno));
    return f;
  }
  // O_NOFOLLOW: the real path has no link left, so one planted since is refused, not followed;
  // O_NONBLOCK: a FIFO cannot hang the open.
  const int fd = ::open(f.real_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    f.error = fmt::format("cannot open {}: {}", f.real_path, std::strerror(errno));
    return f;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) f.error = fmt::format("cannot read {}: {}", f.real_path, std::strerror(errno));
  else read_content(fd, st, max_bytes, f);
  ::close(fd);
  if (!f.error.empty()) return f;
  // The owner and mode of what was read (fstat of the open file), then of the directories.
  f.refusal = ownership_problem(f.real_path, st);
  const auto real_dir = fs::path(f.real_path).parent_path().string();
  if (f.refusal.empty()) f.refusal = directory_problem(real_dir);
  std::error_code ec;
  const auto named_dir = real_path_of(fs::absolute(path, ec).parent_path().string());
  if (f.refusal.empty() && named_dir != real_dir) f.refusal = directory_problem(named_dir);
  // A project file's settings apply where it is named: its relative paths, its sessions. A link
  // to another directory's file would lend that file's trust to a directory it was never
  // trusted for (a clone shipping `.arun.yaml -> ../trusted-project/.arun.yaml`).
  if (f.refusal.empty() && named_dir != real_dir)
    f.refusal = fmt::format("{} is a link to a file in another directory, {}: copy the file here to trust it", path,
                            real_dir);
  return f;
}

}  // namespace arun::io
