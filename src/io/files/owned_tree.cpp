#include "files/owned_tree.hpp"

#include "files/fd_write.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

namespace arun::io {
namespace {

namespace fs = std::filesystem;

// Deeper than any tree arun makes; a guard against exhausting descriptors and the stack.
constexpr int max_tree_depth = 512;

// `a/b/c` as its components; nullopt when any is empty, `.` or `..`, or the path is absolute.
std::optional<std::vector<std::string>> components(std::string_view relative) {
  std::vector<std::string> out;
  if (relative.empty() || relative.front() == '/') return std::nullopt;
  while (true) {
    const auto slash = relative.find('/');
    const auto part = relative.substr(0, slash);
    if (part.empty() || part == "." || part == "..") return std::nullopt;
    out.emplace_back(part);
    if (slash == std::string_view::npos) return out;
    relative.remove_prefix(slash + 1);
  }
}

// Whether the directory open as `fd` is the root of a mount (a bind mount of the same file
// system too, which st_dev alone cannot tell).
bool mount_root(int fd) {
#ifdef STATX_ATTR_MOUNT_ROOT
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
#else
  (void)fd;
#endif
  return false;
}

// The subdirectory `name` of `dir`, never through a symlink; -1 with errno set otherwise
// (ELOOP or ENOTDIR for a symlink).
int open_subdir(int dir, const std::string& name) {
  return ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

void note(std::string& problems, const std::string& text) {
  if (problems.empty()) problems = text;  // the first says where to look; the rest are alike
}

// The names in the directory open as `fd`, from its start; nullopt (errno set) when it cannot be read.
std::optional<std::vector<std::string>> entry_names(int fd) {
  const int listing = ::dup(fd);
  DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (d == nullptr) {
    const int err = errno;
    if (listing >= 0) ::close(listing);
    errno = err;
    return std::nullopt;
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  ::closedir(d);
  return names;
}

void remove_entry(int dir, dev_t dev, const std::string& name, const std::string& shown, int depth, std::string& problems);

// Removes everything in the directory open as `fd`.
void clear_dir(int fd, dev_t dev, const std::string& shown, int depth, std::string& problems) {
  // Twice at most: an entry made while the first pass ran is removed by the second.
  for (int pass = 0; pass < 2; ++pass) {
    const auto names = entry_names(fd);
    if (!names) return note(problems, "cannot read " + shown + ": " + errno_text(errno));
    if (names->empty()) return;
    for (const auto& n : *names) remove_entry(fd, dev, n, shown + "/" + n, depth + 1, problems);
  }
}

void remove_entry(int dir, dev_t dev, const std::string& name, const std::string& shown, int depth, std::string& problems) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) note(problems, "cannot remove " + shown + ": " + errno_text(errno));
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    // A symlink goes as itself: unlinkat never follows one.
    if (::unlinkat(dir, name.c_str(), 0) != 0 && errno != ENOENT) note(problems, "cannot remove " + shown + ": " + errno_text(errno));
    return;
  }
  const int fd = open_subdir(dir, name);
  if (fd < 0) {
    const int err = errno;
    // Swapped for a symlink or a file since the lstat: that is what goes, unfollowed.
    if ((err == ELOOP || err == ENOTDIR) && ::unlinkat(dir, name.c_str(), 0) == 0) return;
    if (err != ENOENT) note(problems, "cannot remove " + shown + ": " + errno_text(err));
    return;
  }
  const fd_guard guard{fd};
  struct stat opened {};
  if (::fstat(fd, &opened) != 0) return note(problems, "cannot remove " + shown + ": " + errno_text(errno));
  if (opened.st_dev != dev || mount_root(fd))
    return note(problems, "left " + shown + " alone: it is a mount point (another file system is mounted there)");
  if (depth > max_tree_depth) return note(problems, "cannot remove " + shown + ": nested deeper than " + std::to_string(max_tree_depth) + " directories");
  clear_dir(fd, dev, shown, depth, problems);
  if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    note(problems, "cannot remove " + shown + ": " + errno_text(errno));
}

// Opens the directories on the way to the last component of `parts`: the fd of its parent,
// or -1 with `why` set (or `gone` when a component does not exist).
int walk_to_parent(int root, const std::string& root_path, const std::vector<std::string>& parts, bool& gone, std::string& why_not) {
  int fd = ::dup(root);
  if (fd < 0) {
    why_not = "cannot open " + root_path + ": " + errno_text(errno);
    return -1;
  }
  std::string shown = root_path;
  for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
    shown += "/" + parts[k];
    const int next = open_subdir(fd, parts[k]);
    const int err = errno;
    ::close(fd);
    if (next < 0) {
      gone = err == ENOENT;
      why_not = err == ELOOP || err == ENOTDIR ? shown + " is not a directory (a symlink, or a file): left alone"
                                                : "cannot open " + shown + ": " + errno_text(err);
      return -1;
    }
    fd = next;
  }
  return fd;
}

