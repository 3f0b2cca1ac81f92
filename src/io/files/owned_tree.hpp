#pragma once
// The directories arun makes and later removes (sessions, their worktrees and copies, cache
// shards), reached through a verified directory descriptor rather than by path: every entry
// below is opened or removed relative to it (`openat`, `unlinkat`, `O_NOFOLLOW`), so a
// symlink or a path swapped in by someone else never leads a removal or a read out of the
// directory (docs/security.md, "Paths arun deletes or follows").

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arun::io {

/// A regular file opened below an owned_dir (owned_dir::open_file), read in pieces: a
/// session's journal and events can be far larger than what a reader should hold at once.
class owned_file {
public:
  owned_file(owned_file&& other) noexcept;
  owned_file& operator=(owned_file&& other) noexcept;
  owned_file(const owned_file&) = delete;
  owned_file& operator=(const owned_file&) = delete;
  ~owned_file();

  /// Its size when it was opened (a live run's file may grow after).
  std::uint64_t size() const noexcept { return size_; }
  /// Up to `max` bytes from `offset` (fewer at the end); nullopt with `why` set on a read error.
  std::optional<std::string> read_at(std::uint64_t offset, std::size_t max, std::string& why) const;
  /// Calls `line(text, offset)` for each line from the start to the size at opening, without its
  /// '\n'; a last line without one is passed too (a live writer's torn line: the caller's
  /// parser refuses it). Lines longer than `max_line` are passed cut to it. False with `why`
  /// set on a read error.
  template <class Line>
  bool each_line(Line&& line, std::string& why, std::size_t max_line = 64u << 20) const;

private:
  friend class owned_dir;
  owned_file(int fd, std::uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string path_;
};

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

  /// The regular file `relative` below, opened as read_file opens it, to be read in pieces.
  std::optional<owned_file> open_file(std::string_view relative, std::string& why) const;

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

template <class Line>
bool owned_file::each_line(Line&& line, std::string& why, std::size_t max_line) const {
  std::string pending;
  std::uint64_t line_start = 0;  // where `pending` begins in the file
  bool cut = false;              // the line being gathered passed max_line: the rest of it is dropped
  for (std::uint64_t offset = 0; offset < size_;) {
    auto block = read_at(offset, static_cast<std::size_t>(std::min<std::uint64_t>(size_ - offset, 1u << 20)), why);
    if (!block) return false;
    if (block->empty()) break;  // shorter than at opening
    std::string_view rest(*block);
    std::uint64_t at = offset;  // where `rest` begins in the file
    offset += block->size();
    for (auto nl = rest.find('\n'); nl != std::string_view::npos; nl = rest.find('\n')) {
      if (!cut) pending.append(rest.substr(0, std::min(nl, max_line - pending.size())));
      line(std::string_view(pending), line_start);
      pending.clear();
      cut = false;
      rest.remove_prefix(nl + 1);
      at += nl + 1;
      line_start = at;
    }
    if (!cut) {
      const auto room = max_line - pending.size();
      pending.append(rest.substr(0, room));
      cut = rest.size() > room;
    }
  }
  if (!pending.empty()) line(std::string_view(pending), line_start);
  return true;
}

}  // namespace arun::io
