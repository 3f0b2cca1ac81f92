#include "files/private_files.hpp"

#include "files/fd_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace arun::io {
namespace fs = std::filesystem;

bool make_private_directories(const std::string& path, std::error_code& ec) {
  std::vector<fs::path> made;
  for (auto p = fs::path(path); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    made.push_back(p);
    if (p == p.parent_path()) break;
  }
  ec.clear();
  fs::create_directories(path, ec);
  if (ec) return false;
  for (const auto& p : made) fs::permissions(p, fs::perms::owner_all, fs::perm_options::replace, ec);
  ec.clear();
  return true;
}

bool write_private_file(const std::string& path, std::string_view text, mode_t mode) {
  // O_NOFOLLOW: a link planted in place of the file would have the text written where it leads.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return false;
  const int error = write_all(fd, text);
  if (::close(fd) != 0 || error != 0) {
    if (error != 0) errno = error;
    return false;
  }
  return true;
}

bool replace_private_file(const std::string& path, std::string_view text) {
  const auto temp = path + ".tmp";
  ::unlink(temp.c_str());  // whatever a crash (or someone else) left under the temp file's name
  if (write_private_file(temp, text) && ::rename(temp.c_str(), path.c_str()) == 0) return true;
  const int err = errno;
  ::unlink(temp.c_str());  // no half-written temp file left beside `path`
  errno = err;
  return false;
}

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string file_name_part(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) c = '_';
  }
  if (!out.empty() && out.front() == '.') out.front() = '_';
  return out;
}

}  // namespace arun::io