// What `st` is, when it is no entry arun makes in its own directories; "" for a directory or a
// file of the user's with no other name.
std::string foreign_kind(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) return "not a file or a directory (a FIFO, a socket or a device)";
  if (st.st_uid != ::geteuid()) return "owned by uid " + std::to_string(st.st_uid) + ", not by you";
  if (S_ISREG(st.st_mode) && st.st_nlink > 1) return "a file with another hard link";
  return {};
}

// The first planted entry below the directory open as `fd` (see owned_dir::planted_entry).
std::string find_planted(int fd, dev_t dev, const std::string& relative, const std::string& shown,
                         const std::vector<std::string>& opaque, int depth) {
  if (depth > max_tree_depth) return shown + " is nested deeper than " + std::to_string(max_tree_depth) + " directories";
  const auto names = entry_names(fd);
  if (!names) return "cannot read " + shown + ": " + errno_text(errno);
  for (const auto& name : *names) {
    const auto rel = relative.empty() ? name : relative + "/" + name;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      return "cannot examine " + shown + "/" + name + ": " + errno_text(errno);
    }
    if (auto kind = foreign_kind(st); !kind.empty()) return shown + "/" + name + " is " + kind;
    if (!S_ISDIR(st.st_mode) || std::find(opaque.begin(), opaque.end(), rel) != opaque.end()) continue;
    const int sub = open_subdir(fd, name);
    if (sub < 0) return shown + "/" + name + " is not a directory arun made (" + errno_text(errno) + ")";
    const fd_guard guard{sub};
    struct stat opened {};
    if (::fstat(sub, &opened) != 0) return "cannot examine " + shown + "/" + name + ": " + errno_text(errno);
    if (opened.st_dev != dev || mount_root(sub)) continue;  // a mount point holds nothing arun made
    if (auto kind = foreign_kind(opened); !kind.empty()) return shown + "/" + name + " is " + kind;
    if (auto found = find_planted(sub, dev, rel, shown + "/" + name, opaque, depth + 1); !found.empty()) return found;
  }
  return {};
}

}  // namespace

std::string owned_dir::planted_entry(const std::vector<std::string>& opaque) const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return "cannot examine " + path_ + ": " + errno_text(errno);
  return find_planted(fd_, st.st_dev, "", path_, opaque, 0);
}

std::variant<owned_dir, std::string> owned_dir::open(const std::string& path, link top) {
  const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (top == link::refuse ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP || (err == ENOTDIR && top == link::refuse)) {
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) return path + " is a symlink, not a directory arun made";
    }
    return "cannot open " + path + ": " + errno_text(err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return "cannot open " + path + ": " + errno_text(err);
  }
  if (st.st_uid != ::geteuid()) {
    ::close(fd);
    return path + " is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " + std::to_string(::geteuid()) + ")";
  }
  return owned_dir(fd, path);
}

