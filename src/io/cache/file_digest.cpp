#include "cache/file_digest.hpp"

#include "cache/sha256.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <string_view>

namespace arun::io {
namespace {

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

bool is_pattern(std::string_view segment) { return segment.find_first_of("*?[\\") != std::string_view::npos; }

// A glob's components: empty and `.` ones dropped, runs of `**` made one, and a trailing `**`
// given a `*` after it (every file below).
std::vector<std::string> segments_of(std::string_view glob) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= glob.size()) {
    auto end = glob.find('/', start);
    if (end == std::string_view::npos) end = glob.size();
    const auto part = glob.substr(start, end - start);
    if (!part.empty() && part != "." && !(part == "**" && !out.empty() && out.back() == "**")) out.emplace_back(part);
    start = end + 1;
  }
  if (!out.empty() && out.back() == "**") out.emplace_back("*");
  return out;
}

// Errors that mean "there is nothing here": a path that vanished, a dangling or looping link.
bool absent(int err) { return err == ENOENT || err == ENOTDIR || err == ELOOP; }

class walker {
public:
  walker(const std::vector<std::string>& segments, std::map<std::string, std::string>& found, std::string& error)
      : segments_(segments), found_(found), error_(error) {}

  // `disk`: the directory as opened; `shown`: as the digest names it.
  void walk(const std::string& disk, const std::string& shown, std::size_t index) {
    if (!error_.empty()) return;
    const auto& segment = segments_[index];
    const bool last = index + 1 == segments_.size();
    if (segment == "**") {
      walk(disk, shown, index + 1);  // zero directories
      // Only real, visible directories: a link back up would loop, a hidden one is tooling.
      for (const auto& name : names_in(disk))
        if (name.front() != '.' && kind_of(join(disk, name), false) == S_IFDIR)
          walk(join(disk, name), join(shown, name), index);
      return;
    }
    if (!is_pattern(segment)) {
      visit(disk, shown, segment, last, index);
      return;
    }
    for (const auto& name : names_in(disk))
      if (::fnmatch(segment.c_str(), name.c_str(), FNM_PERIOD) == 0) visit(disk, shown, name, last, index);
  }

private:
  void visit(const std::string& disk, const std::string& shown, const std::string& name, bool last,
             std::size_t index) {
    const auto path = join(disk, name);
    const auto kind = kind_of(path, true);
    if (last && kind == S_IFREG) found_.emplace(join(shown, name), path);
    if (!last && kind == S_IFDIR) walk(path, join(shown, name), index + 1);
  }

  // S_IFREG, S_IFDIR, another type, or 0 when nothing is there (or on an error, then set).
  mode_t kind_of(const std::string& path, bool follow) {
    struct stat st {};
    if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
      if (!absent(errno)) fail(path, errno);
      return 0;
    }
    return st.st_mode & S_IFMT;
  }

  // The entries of `dir` (no `.` or `..`); none when it is not there.
  std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (!absent(errno)) fail(dir, errno);
      return names;
    }
    // Read every name before descending: a deep tree then holds one directory open at a time.
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    return names;
  }

  void fail(const std::string& path, int err) {
    if (error_.empty()) error_ = "cannot read " + path + ": " + std::strerror(err);
  }

  const std::vector<std::string>& segments_;
  std::map<std::string, std::string>& found_;
  std::string& error_;
};

}  // namespace

std::string file_sha256(const std::string& path, std::string& error) {
  // O_NONBLOCK: a file swapped for a FIFO after the walk saw it must not hang the run.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return {};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "cannot read " + path + ": not a regular file";
    ::close(fd);
    return {};
  }
  sha256 h;
  std::string block(64 * 1024, '\0');
  for (;;) {
    const auto n = ::read(fd, block.data(), block.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      return {};
    }
    h.update(std::string_view(block.data(), static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return h.hex_digest();
}

std::string digest_files(const std::vector<std::string>& globs, const std::string& dir,
                         std::vector<std::string>& warnings, std::string& error) {
  try {
    std::string out;
    for (const auto& glob : globs) {
      const auto segments = segments_of(glob);
      const bool absolute = !glob.empty() && glob.front() == '/';
      std::map<std::string, std::string> found;  // shown path -> path on disk, sorted
      if (!segments.empty()) {
        walker w(segments, found, error);
        w.walk(absolute ? "/" : dir.empty() ? "." : dir, absolute ? "/" : "", 0);
      }
      if (!error.empty()) return {};
      if (found.empty()) {
        out += "glob " + glob + ": no match\n";
        warnings.push_back("cache.files '" + glob + "' matches no file in " + dir);
        continue;
      }
      out += "glob " + glob + "\n";
      for (const auto& [shown, path] : found) {
        const auto digest = file_sha256(path, error);
        if (!error.empty()) return {};
        out += shown + " " + digest + "\n";
      }
    }
    return out;
  } catch (const std::exception& e) {
    error = std::string("cannot read the files of cache.files: ") + e.what();
    return {};
  }
}

}  // namespace arun::io
