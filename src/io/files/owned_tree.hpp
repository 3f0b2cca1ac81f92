#pragma once
// The directories arun makes and later removes (sessions, their worktrees and copies, cache
// shards), reached through a verified directory descriptor rather than by path: every entry
// below is opened or removed relative to it (`openat`, `unlinkat`, `O_NOFOLLOW`), so a
// symlink or a path swapped in by someone else never leads a removal or a read out of the
// directory (docs/security.md, "Paths arun deletes or follows").

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

class owned_dir {
public:
  /// Whether the path given to open() may itself be a symlink: a root the user named
  /// (--session-dir, --cache-dir) may be; a directory arun made below one may not.
  enum class link { refuse, follow };

  /// Opens `path` as a directory owned by the current (effective) user, without following a
  /// symlink unless `top` allows it for the last component. The error names the path and why
  /// (a symlink, not a directory, another owner).
  static std::variant<owned_dir, std::string> open(const std::string& path, link top = link::refuse);

  owned_dir(owned_dir&& other) noexcept;
  owned_dir& operator=(owned_dir&& other) noexcept;
  owned_dir(const owned_dir&) = delete;
  owned_dir& operator=(const owned_dir&) = delete;
  ~owned_dir();

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }

  /// The directory `relative` below this one (`a/b/c`: never empty, `.` or `..` components,
  /// never absolute), each component opened without following a symlink and owned by the
  /// current user. The error names the first component that is not such a directory.
  std::variant<owned_dir, std::string> open_below(std::string_view relative) const;

  /// Removes the entry `relative` below this directory and everything in it: a symlink is
  /// unlinked, never followed (at the top, on the way down to it, and at every level below);
  /// a directory on another file system (a mount point) is not descended into, and is left
  /// with what leads to it. "" when it is gone (or was never there); else what could not be
  /// removed and why (the rest is still removed).
  std::string remove(std::string_view relative) const;

  /// The entry `relative` below, as lstat sees it: whether it exists at all (a dangling symlink
  /// exists). A component on the way that is a symlink counts as missing.
  bool has(std::string_view relative) const;

  /// The regular file `relative` below, read whole: opened with O_NOFOLLOW | O_NONBLOCK (a
  /// FIFO or a device never blocks the reader), refused unless fstat says a regular file of at
  /// most `max_bytes`. nullopt with `why` set otherwise (ENOENT: `why` says "no such file").
  std::optional<std::string> read_file(std::string_view relative, std::size_t max_bytes, std::string& why) const;

  /// The first entry below this directory that arun never makes in a directory of its own: a
  /// symbolic link, a FIFO, socket or device, an entry another user owns, or a file with a
  /// second hard link — each would lead what arun writes there by name out of the directory,
  /// or into a file it did not make. The directories `opaque` names (plain relative paths: a
  /// copy of the user's tree, which may hold anything) are checked themselves, not entered. A
  /// mount point is not entered either. "" when there is none; else the entry and what it is.
  std::string planted_entry(const std::vector<std::string>& opaque = {}) const;

private:
  owned_dir(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

/// `recorded` as a path relative to `root` when it names an entry strictly below `root`
/// (compared lexically with `root` as given and with its real path), with no `.` or `..`
/// component, and no symlink on the way from `root` to it (the entry itself may be one: it is
/// what a removal would unlink). nullopt with `why` set otherwise.
std::optional<std::string> path_below(const std::string& root, const std::string& recorded, std::string& why);

}  // namespace arun::io