owned_dir::owned_dir(owned_dir&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

owned_dir& owned_dir::operator=(owned_dir&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

owned_dir::~owned_dir() {
  if (fd_ >= 0) ::close(fd_);
}

std::variant<owned_dir, std::string> owned_dir::open_below(std::string_view relative) const {
  const auto parts = components(relative);
  if (!parts) return "'" + std::string(relative) + "' is not a plain relative path below " + path_;
  int fd = ::dup(fd_);
  if (fd < 0) return "cannot open " + path_ + ": " + errno_text(errno);
  std::string shown = path_;
  for (const auto& part : *parts) {
    shown += "/" + part;
    const int next = open_subdir(fd, part);
    const int err = errno;
    ::close(fd);
    if (next < 0)
      return err == ELOOP || err == ENOTDIR ? shown + " is not a directory (a symlink, or a file)"
                                             : "cannot open " + shown + ": " + errno_text(err);
    fd = next;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_uid != ::geteuid()) {
      ::close(fd);
      return shown + " is not owned by you";
    }
  }
  return owned_dir(fd, shown);
}

std::string owned_dir::remove(std::string_view relative) const {
  const auto parts = components(relative);
  if (!parts) return "refused to remove '" + std::string(relative) + "' below " + path_ + ": not a plain relative path";
  bool gone = false;
  std::string problems;
  const int parent = walk_to_parent(fd_, path_, *parts, gone, problems);
  if (parent < 0) return gone ? std::string() : problems;
  const fd_guard guard{parent};
  struct stat st {};
  if (::fstat(parent, &st) != 0) return "cannot remove " + path_ + "/" + std::string(relative) + ": " + errno_text(errno);
  remove_entry(parent, st.st_dev, parts->back(), path_ + "/" + std::string(relative), 0, problems);
  return problems;
}

bool owned_dir::has(std::string_view relative) const {
  const auto parts = components(relative);
  if (!parts) return false;
  bool gone = false;
  std::string ignored;
  const int parent = walk_to_parent(fd_, path_, *parts, gone, ignored);
  if (parent < 0) return false;
  const fd_guard guard{parent};
  struct stat st {};
  return ::fstatat(parent, parts->back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::optional<owned_file> owned_dir::open_file(std::string_view relative, std::string& why_not) const {
  const auto parts = components(relative);
  const std::string shown = path_ + "/" + std::string(relative);
  if (!parts) {
    why_not = "'" + std::string(relative) + "' is not a plain relative path below " + path_;
    return std::nullopt;
  }
  bool gone = false;
  const int parent = walk_to_parent(fd_, path_, *parts, gone, why_not);
  if (parent < 0) return std::nullopt;
  const fd_guard parent_guard{parent};
  const int fd = ::openat(parent, parts->back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    why_not = err == ENOENT ? "no such file: " + shown
              : err == ELOOP ? shown + " is a symlink, not a file arun wrote"
                             : "cannot read " + shown + ": " + errno_text(err);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    why_not = shown + " is not a regular file";
    return std::nullopt;
  }
  return owned_file(fd, static_cast<std::uint64_t>(st.st_size), shown);
}

std::optional<std::string> owned_dir::read_file(std::string_view relative, std::size_t max_bytes, std::string& why_not) const {
  auto file = open_file(relative, why_not);
  if (!file) return std::nullopt;
  const auto too_large = [&] {
    why_not = file->path_ + " is larger than " + std::to_string(max_bytes) + " bytes";
    return std::nullopt;
  };
  if (file->size() > max_bytes) return too_large();
  std::string text;
  while (text.size() <= max_bytes) {
    auto block = file->read_at(text.size(), 64 * 1024, why_not);
    if (!block) return std::nullopt;
    if (block->empty()) return text;
    text += *block;
  }
  return too_large();  // grew while read
}

owned_file::owned_file(owned_file&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), path_(std::move(other.path_)) {}

owned_file& owned_file::operator=(owned_file&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
  }
  return *this;
}

owned_file::~owned_file() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<std::string> owned_file::read_at(std::uint64_t offset, std::size_t max, std::string& why_not) const {
  std::string block(max, '\0');
  std::size_t got = 0;
  while (got < max) {
    const auto n = ::pread(fd_, block.data() + got, max - got, static_cast<off_t>(offset + got));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      why_not = "cannot read " + path_ + ": " + errno_text(errno);
      return std::nullopt;
    }
    got += static_cast<std::size_t>(n);
  }
  block.resize(got);
  return block;
}

std::optional<std::string> path_below(const std::string& root, const std::string& recorded, std::string& why_not) {
  const fs::path given(recorded);
  for (const auto& part : given)
    if (part == "." || part == "..") {
      why_not = recorded + " has a '" + part.string() + "' component";
      return std::nullopt;
    }
  if (!given.is_absolute()) {
    why_not = recorded + " is not an absolute path";
    return std::nullopt;
  }
  const auto normal = given.lexically_normal();
  auto below = [&normal](const fs::path& base) -> std::optional<std::string> {
    if (base.empty()) return std::nullopt;
    const auto rel = normal.lexically_relative(base.lexically_normal()).string();
    if (rel.empty() || rel == "." || rel == ".." || rel.starts_with("../")) return std::nullopt;
    return rel;
  };
  std::error_code ec;
  auto rel = below(fs::absolute(root, ec));
  if (!rel) {
    const auto real = fs::canonical(root, ec);
    if (!ec) rel = below(real);
  }
  if (!rel) {
    why_not = recorded + " is not inside " + root;
    return std::nullopt;
  }
  while (!rel->empty() && rel->back() == '/') rel->pop_back();
  // No symlink on the way: what lies below `root` by name lies below it on disk too.
  auto opened = owned_dir::open(root, owned_dir::link::follow);
  if (auto* error = std::get_if<std::string>(&opened)) {
    why_not = *error;
    return std::nullopt;
  }
  const auto parent = fs::path(*rel).parent_path().string();
  if (!parent.empty()) {
    auto walked = std::get<owned_dir>(opened).open_below(parent);
    if (auto* error = std::get_if<std::string>(&walked)) {
      // A missing directory on the way hides nothing; any other refusal is one.
      struct stat st {};
      if (::lstat((fs::path(root) / parent).c_str(), &st) == 0 || errno != ENOENT) {
        why_not = *error;
        return std::nullopt;
      }
    }
  }
  return rel;
}

}  // namespace arun::io
