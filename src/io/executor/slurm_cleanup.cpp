#include "executor/slurm_cleanup.hpp"

#include "executor/slurm_job_dirs.hpp"
#include "files/directory_trust.hpp"

#include "executor/slurm_script.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace arun::io {
namespace {

constexpr int max_job_dir_depth = 32;  // arun makes two levels; deeper is what a step left, bounded

std::string failure(const std::string& what, int err) { return "cannot remove " + what + ": " + std::strerror(err); }

std::string remove_below(int parent_fd, const std::string& name, int depth) {
  const int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {};
    // Not a directory (a file, or a link, perhaps swapped in meanwhile): the entry itself goes.
    if (errno == ENOTDIR || errno == ELOOP) {
      if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return {};
    }
    return failure(name, errno);
  }
  if (depth > max_job_dir_depth) {
    ::close(fd);
    return failure(name, ELOOP);
  }
  DIR* listing = ::fdopendir(fd);
  if (!listing) {
    const int err = errno;
    ::close(fd);
    return failure(name, err);
  }
  std::vector<std::string> entries;
  while (const auto* entry = ::readdir(listing)) {
    const std::string_view n = entry->d_name;
    if (n != "." && n != "..") entries.emplace_back(n);
  }
  std::string problem;
  const int dir_fd = ::dirfd(listing);
  for (const auto& entry : entries) {
    struct stat st {};
    if (::fstatat(dir_fd, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (auto p = remove_below(dir_fd, entry, depth + 1); !p.empty() && problem.empty()) problem = name + "/" + p;
    } else if (::unlinkat(dir_fd, entry.c_str(), 0) != 0 && errno != ENOENT && problem.empty()) {
      problem = failure(name + "/" + entry, errno);
    }
  }
  ::closedir(listing);
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && problem.empty())
    problem = failure(name, errno);
  return problem;
}

}  // namespace

std::string remove_tree_at(int parent_fd, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return "cannot remove '" + name + "': not a name in its directory";
  return remove_below(parent_fd, name, 0);
}

std::string remove_slurm_job_directory(const std::string& dir) {
  const auto slash = dir.rfind('/');
  if (slash == std::string::npos || slash == 0) return "cannot remove " + dir + ": not a job directory";
  const auto parent = dir.substr(0, slash);
  // The session's directory itself is arun's (0700): never a link.
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? std::string() : failure(dir, errno);
  auto problem = remove_tree_at(fd, dir.substr(slash + 1));
  ::close(fd);
  return problem.empty() ? problem : problem + " (in " + parent + ")";
}

std::string remove_slurm_session_files(const std::string& shared_dir, std::string_view session_id,
                                       const std::string& record) {
  const auto name = recorded_jobs_dir_name(session_id, record);
  if (name.empty()) return "left the session's job files alone: " + record + " names no job directory";
  // Where the run put them: the user's subdirectory when the shared directory is a sticky one.
  const auto jobs = per_user_path(shared_dir, ::geteuid()) + "/jobs";
  const auto session_dir = jobs + "/" + name;
  const int jobs_fd = ::open(jobs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (jobs_fd < 0) return errno == ENOENT ? std::string() : failure(session_dir, errno);
  struct stat st {};
  std::string problem;
  if (::fstatat(jobs_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) problem = failure(session_dir, errno);
  } else if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    // Only what arun made for this user's session: a link or another user's directory stays.
    problem = fmt::format("left {} alone: it is {} owned by uid {} (mode {:04o}), not a private directory arun made for you",
                          session_dir, S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "a file",
                          st.st_uid, st.st_mode & 07777);
  } else if (auto p = remove_tree_at(jobs_fd, name); !p.empty()) {
    problem = p + " (in " + jobs + ")";
  }
  ::close(jobs_fd);
  return problem;
}

}  // namespace arun::io
